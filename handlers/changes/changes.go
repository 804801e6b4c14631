package changes

import (
	"context"
	"errors"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/views"
)

// Changes are the use cases of a message's changes (service.Service).
type Changes interface {
	EditMessage(ctx context.Context, in chat.Place, m chat.Message, editor, content string) (chat.Message, error)
	DeleteMessage(ctx context.Context, in chat.Place, m chat.Message, by string) error
	React(ctx context.Context, in chat.Place, id chat.ID, who chat.UserRef, emoji string, add bool) error
}

// Messages reads a message to show it (store.Store).
type Messages interface {
	Message(ctx context.Context, in chat.Place, id chat.ID) (chat.Message, error)
}

// Core is what the module uses of the HTTP core (handlers.Server): the
// conversation a request names, the marking of what it shows as read,
// the rendering of pages.
type Core interface {
	ConversationOf(c echo.Context) (handlers.Conversation, error)
	InConversation(c echo.Context, place chat.Place, msgs ...chat.Message)
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
}

// routes are the routes of a message's changes.
type routes struct {
	core Core
	db   Messages
	app  Changes
}

// Register lists the routes of a message's page and changes, in rooms and
// DMs alike.
func Register(r handlers.Routes, core Core, db Messages, app Changes) {
	s := routes{core, db, app}
	for _, base := range []struct {
		path string
		mw   []echo.MiddlewareFunc
	}{{"/rooms/:room", nil}, {"/dm/:logins", []echo.MiddlewareFunc{handlers.CanonicalDM}}} {
		p := base.path + "/messages/:id"
		r.Auth.GET(p, s.showMessage, base.mw...)
		r.Auth.GET(p+"/quote", s.quoteMessage, base.mw...)
		r.Auth.GET(p+"/source", s.messageSource, base.mw...)
		r.Auth.POST(p+"/edit", s.editMessage, append(base.mw, r.Sending)...)
		r.Auth.GET(p+"/delete", s.askDelete, base.mw...)
		r.Auth.POST(p+"/delete", s.deleteMessage, base.mw...)
		r.Auth.POST(p+"/reactions", s.react, append(base.mw, r.Sending)...)
	}
}

// memberConversation is the conversation the request names, for one of
// its members only: anyone else gets ErrNotFound, as a message of a
// conversation one does not take part in is none of one's business.
func (s routes) memberConversation(c echo.Context) (handlers.Conversation, error) {
	cv, err := s.core.ConversationOf(c)
	if err != nil {
		return handlers.Conversation{}, err
	}
	if me := handlers.MustUser(c); !cv.Member(me.Login) {
		return handlers.Conversation{}, chat.ErrNotFound
	}
	s.core.InConversation(c, cv.Place)
	return cv, nil
}

// messageID is the :id of the path, or ErrNotFound.
func messageID(c echo.Context) (chat.ID, error) {
	id, err := chat.ParseMessageID(c.Param("id"))
	if err != nil {
		return chat.ID{}, chat.ErrNotFound
	}
	return id, nil
}

// messageOf reads the conversation and the message the request names.
func (s routes) messageOf(c echo.Context) (handlers.Conversation, chat.Message, error) {
	cv, err := s.memberConversation(c)
	if err != nil {
		return handlers.Conversation{}, chat.Message{}, err
	}
	id, err := messageID(c)
	if err != nil {
		return handlers.Conversation{}, chat.Message{}, err
	}
	m, err := s.db.Message(c.Request().Context(), cv.Place, id)
	return cv, m, err
}

// showMessage is the page of one message: edit (for its author), react
// with any text, delete.
func (s routes) showMessage(c echo.Context) error {
	cv, m, err := s.messageOf(c)
	if err != nil {
		return err
	}
	f := views.Form{Values: map[string]string{"content": m.Content}, Errors: map[string]string{}}
	return s.renderMessagePage(c, http.StatusOK, cv, m, f)
}

// quoteMessage answers "Reply with quote" for app.js: the Markdown it
// puts in the composer (see chat.Quote), as plain text.
func (s routes) quoteMessage(c echo.Context) error {
	_, m, err := s.messageOf(c)
	if err != nil {
		return err
	}
	return c.String(http.StatusOK, handlers.QuoteOf(c, m))
}

// messageSource answers edit in place (static/tools.js): the stored
// Markdown of one's own message, as plain text, for the editor to start
// from. Another's message is refused as its edit is (403).
func (s routes) messageSource(c echo.Context) error {
	_, m, err := s.messageOf(c)
	if err != nil {
		return err
	}
	if err := chat.CanEdit(m, handlers.MustUser(c).Login); err != nil {
		return err
	}
	return c.String(http.StatusOK, m.Content)
}

func (s routes) renderMessagePage(c echo.Context, status int, cv handlers.Conversation, m chat.Message, f views.Form) error {
	me := handlers.MustUser(c)
	v := views.MessageView{Message: m, Title: cv.Title, Form: f,
		CanEdit:   chat.CanEdit(m, me.Login) == nil,
		CanDelete: chat.CanDelete(m, me.Login, service.Moderates(cv.Place, me.Login)) == nil}
	s.core.InConversation(c, cv.Place, m)
	return s.core.Render(c, status, views.Page{Title: "Message in " + cv.Title, Room: cv.ID}, views.MessagePage(v))
}

// changed answers a change that was made: nothing for htmx and app.js
// (the live stream shows it), the message in its conversation otherwise.
func changed(c echo.Context, to string) error {
	if handlers.IsHTMX(c) {
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// editMessage replaces the text of one's own message.
func (s routes) editMessage(c echo.Context) error {
	cv, m, err := s.messageOf(c)
	if err != nil {
		return err
	}
	content := c.FormValue("content")
	edited, err := s.app.EditMessage(c.Request().Context(), cv.Place, m, handlers.MustUser(c).Login, content)
	if errors.Is(err, chat.ErrInvalid) {
		f := handlers.WithErrors(views.Form{Values: map[string]string{"content": content}, Errors: map[string]string{}}, err)
		return s.renderMessagePage(c, http.StatusUnprocessableEntity, cv, m, f)
	}
	if err != nil {
		return err
	}
	return changed(c, views.Permalink(edited))
}

// askDelete is the page that asks before a message is deleted, for a
// browser without JavaScript (app.js asks in the message's menu): the
// message and a form that deletes it. Asking changes nothing; someone
// who may not delete the message is refused (403), not asked.
func (s routes) askDelete(c echo.Context) error {
	cv, m, err := s.messageOf(c)
	if err != nil {
		return err
	}
	me := handlers.MustUser(c).Login
	if err := chat.CanDelete(m, me, service.Moderates(cv.Place, me)); err != nil {
		return err
	}
	v := views.MessageView{Message: m, Title: cv.Title, CanDelete: true}
	s.core.InConversation(c, cv.Place, m)
	return s.core.Render(c, http.StatusOK, views.Page{Title: "Delete this message?", Room: cv.ID}, views.ConfirmDeleteMessage(v))
}

// deleteMessage deletes a message: one's own, or any in a room one
// moderates. It asks first (issue 39): a post without confirm=yes, from
// a menu's Delete without JavaScript (app.js asks on the page itself,
// and sends it as htmx does), deletes nothing and goes to askDelete's
// page (POST, 303, GET: a reload of the question posts nothing again).
func (s routes) deleteMessage(c echo.Context) error {
	cv, m, err := s.messageOf(c)
	if err != nil {
		return err
	}
	me := handlers.MustUser(c).Login
	if !handlers.IsHTMX(c) && c.FormValue("confirm") != "yes" {
		if err := chat.CanDelete(m, me, service.Moderates(cv.Place, me)); err != nil {
			return err
		}
		return c.Redirect(http.StatusSeeOther, views.MessageURL(m)+"/delete")
	}
	if err := s.app.DeleteMessage(c.Request().Context(), cv.Place, m, me); err != nil {
		return err
	}
	return changed(c, cv.URL+"#latest")
}

// react adds the caller's reaction (field emoji) to a message, or takes
// it back (field add=0): the form says which, as the page knows the
// caller's own reactions. Adding is refused for an id that names no
// message (404) and beyond chat.MaxReactions different reactions (422),
// by the store's two reads at once; taking back reads nothing.
func (s routes) react(c echo.Context) error {
	cv, err := s.memberConversation(c)
	if err != nil {
		return err
	}
	id, err := messageID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	emoji, add := c.FormValue("emoji"), c.FormValue("add") != "0"
	err = s.app.React(ctx, cv.Place, id, handlers.MustUser(c), emoji, add)
	if errors.Is(err, chat.ErrInvalid) && !handlers.IsHTMX(c) {
		m, rerr := s.db.Message(ctx, cv.Place, id)
		if rerr != nil {
			return rerr
		}
		f := handlers.WithErrors(views.Form{Values: map[string]string{"emoji": emoji}, Errors: map[string]string{}}, err)
		return s.renderMessagePage(c, http.StatusUnprocessableEntity, cv, m, f)
	}
	if err != nil {
		return err
	}
	return changed(c, views.Permalink(chat.Message{ID: id, Room: cv.ID}))
}

package changes

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/views"
)

// routes are the routes of a message's changes, on the core's server.
type routes struct{ *handlers.Server }

// Register lists the routes of a message's page and changes, in rooms and
// DMs alike.
func Register(srv *handlers.Server, r handlers.Routes) {
	s := routes{srv}
	for _, base := range []struct {
		path string
		mw   []echo.MiddlewareFunc
	}{{"/rooms/:room", nil}, {"/dm/:logins", []echo.MiddlewareFunc{handlers.CanonicalDM}}} {
		p := base.path + "/messages/:id"
		r.Auth.GET(p, s.showMessage, base.mw...)
		r.Auth.GET(p+"/quote", s.quoteMessage, base.mw...)
		r.Auth.POST(p+"/edit", s.editMessage, append(base.mw, r.Sending)...)
		r.Auth.POST(p+"/delete", s.deleteMessage, base.mw...)
		r.Auth.POST(p+"/reactions", s.react, append(base.mw, r.Sending)...)
	}
}

// memberConversation is the conversation the request names, for one of
// its members only: anyone else gets ErrNotFound, as a message of a
// conversation one does not take part in is none of one's business.
func (s routes) memberConversation(c echo.Context) (handlers.Conversation, error) {
	cv, err := s.ConversationOf(c)
	if err != nil {
		return handlers.Conversation{}, err
	}
	if me := handlers.MustUser(c); !cv.Member(me.Login) {
		return handlers.Conversation{}, chat.ErrNotFound
	}
	s.InConversation(c, cv.Place)
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
	m, err := s.DB().Message(c.Request().Context(), cv.Place, id)
	return cv, m, err
}

// moderates says whether login moderates cv: its creator or an admin of
// a room (a DM has no moderator).
func moderates(cv handlers.Conversation, login string) bool {
	return cv.Room != nil && cv.Room.IsAdmin(login)
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

func (s routes) renderMessagePage(c echo.Context, status int, cv handlers.Conversation, m chat.Message, f views.Form) error {
	me := handlers.MustUser(c)
	v := views.MessageView{Message: m, Title: cv.Title, Form: f,
		CanEdit:   chat.CanEdit(m, me.Login) == nil,
		CanDelete: chat.CanDelete(m, me.Login, moderates(cv, me.Login)) == nil}
	s.InConversation(c, cv.Place, m)
	return s.Render(c, status, views.Page{Title: "Message in " + cv.Title, Room: cv.ID}, views.MessagePage(v))
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
	if err := chat.CanEdit(m, handlers.MustUser(c).Login); err != nil {
		return err
	}
	ctx := c.Request().Context()
	content := c.FormValue("content")
	var (
		edited chat.Message
		conv   chat.Conversation
	)
	err = s.change(ctx, cv, live.KindEdit, m.ID, func(id chat.ID) ([]byte, error) {
		if edited, err = s.DB().EditMessage(ctx, cv.Place, m, content, id); err != nil {
			return nil, err
		}
		// Before the event, as for a post: a mention's badge is there
		// when the page that shows it asks. The members either text
		// mentions are looked up (a room's are not all read).
		if conv, err = s.DB().Mentionable(ctx, cv.Place, m.Content, edited.Content); err != nil {
			s.Log().Warn("mentioned members", "conversation", cv.ID, "err", err)
		}
		if err := s.DB().UpdateMentions(ctx, conv, m, edited); err != nil {
			s.Log().Warn("update mentions", "conversation", conv.ID, "err", err)
		}
		return s.RenderString(views.WithMembers(ctx, conv.Members), views.EditedBody(edited))
	})
	if errors.Is(err, chat.ErrInvalid) {
		f := handlers.WithErrors(views.Form{Values: map[string]string{"content": content}, Errors: map[string]string{}}, err)
		return s.renderMessagePage(c, http.StatusUnprocessableEntity, cv, m, f)
	}
	if err != nil {
		return err
	}
	// The search index follows, off the request's path: the old text's
	// terms out, the new one's in (searches check the stored text anyway).
	s.Indexer().Reindex(conv, &m, &edited)
	return changed(c, views.Permalink(edited))
}

// deleteMessage deletes a message: one's own, or any in a room one created.
func (s routes) deleteMessage(c echo.Context) error {
	cv, m, err := s.messageOf(c)
	if err != nil {
		return err
	}
	if err := chat.CanDelete(m, handlers.MustUser(c).Login, moderates(cv, handlers.MustUser(c).Login)); err != nil {
		return err
	}
	ctx := c.Request().Context()
	err = s.change(ctx, cv, live.KindDelete, m.ID, func(id chat.ID) ([]byte, error) {
		if err := s.DB().DeleteMessage(ctx, cv.Place, m, id); err != nil {
			return nil, err
		}
		return []byte(views.MessageID(m)), nil
	})
	if err != nil {
		return err
	}
	if err := s.DB().ForgetMessage(ctx, cv.Place, m); err != nil {
		s.Log().Warn("clean up a deleted message", "conversation", cv.ID, "err", err)
	}
	s.Indexer().Reindex(cv.Place.Conversation(), &m, nil)
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
	if conv := cv.Place.Conversation(); id.Time().Before(conv.Since) || id.Time().After(time.Now().Add(time.Hour)) {
		return chat.ErrNotFound
	}
	me := handlers.MustUser(c)
	ctx := c.Request().Context()
	emoji, add := c.FormValue("emoji"), c.FormValue("add") != "0"
	err = s.change(ctx, cv, live.KindReaction, id, func(change chat.ID) ([]byte, error) {
		ch, err := s.DB().React(ctx, cv.Place, id, me, emoji, add, change)
		if err != nil {
			return nil, err
		}
		return handlers.ReactionJSON(ch)
	})
	if errors.Is(err, chat.ErrInvalid) && !handlers.IsHTMX(c) {
		m, rerr := s.DB().Message(ctx, cv.Place, id)
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

// change makes a change (kind) of the message target in cv: it takes the
// change's id from the live engine's sequencer, so the change is
// published in id order with the conversation's messages on this
// instance, runs apply with that id (which writes it and returns its
// event's data), and publishes it. An error of apply is returned, and
// nothing is published.
func (s routes) change(ctx context.Context, cv handlers.Conversation, kind string, target chat.ID, apply func(id chat.ID) ([]byte, error)) error {
	sl, err := s.Live().Reserve(cv.ID, func() (chat.Message, error) {
		return chat.Message{ID: s.DB().NewChangeID(), Room: cv.ID}, nil
	})
	if err != nil {
		return err
	}
	sl.Kind, sl.Target = kind, target
	html, err := apply(sl.Msg.ID)
	if err != nil {
		s.Live().Finish(sl, false)
		return err
	}
	sl.HTML = html
	s.Live().Finish(sl, true)
	return nil
}

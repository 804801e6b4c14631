// This file owns what people do to a message once it is posted, in a room
// or a DM alike: its page (the way to edit it without JavaScript), edits,
// deletes and reactions. Each change takes an id of its own from the live
// engine's sequencer, as a post does, so every page sees the messages and
// the changes of an instance in one order, and a page that resumes gets
// the changes it missed (see live.Source.ChangesAfter).
package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/views"
)

// memberConversation is the conversation the request names, for one of
// its members only: anyone else gets ErrNotFound, as a message of a
// conversation one does not take part in is none of one's business.
func (s *Server) memberConversation(c echo.Context) (conversation, error) {
	cv, err := s.ConversationOf(c)
	if err != nil {
		return conversation{}, err
	}
	if me := MustUser(c); !cv.member(me.Login) {
		return conversation{}, store.ErrNotFound
	}
	inConversation(c, cv.Place.Conversation())
	return cv, nil
}

// messageID is the :id of the path, or ErrNotFound.
func messageID(c echo.Context) (gocql.UUID, error) {
	id, err := store.ParseMessageID(c.Param("id"))
	if err != nil {
		return gocql.UUID{}, store.ErrNotFound
	}
	return id, nil
}

// messageOf reads the conversation and the message the request names.
func (s *Server) messageOf(c echo.Context) (conversation, store.Message, error) {
	cv, err := s.memberConversation(c)
	if err != nil {
		return conversation{}, store.Message{}, err
	}
	id, err := messageID(c)
	if err != nil {
		return conversation{}, store.Message{}, err
	}
	m, err := s.db.Message(c.Request().Context(), cv.Place, id)
	return cv, m, err
}

// creatorOf is the login of cv's creator: a room's, "" for a DM.
func creatorOf(cv conversation) string {
	if cv.Room != nil {
		return cv.Room.CreatorLogin
	}
	return ""
}

// showMessage is the page of one message: edit (for its author), react
// with any text, delete.
func (s *Server) showMessage(c echo.Context) error {
	cv, m, err := s.messageOf(c)
	if err != nil {
		return err
	}
	f := views.Form{Values: map[string]string{"content": m.Content}, Errors: map[string]string{}}
	return s.renderMessagePage(c, http.StatusOK, cv, m, f)
}

func (s *Server) renderMessagePage(c echo.Context, status int, cv conversation, m store.Message, f views.Form) error {
	me := MustUser(c)
	v := views.MessageView{Message: m, Title: cv.Title, Form: f,
		CanEdit:   store.CanEdit(m, me.Login) == nil,
		CanDelete: store.CanDelete(m, me.Login, creatorOf(cv)) == nil}
	c.SetRequest(c.Request().WithContext(views.WithMembers(c.Request().Context(), cv.Place.Conversation().Members)))
	return s.Render(c, status, views.Page{Title: "Message in " + cv.Title, Room: cv.ID}, views.MessagePage(v))
}

// changed answers a change that was made: nothing for htmx and app.js
// (the live stream shows it), the message in its conversation otherwise.
func changed(c echo.Context, to string) error {
	if IsHTMX(c) {
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// editMessage replaces the text of one's own message.
func (s *Server) editMessage(c echo.Context) error {
	cv, m, err := s.messageOf(c)
	if err != nil {
		return err
	}
	if err := store.CanEdit(m, MustUser(c).Login); err != nil {
		return err
	}
	ctx := c.Request().Context()
	content := c.FormValue("content")
	conv := cv.Place.Conversation()
	var edited store.Message
	err = s.change(ctx, cv, live.KindEdit, m.ID, func(id gocql.UUID) ([]byte, error) {
		if edited, err = s.db.EditMessage(ctx, cv.Place, m, content, id); err != nil {
			return nil, err
		}
		// Before the event, as for a post: a mention's badge is there
		// when the page that shows it asks.
		if err := s.db.UpdateMentions(ctx, conv, m, edited); err != nil {
			s.log.Warn("update mentions", "conversation", conv.ID, "err", err)
		}
		return renderString(views.WithMembers(ctx, conv.Members), views.EditedBody(edited))
	})
	if errors.Is(err, store.ErrInvalid) {
		f := WithErrors(views.Form{Values: map[string]string{"content": content}, Errors: map[string]string{}}, err)
		return s.renderMessagePage(c, http.StatusUnprocessableEntity, cv, m, f)
	}
	if err != nil {
		return err
	}
	return changed(c, views.Permalink(edited))
}

// deleteMessage deletes a message: one's own, or any in a room one created.
func (s *Server) deleteMessage(c echo.Context) error {
	cv, m, err := s.messageOf(c)
	if err != nil {
		return err
	}
	if err := store.CanDelete(m, MustUser(c).Login, creatorOf(cv)); err != nil {
		return err
	}
	ctx := c.Request().Context()
	err = s.change(ctx, cv, live.KindDelete, m.ID, func(id gocql.UUID) ([]byte, error) {
		if err := s.db.DeleteMessage(ctx, cv.Place, m, id); err != nil {
			return nil, err
		}
		return []byte(views.MessageID(m)), nil
	})
	if err != nil {
		return err
	}
	if err := s.db.ForgetMessage(ctx, cv.Place, m); err != nil {
		s.log.Warn("clean up a deleted message", "conversation", cv.ID, "err", err)
	}
	return changed(c, cv.URL+"#latest")
}

// reactionEvent is a reaction's live event, for app.js: who added (or
// took back) which reaction to which message, with the change's id, so
// that the page keeps the newest action of each person.
type reactionEvent struct {
	Message string `json:"message"`
	Emoji   string `json:"emoji"`
	Login   string `json:"login"`
	Name    string `json:"name"`
	Added   bool   `json:"added"`
	Change  string `json:"change"`
}

// reactionJSON is ch as its live event's data.
func reactionJSON(ch store.Change) ([]byte, error) {
	name := ch.Reactor.Name()
	if name == "" {
		name = ch.Reactor.Login
	}
	return json.Marshal(reactionEvent{Message: ch.Message.String(), Emoji: ch.Emoji, Login: ch.Reactor.Login,
		Name: name, Added: ch.Added, Change: ch.ID.String()})
}

// react adds the caller's reaction (field emoji) to a message, or takes
// it back (field add=0): the form says which, as the page knows the
// caller's own reactions, so nothing is read first. The message is not
// read either: a reaction to an id that names no message is never shown.
func (s *Server) react(c echo.Context) error {
	cv, err := s.memberConversation(c)
	if err != nil {
		return err
	}
	id, err := messageID(c)
	if err != nil {
		return err
	}
	if conv := cv.Place.Conversation(); id.Time().Before(conv.Since) || id.Time().After(time.Now().Add(time.Hour)) {
		return store.ErrNotFound
	}
	me := MustUser(c)
	ctx := c.Request().Context()
	emoji, add := c.FormValue("emoji"), c.FormValue("add") != "0"
	err = s.change(ctx, cv, live.KindReaction, id, func(change gocql.UUID) ([]byte, error) {
		ch, err := s.db.React(ctx, cv.Place, id, me, emoji, add, change)
		if err != nil {
			return nil, err
		}
		return reactionJSON(ch)
	})
	if errors.Is(err, store.ErrInvalid) && !IsHTMX(c) {
		m, rerr := s.db.Message(ctx, cv.Place, id)
		if rerr != nil {
			return rerr
		}
		f := WithErrors(views.Form{Values: map[string]string{"emoji": emoji}, Errors: map[string]string{}}, err)
		return s.renderMessagePage(c, http.StatusUnprocessableEntity, cv, m, f)
	}
	if err != nil {
		return err
	}
	return changed(c, views.Permalink(store.Message{ID: id, Room: cv.ID}))
}

// change makes a change (kind) of the message target in cv: it takes the
// change's id from the live engine's sequencer, so the change is
// published in id order with the conversation's messages on this
// instance, runs apply with that id (which writes it and returns its
// event's data), and publishes it. An error of apply is returned, and
// nothing is published.
func (s *Server) change(ctx context.Context, cv conversation, kind string, target gocql.UUID, apply func(id gocql.UUID) ([]byte, error)) error {
	sl, err := s.live.Reserve(cv.ID, func() (store.Message, error) {
		return store.Message{ID: s.db.NewChangeID(), Room: cv.ID}, nil
	})
	if err != nil {
		return err
	}
	sl.Kind, sl.Target = kind, target
	html, err := apply(sl.Msg.ID)
	if err != nil {
		s.live.Finish(sl, false)
		return err
	}
	sl.HTML = html
	s.live.Finish(sl, true)
	return nil
}

// renderChange renders a change of in as its live event carried it, for
// a replay.
func renderChange(ctx context.Context, in store.Place, ch store.Change) ([]byte, error) {
	switch ch.Kind {
	case store.ChangeEdit:
		m := store.Message{ID: ch.Message, Room: in.Conversation().ID, Content: ch.Content, Edited: ch.ID}
		return renderString(views.WithMembers(ctx, in.Conversation().Members), views.EditedBody(m))
	case store.ChangeDelete:
		return []byte(views.MessageID(store.Message{ID: ch.Message})), nil
	}
	return reactionJSON(ch)
}

// quoted is what "Reply with quote" puts in the composer without
// JavaScript (?quote=<id>): the message quoted, its author and a link to
// it; "" when the page was opened without one, or for a message that is
// not there.
func (s *Server) quoted(c echo.Context, cv conversation) string {
	id, err := store.ParseMessageID(c.QueryParam("quote"))
	if err != nil {
		return ""
	}
	m, err := s.db.Message(c.Request().Context(), cv.Place, id)
	if err != nil {
		return ""
	}
	link := c.Scheme() + "://" + c.Request().Host + views.Permalink(m)
	return "> " + strings.ReplaceAll(m.Content, "\n", "\n> ") + "\n\n— " + m.Author.Name() + " " + link + "\n\n"
}

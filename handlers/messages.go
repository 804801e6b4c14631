// This file owns posting messages and reading older pages of a
// conversation, a room or a DM alike.

package handlers

import (
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/fence"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
)

var zeroID chat.ID

// olderLink is the link to the page before msgs in the conversation at
// base, or "" at its start.
func olderLink(base string, msgs []chat.Message, more bool) string {
	if !more || len(msgs) == 0 {
		return ""
	}
	return base + "/messages?before=" + url.QueryEscape(msgs[0].ID.String())
}

func (s *Server) postMessage(c echo.Context) error {
	// A text post in a room holds a pass from before its check of the room
	// to the end of its writes, so it writes with no read (live/fence);
	// an upload, which may take minutes, does not hold one up that long
	// and is checked with a read after its write instead.
	var pass *fence.Pass
	if room := c.Param("room"); room != "" && !web.IsMultipart(c.Request()) {
		pass = s.app.EnterRoom(room)
		defer pass.Leave()
	}
	cv, err := s.ConversationOf(c)
	if err != nil {
		return err
	}
	me := MustUser(c)
	s.InConversation(c, cv.Place)
	if web.IsMultipart(c.Request()) {
		if s.uploadFiles == nil {
			return echo.NewHTTPError(http.StatusUnsupportedMediaType, "This server takes no files.")
		}
		return s.uploadFiles(c, cv.Place,
			func(f views.Form) error { return s.composerError(c, cv, f) },
			cv.URL+"#latest")
	}
	content := c.FormValue("content")
	clientID := c.FormValue("client_id")
	if !ValidClientID(clientID) {
		return echo.NewHTTPError(http.StatusBadRequest, "This message form is broken. Reload the page and send again.")
	}
	// html is the message as the live streams got it, when this request
	// stored it.
	m, html, err := s.app.PostText(c.Request().Context(), service.TextPost{In: cv.Place, Author: me, Content: content, ClientID: clientID, Pass: pass})
	if errors.Is(err, chat.ErrInvalid) {
		return s.composerError(c, cv, WithErrors(views.Form{Values: map[string]string{"content": content, "client_id": clientID}, Errors: map[string]string{}}, err))
	}
	if err != nil {
		return err
	}
	if IsHTMX(c) {
		// The new message and the next client_id; the live stream brings
		// the same element (same id) and the page keeps only one.
		item := views.MessageItem(m)
		if html != nil {
			// Rendered once, for the streams and for this answer.
			item = templ.Raw(string(html))
		}
		return s.RenderRaw(c, http.StatusOK, views.Posted(item, NewClientID()))
	}
	return c.Redirect(http.StatusSeeOther, cv.URL+"#latest")
}

// NewClientID is a composer's one-time id: 128 random bits.
func NewClientID() string {
	return rand.Text()
}

// ValidClientID accepts what newClientID makes, and "" from clients that
// send none (they get no protection against a repeated send).
func ValidClientID(id string) bool {
	if len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// composerError answers a post the composer must show again, with f's
// errors: the error slot alone for htmx (the text box keeps what was
// typed), the room page otherwise.
func (s *Server) composerError(c echo.Context, cv conversation, f views.Form) error {
	if IsHTMX(c) {
		return s.RenderRaw(c, http.StatusUnprocessableEntity, views.ComposerRejected(f))
	}
	v := s.roomView(c, cv)
	v.Composer, v.Now = f, time.Now()
	var err error
	if v.Messages, v.PageKey, v.Older, v.After, err = s.latest(c, cv); err != nil {
		return err
	}
	return s.Render(c, http.StatusUnprocessableEntity, views.Page{Title: cv.Title, Room: cv.ID, Composer: true}, views.RoomPage(v))
}

// latest is the newest page of a conversation, the link to the page before, and
// where the page's live stream starts. The page shows only what lies below
// the room's bound here (see sequencer), so a message still being written
// when the page was read is not lost; its stream starts just below the
// bound lowered to the other instances' watermarks, which lag their
// heartbeats. A message of this instance between the two is shown at once
// (one's own post, on the next page) and comes again on the stream; the
// page keeps one of each id (app.js). The messages come from the
// conversation's newest page kept in memory when it is there (s.newest),
// served only while the conversation's version (change count and the
// marks of posts) is the one it was read with. The bound is taken before
// that version is read: every message below it was counted or marked, so
// it is on the page, and the stream brings the rest.
func (s *Server) latest(c echo.Context, cv conversation) (msgs []chat.Message, key uint64, older, after string, err error) {
	bound, shown := s.live.Bound(cv.ID), s.live.ShownBound(cv.ID)
	msgs, more, key, err := s.newest.Latest(c.Request().Context(), cv.Place)
	if err != nil {
		return nil, 0, "", "", err
	}
	older = olderLink(cv.URL, msgs, more)
	page := msgs[:0]
	for _, m := range msgs {
		if s.live.BeforeBound(m.ID, shown) {
			page = append(page, m)
		}
	}
	// The messages shown are a prefix of the read's (ids are ordered):
	// the key and their number name them.
	return page, key, older, chat.MaxIDAt(chat.TimeOfTicks(bound - 1)).String(), nil
}

func (s *Server) olderMessages(c echo.Context) error {
	before, err := chat.ParseMessageID(c.QueryParam("before"))
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The link to older messages is malformed.")
	}
	cv, err := s.ConversationOf(c)
	if err != nil {
		return err
	}
	if !cv.Member(MustUser(c).Login) {
		return chat.ErrNotParticipant
	}
	msgs, more, err := s.db.MessagesBefore(c.Request().Context(), cv.Place, before, messagesPerPage)
	if err != nil {
		return err
	}
	s.InConversation(c, cv.Place, msgs...)
	v := views.OlderMessages{Room: cv.ID, URL: cv.URL, Title: cv.Title, DM: cv.DM != nil, Messages: msgs, Older: olderLink(cv.URL, msgs, more), Now: time.Now()}
	if IsHTMX(c) {
		return s.RenderRaw(c, http.StatusOK, views.OlderPage(v))
	}
	return s.Render(c, http.StatusOK, views.Page{Title: cv.Title + ": older messages", Room: cv.ID}, views.OlderView(v))
}

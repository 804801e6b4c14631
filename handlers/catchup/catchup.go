package catchup

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
)

// Conversations finds the conversation a request names, as who asks sees
// it (handlers.Server).
type Conversations interface {
	ConversationOf(c echo.Context) (handlers.Conversation, error)
}

// Markers moves read markers (service.Service).
type Markers interface {
	MarkConversationRead(ctx context.Context, login, conversation string) error
	MarkAllRead(ctx context.Context, login string) (int, error)
}

// routes are the catch-up routes over what they use.
type routes struct {
	conversations Conversations
	markers       Markers
}

// Register lists the catch-up routes.
func Register(r handlers.Routes, convs Conversations, m Markers) {
	s := routes{conversations: convs, markers: m}
	r.Auth.POST("/read", s.markAllRead)
	r.Auth.POST("/rooms/:room/read-all", s.markConversationRead)
	r.Auth.POST("/dm/:logins/read-all", s.markConversationRead, handlers.CanonicalDM)
}

// markConversationRead answers POST <conversation>/read-all: the reader
// has caught up with the whole conversation, whatever the page showed.
func (s routes) markConversationRead(c echo.Context) error {
	cv, err := s.conversations.ConversationOf(c)
	if err != nil {
		return err
	}
	me := handlers.MustUser(c)
	if !cv.Member(me.Login) {
		return chat.ErrNotParticipant
	}
	if err := s.markers.MarkConversationRead(c.Request().Context(), me.Login, cv.ID); err != nil {
		return err
	}
	return done(c, cv.URL+"#latest")
}

// markAllRead answers POST /read: every room and DM of the reader is read
// up to its newest message. The browser goes back where it was.
func (s routes) markAllRead(c echo.Context) error {
	if _, err := s.markers.MarkAllRead(c.Request().Context(), handlers.MustUser(c).Login); err != nil {
		return err
	}
	return done(c, back(c))
}

// done answers a catch-up: 204 to htmx (the page refreshes its sidebar),
// 303 to where a plain form goes next.
func done(c echo.Context, next string) error {
	if handlers.IsHTMX(c) {
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, next)
}

// back is the page the form was on (the Referer's path, which the
// same-origin referrer policy sends) without its one-time notice, or
// home: never another site.
func back(c echo.Context) string {
	ref, err := url.Parse(c.Request().Referer())
	if err != nil || ref.Host != c.Request().Host || !strings.HasPrefix(ref.Path, "/") || strings.HasPrefix(ref.Path, "//") {
		return "/"
	}
	q := ref.Query()
	q.Del("notice")
	if len(q) > 0 {
		return ref.Path + "?" + q.Encode()
	}
	return ref.Path
}

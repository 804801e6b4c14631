package notifications

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
)

// routes are the notification settings' routes.
type routes struct {
	conversations Conversations
	levels        Levels
}

// Conversations gives the conversation a request names
// (handlers.Server).
type Conversations interface {
	ConversationOf(c echo.Context) (handlers.Conversation, error)
}

// Levels keeps a person's notification level of a conversation
// (service.Service: it tells the sidebars of the change).
type Levels interface {
	SetLevel(ctx context.Context, login, conversation string, level chat.Level) error
}

// Register lists the routes that set a conversation's level.
func Register(r handlers.Routes, conversations Conversations, levels Levels) {
	s := routes{conversations, levels}
	r.Auth.POST("/rooms/:room/notifications", s.setLevel)
	r.Auth.POST("/dm/:logins/notifications", s.setLevel, handlers.CanonicalDM)
}

// setLevel sets the caller's level in the conversation of the path, for
// its members only (anyone else gets 404, as for its messages), and goes
// back to the conversation. A level that is none of the three is a 422
// that changes nothing.
func (s routes) setLevel(c echo.Context) error {
	cv, err := s.conversations.ConversationOf(c)
	if err != nil {
		return err
	}
	me := handlers.MustUser(c)
	if !cv.Member(me.Login) {
		return chat.ErrNotFound
	}
	level, err := chat.ParseLevel(c.FormValue("level"))
	if err != nil {
		var ve chat.ValidationError
		if errors.As(err, &ve) {
			return echo.NewHTTPError(http.StatusUnprocessableEntity, ve["level"])
		}
		return err
	}
	if err := s.levels.SetLevel(c.Request().Context(), me.Login, cv.ID, level); err != nil {
		return err
	}
	return handlers.Redirect(c, cv.URL+"?notice=level-saved")
}

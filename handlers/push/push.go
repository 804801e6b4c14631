package push

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/push"
)

// Sender is Web Push as it stands (handlers.Server): nil until the
// VAPID keys are set up once the database answers.
type Sender interface {
	Push() *push.Sender
}

// Subscriptions keeps each person's push subscriptions (store.Store).
type Subscriptions interface {
	SavePushSubscription(ctx context.Context, login string, sub chat.PushSubscription) error
	DeletePushSubscription(ctx context.Context, login, endpoint string) error
}

// routes are the push routes.
type routes struct {
	static fs.FS
	sender Sender
	db     Subscriptions
}

// Register lists the push routes; static holds sw.js.
func Register(r handlers.Routes, static fs.FS, sender Sender, db Subscriptions) {
	s := routes{static, sender, db}
	r.Public.GET("/sw.js", s.serviceWorker)
	r.Auth.GET("/push/key", s.key)
	r.Auth.POST("/push/subscriptions", s.subscribe)
	r.Auth.POST("/push/subscriptions/delete", s.unsubscribe)
}

// serviceWorker serves static/sw.js at the root, so its scope is the site.
func (s routes) serviceWorker(c echo.Context) error {
	b, err := fs.ReadFile(s.static, "sw.js")
	if err != nil {
		return echo.NewHTTPError(http.StatusNotFound)
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "text/javascript; charset=utf-8", b)
}

// key is the VAPID public key (base64url), as text.
func (s routes) key(c echo.Context) error {
	if s.sender.Push() == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "Push notifications are off on this server.")
	}
	c.Response().Header().Set("Cache-Control", "private, max-age=3600")
	return c.String(http.StatusOK, s.sender.Push().PublicKey())
}

// subscribe stores the caller's browser's subscription (fields endpoint,
// p256dh, auth, as the Push API gives them), dropping their oldest beyond
// chat.MaxPushSubscriptions; one that is not text is 400, a bad one 422,
// and nothing is stored.
func (s routes) subscribe(c echo.Context) error {
	if s.sender.Push() == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "Push notifications are off on this server.")
	}
	sub, err := chat.ParsePushSubscription(c.FormValue("endpoint"), c.FormValue("p256dh"), c.FormValue("auth"))
	if err == nil {
		err = s.sender.Push().CheckSubscription(sub)
	}
	switch {
	case errors.Is(err, chat.ErrMalformed):
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	case err != nil:
		return echo.NewHTTPError(http.StatusUnprocessableEntity, err.Error())
	}
	if err := s.db.SavePushSubscription(c.Request().Context(), handlers.MustUser(c).Login, sub); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// unsubscribe removes the caller's subscription at endpoint (only theirs:
// the login is the session's).
func (s routes) unsubscribe(c echo.Context) error {
	endpoint := strings.TrimSpace(c.FormValue("endpoint"))
	switch {
	case !utf8.ValidString(endpoint):
		return echo.NewHTTPError(http.StatusBadRequest, "The push endpoint is not valid text.")
	case endpoint == "":
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "Which subscription? The endpoint is missing.")
	case len(endpoint) > chat.MaxPushEndpoint:
		// Never stored, so nothing to remove.
		return c.NoContent(http.StatusNoContent)
	}
	err := s.db.DeletePushSubscription(c.Request().Context(), handlers.MustUser(c).Login, endpoint)
	if err != nil && !errors.Is(err, chat.ErrNotFound) {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

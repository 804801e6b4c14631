// This file lists the API's routes and answers who the bot is.

package botapi

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/handlers"
)

// UseCases are the use cases the API calls (service.Service).
type UseCases interface {
	Tokens
}

// Deps are what the API is built from.
type Deps struct {
	App     UseCases
	Watcher Watcher
	Log     *slog.Logger
}

type module struct {
	app    UseCases
	tokens *tokenCache
	log    *slog.Logger
}

// Register lists the API's routes under /api/v1.
func Register(r handlers.Routes, d Deps) {
	m := &module{app: d.App, tokens: newTokenCache(d.Watcher), log: d.Log}
	g := r.Bare.Group("/api/v1", m.authenticate)
	g.GET("/me", m.me)
}

// me is the bot the token is of.
func (m *module) me(c echo.Context) error {
	b := botOf(c)
	return c.JSON(http.StatusOK, map[string]string{"login": b.Login, "name": b.Name()})
}

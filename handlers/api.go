// This file is what the route modules (handlers/search, handlers/members,
// ...) use of the core: each module is a package of routes for one part of
// the product that registers itself on the groups Register gives it, and
// reaches the shared state (the store, the live engine, the caches) and
// the page rendering through these methods. The core keeps what every
// page needs: the session and who asks, the conversation of a request,
// the sidebar, posting, and the error page.
package handlers

import (
	"log/slog"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/web"
)

// Routes are the groups and limiters a module registers its routes with.
type Routes struct {
	// Public holds every page's routes: the session is loaded if there
	// is one, the CSRF token checked.
	Public *echo.Group
	// Auth holds the routes of signed-in people: the session is loaded
	// and required, the CSRF token checked, names canonical.
	Auth *echo.Group
	// Sending limits posting, editing and reacting per person;
	// Membership limits joining, leaving, adding and inviting.
	Sending, Membership echo.MiddlewareFunc
	// SignIn limits login and sign-up attempts per client address;
	// Passwords limit password changes per address and per person.
	SignIn    echo.MiddlewareFunc
	Passwords []echo.MiddlewareFunc
}

// Conversation is the room or DM a request names, as ConversationOf reads
// it for who asks.
type Conversation = conversation

// Module registers a module's routes.
type Module func(*Server, Routes)

// DB is the store.
func (s *Server) DB() *store.Store { return s.db }

// Log is the server's logger.
func (s *Server) Log() *slog.Logger { return s.log }

// Live is the live engine.
func (s *Server) Live() *live.Engine { return s.live }

// Metrics are the server's metrics.
func (s *Server) Metrics() *web.Metrics { return s.metrics }

// Sign makes an opaque, signed and expiring token of value, for links
// (cursors of the next page); name keeps tokens of one kind apart.
func (s *Server) Sign(name string, value any) (string, error) { return s.pages.Encode(name, value) }

// Unsign reads a token of Sign into dst, or fails.
func (s *Server) Unsign(name, token string, dst any) error { return s.pages.Decode(name, token, dst) }

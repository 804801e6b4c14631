// This file is what the route modules (handlers/search, handlers/members,
// ...) are given of the core: each module is a package of routes for one
// part of the product that registers itself on the groups Register gives
// it. A module declares the interfaces it uses; handlers/routes wires it
// to these methods (the store, the live engine, the use cases, the page
// rendering). The core keeps what every page needs: the session and who
// asks, the conversation of a request, the sidebar, posting, and the
// error page.

package handlers

import (
	"context"
	"io/fs"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/service/cache"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web/csrf"
	"github.com/killrchat/killrchat/web/limit"
	"github.com/killrchat/killrchat/web/metrics"
)

// Routes are the groups and limiters a module registers its routes with.
type Routes struct {
	// Public holds every page's routes: the session is loaded if there
	// is one, the CSRF token checked.
	Public *echo.Group
	// Bare holds the routes that a token in the path authorises, with no
	// session and no CSRF token (a mail client's one-click unsubscribe),
	// or that carry their own credential (the bots' API, incoming
	// webhooks).
	Bare *echo.Group
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

// Module registers a module's routes: handlers/routes gives each module
// the parts of the server it declares it uses.
type Module func(*Server, Routes)

// StaticFiles are the files served under /static/.
func (s *Server) StaticFiles() fs.FS { return s.cfg.Static }

// Log is the server's logger.
func (s *Server) Log() *slog.Logger { return s.log }

// Live is the live engine.
func (s *Server) Live() *live.Engine { return s.live }

// Publish hands an event to the hub (every instance's pages), rendering
// it first if it is a message or a participant list without HTML.
func (s *Server) Publish(ctx context.Context, ev live.Event) { s.publish(ctx, ev) }

// Online says whether login holds a live stream on any instance
// (package live/presence).
func (s *Server) Online(login string) bool { return s.presence.Online(login) }

// WatchAccounts calls forget with the logins of every invalidation of
// accounts (a deactivation, a bot's token rotated or revoked: its fence
// waits for each instance's call), and reset when the hub may have
// missed some (a broker reconnect).
func (s *Server) WatchAccounts(forget func(logins []string), reset func()) {
	s.hub.WatchInvalidations(func(inv live.Invalidation) {
		if len(inv.Accounts) > 0 {
			forget(inv.Accounts)
		}
	})
	s.hub.Watch(func(live.StreamEnd) {}, reset)
}

// Metrics are the server's metrics.
func (s *Server) Metrics() *metrics.Registry { return s.metrics }

// Sign makes an opaque, signed and expiring token of value, for links
// (cursors of the next page); name keeps tokens of one kind apart.
func (s *Server) Sign(name string, value any) (string, error) { return s.pages.Encode(name, value) }

// Unsign reads a token of Sign into dst, or fails.
func (s *Server) Unsign(name, token string, dst any) error { return s.pages.Decode(name, token, dst) }

// UploadHandler takes a multipart post of the composer in a conversation:
// composer renders the composer with a form's errors (422); back is where
// a plain form goes next.
type UploadHandler func(c echo.Context, in chat.Place, composer func(views.Form) error, back string) error

// HandleUploads has h take the conversations' multipart posts (the files
// module); without one they are refused with 415.
func (s *Server) HandleUploads(h UploadHandler) { s.uploadFiles = h }

// Config is the server's configuration, with its defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Closing is closed when the server shuts down, for background work.
func (s *Server) Closing() <-chan struct{} { return s.closing }

// CSRF is the server's CSRF check, for forms read as a stream.
func (s *Server) CSRF() *csrf.Guard { return s.csrf }

// Uploads caps each person's uploads under way; UploadGrace is how long an
// upload runs before Config.UploadMinRate applies; FileStored, when set
// (by tests), is called once an upload's file is stored, before its
// message is posted.
func (s *Server) Uploads() *limit.UserCounts { return s.uploads }

// UploadGrace: see Uploads.
func (s *Server) UploadGrace() time.Duration { return s.uploadGrace }

// FileStored: see Uploads.
func (s *Server) FileStored(ctx context.Context) {
	if s.fileStored != nil {
		s.fileStored(ctx)
	}
}

// UploadBytes is the hourly upload budget per person; MessageRate the
// posting rate per person.
func (s *Server) UploadBytes() *limit.Keyed { return s.limits.uploadBytes }

// MessageRate: see UploadBytes.
func (s *Server) MessageRate() *limit.Keyed { return s.limits.messages }

// SearchRate is the per-person limit on searches.
func (s *Server) SearchRate() *limit.Keyed { return s.limits.searches }

// App is the use cases (package service).
func (s *Server) App() *service.Service { return s.app }

// Rows are the cached reads (package service/cache).
func (s *Server) Rows() *cache.Store { return s.rows }

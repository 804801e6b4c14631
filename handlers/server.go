package handlers

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/securecookie"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email"
	"github.com/killrchat/killrchat/email/missed"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/live/presence"
	"github.com/killrchat/killrchat/push"
	"github.com/killrchat/killrchat/push/outgoing"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/service/cache"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
	"github.com/killrchat/killrchat/web/csrf"
	"github.com/killrchat/killrchat/web/limit"
	"github.com/killrchat/killrchat/web/metrics"
	"github.com/killrchat/killrchat/web/session"
)

// Config is what the handlers need to know about their deployment.
type Config struct {
	// SessionKey signs session cookies and paging tokens (32+ bytes).
	SessionKey []byte
	// SecureCookies marks cookies Secure and sends HSTS on every request
	// (HTTPS, or a TLS-terminating proxy). Without it, requests over
	// direct TLS or with X-Forwarded-Proto: https from a trusted proxy
	// still get both.
	SecureCookies bool
	// TrustedProxies are the networks whose X-Forwarded-Proto is believed.
	TrustedProxies []*net.IPNet
	// PrivateMetrics leaves /metrics out of Register: it is served on its
	// own listener (--metrics-addr).
	PrivateMetrics bool
	// AuthRate is how many login and sign-up attempts one client IP may make
	// per minute (a burst of the same size is allowed).
	AuthRate int
	// SessionCacheTTL bounds how long this instance trusts a session it
	// read without reading it again (default 10s; negative: no cache), and
	// SessionCacheSize how many it keeps (default 100,000). Revocations
	// reach every instance through the hub at once; the TTL only bounds a
	// revocation missed in a broker partition.
	SessionCacheTTL  time.Duration
	SessionCacheSize int
	// CacheTTL bounds how long this instance trusts a room, DM or user
	// row it read (default 10s; negative: no cache), and CacheSize how
	// many of each it keeps (default 100,000). Changes reach every
	// instance through the hub at once (see caches.go).
	CacheTTL  time.Duration
	CacheSize int
	// PageTTL bounds how long this instance serves a conversation's
	// newest page from memory without reading its messages (default
	// cache.DefaultPageTTL; negative: no page kept). A page is served
	// only while the conversation's change count is the one it was read
	// with (service/cache's Pages), so the TTL bounds only what a change
	// that was not counted leaves unseen.
	PageTTL time.Duration
	// Limits are the per-user write limits (zero values take defaults).
	Limits limit.Writes
	// RoomsPerPage is the page size of the list of all rooms.
	RoomsPerPage int
	// MaxStreamsPerUser and MaxStreamsPerIP cap the live streams one user
	// and one client IP may hold open on this instance (default 20, 200).
	MaxStreamsPerUser int
	MaxStreamsPerIP   int
	// MaxReplays caps the catch-up replays running at once on this
	// instance (default 32); a replay waits up to ReplayWait (default 2s)
	// for its turn, then is refused with 503.
	MaxReplays int
	ReplayWait time.Duration
	// MaxUpload is the largest upload request's files, in bytes (default
	// 25 MiB); UploadTimeout bounds one upload or download (default 10
	// minutes), in place of the server's read and write timeouts.
	MaxUpload     int64
	UploadTimeout time.Duration
	// MaxUploadsPerUser caps the uploads one person has under way at once
	// on this instance (default 4; over it, 429). UploadMinRate is the
	// least an upload must send, in bytes a second on average once it has
	// run 10 seconds (default 16 KiB); a slower one is stopped with 408.
	MaxUploadsPerUser int
	UploadMinRate     int64
	// ResumeWindow is how far behind the clock the cursors an instance
	// gives pages stay while it has not yet heard the other instances'
	// watermarks (its first second on the broker; default 5s; see
	// live/watermark).
	ResumeWindow time.Duration
	// SearchIndexOff leaves posted messages out of the search index (they
	// are not found until index-backfill runs): for measuring what the
	// index costs, or to shed its writes when Cassandra is overloaded.
	SearchIndexOff bool
	// SearchIndexRate is how many messages a second this instance indexes
	// at most (0: store.DefaultIndexRate; negative: unpaced). Past it
	// the index lags and catches up when posts slow down.
	SearchIndexRate float64
	// Indexer starts the search indexer (required).
	Indexer NewIndexer
	// Push configures Web Push (VAPID keys, the http loopback endpoints
	// tests use); PushOff turns it off.
	Push    push.Config
	PushOff bool
	// Outgoing configures bots' outgoing webhooks.
	Outgoing outgoing.Config
	// Static holds the files served under /static/.
	Static fs.FS
	// Email is the SMTP server (off when its Host is ""); SiteURL starts
	// the links mails carry; EmailDelay is how long a missed message
	// waits for its email (default 2 minutes); EmailHideText leaves
	// message text out of every email.
	Email         email.Config
	SiteURL       string
	EmailDelay    time.Duration
	EmailHideText bool
	// EmailLease and EmailMaxBackoff: see missed.Config (tests shorten
	// them; zero for the defaults).
	EmailLease, EmailMaxBackoff time.Duration
}

// Server holds what the handlers share.
type Server struct {
	db       Store
	sessions *session.Store
	// rows are the cached reads (service/cache); app the use cases.
	rows *cache.Store
	// newest are the newest pages of conversations, kept in memory
	// (service/cache's Pages).
	newest *cache.Pages
	// levels are the conversations' notification levels that push and
	// the missed-message emails read (service/cache's Levels).
	levels *cache.Levels
	app    *service.Service
	// transport says whether a request came over TLS (web.Transport).
	transport web.Transport
	avatars   *web.Avatars
	metrics   *metrics.Registry
	hub       live.Hub
	cfg       Config
	log       *slog.Logger
	pages     securecookie.Codec
	live      *live.Engine
	indexer   Indexer
	presence  *presence.Tracker
	// push sends Web Push notifications; nil when off or not set up yet.
	push atomic.Pointer[push.Sender]
	// outbox sends single mails, missed the missed-message emails; nil
	// when email is off.
	outbox  *email.Outbox
	missed  *missed.Notifier
	closing chan struct{} // closed by Shutdown
	csrf    *csrf.Guard
	// uploadFiles takes a conversation's multipart post (see
	// HandleUploads).
	uploadFiles UploadHandler
	// fileStored, when set (by tests), is called with the request's
	// context once an upload's file is stored, before its message.
	fileStored func(context.Context)
	// uploads caps each person's uploads under way; uploadGrace is how
	// long an upload runs before Config.UploadMinRate applies.
	uploads     *limit.UserCounts
	uploadGrace time.Duration
	// outgoing delivers to bots' outgoing webhooks.
	outgoing *outgoing.Sender
	// closed are the closed accounts, for the marks on their messages.
	closed closedAccounts
	limits struct {
		messages, rooms, membership, passwordUser, passwordIP, uploadBytes, searches *limit.Keyed
	}
}

// New returns the handlers' server. hub carries room events to live pages.
func New(db Store, registry *metrics.Registry, hub live.Hub, cfg Config, log *slog.Logger) *Server {
	if cfg.AuthRate == 0 {
		cfg.AuthRate = 10
	}
	if cfg.RoomsPerPage == 0 {
		cfg.RoomsPerPage = 25
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.MaxUpload <= 0 {
		cfg.MaxUpload = DefaultMaxUpload
	}
	if cfg.UploadTimeout <= 0 {
		cfg.UploadTimeout = DefaultUploadTimeout
	}
	if cfg.MaxUploadsPerUser <= 0 {
		cfg.MaxUploadsPerUser = DefaultMaxUploadsPerUser
	}
	if cfg.UploadMinRate <= 0 {
		cfg.UploadMinRate = DefaultUploadMinRate
	}
	// Page tokens are encrypted as well as signed: one holds where a
	// listing stopped (a Cassandra paging state, a room's name), which
	// may be a room closed to its reader (issue 37, fault 6).
	blockKey := sha256.Sum256(append([]byte("killrchat page tokens\x00"), cfg.SessionKey...))
	pages := securecookie.New(cfg.SessionKey, blockKey[:])
	pages.MaxAge(int((6 * time.Hour) / time.Second))
	s := &Server{
		db: db, metrics: registry, hub: hub, cfg: cfg, log: log, pages: pages,
		closing: make(chan struct{}),
	}
	s.uploads, s.uploadGrace = limit.NewUserCounts(cfg.MaxUploadsPerUser), uploadGrace
	registry.WatchStore(db)
	if cfg.SessionCacheTTL == 0 {
		cfg.SessionCacheTTL = session.DefaultCacheTTL
	}
	if cfg.SessionCacheSize == 0 {
		cfg.SessionCacheSize = session.DefaultCacheSize
	}
	s.transport = web.Transport{SecureCookies: cfg.SecureCookies, TrustedProxies: cfg.TrustedProxies}
	s.sessions = session.NewStore(db, cfg.SessionKey, cfg.SecureCookies, cfg.SessionCacheTTL, cfg.SessionCacheSize)
	hub.Watch(func(end live.StreamEnd) { s.sessions.Forget(end.Login, end.Room, end.Sessions, end.Except) }, s.sessions.Reset)
	// A closed account's sessions leave every instance's cache at its
	// fence, before the deactivation answers (service/admin.go).
	hub.WatchInvalidations(func(inv live.Invalidation) {
		for _, login := range inv.Accounts {
			s.sessions.Forget(login, "", nil, "")
		}
	})
	s.csrf = &csrf.Guard{Key: cfg.SessionKey, Secure: s.transport.Secure, Streamed: streamedForms,
		Session: func(c echo.Context) string {
			if sess := Session(c); sess != nil {
				return sess.ID
			}
			return ""
		}}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = cache.DefaultTTL
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = cache.DefaultSize
	}
	s.rows = cache.New(db, hub, cfg.CacheTTL, cfg.CacheSize, views.ShownParticipants)
	if cfg.PageTTL == 0 {
		cfg.PageTTL = cache.DefaultPageTTL
	}
	s.newest = cache.NewPages(db.MessagesBefore, db.Version, hub, messagesPerPage, cfg.PageTTL, cache.DefaultPagesBytes)
	s.levels = cache.NewLevels(db.ConversationLevels, hub, cfg.CacheTTL, cfg.CacheSize)
	s.watchAvatars()
	s.watchClosed()
	s.limits.messages = limit.NewKeyed(cfg.Limits.Messages)
	s.limits.rooms = limit.NewKeyed(cfg.Limits.Rooms)
	s.limits.membership = limit.NewKeyed(cfg.Limits.Membership)
	s.limits.uploadBytes = limit.NewKeyed(cfg.Limits.UploadBytes)
	s.limits.searches = limit.NewKeyed(cfg.Limits.Searches)
	// Password changes are guessed like logins: the login rate, per
	// person and per address, unless Limits.Passwords says otherwise.
	auth := cfg.Limits.Passwords
	if auth.Burst <= 0 || auth.Per <= 0 {
		auth = limit.Rate{Burst: cfg.AuthRate, Per: time.Minute / time.Duration(cfg.AuthRate)}
	}
	s.limits.passwordUser, s.limits.passwordIP = limit.NewKeyed(auth), limit.NewKeyed(auth)
	s.live = live.New(hub, db, live.Config{
		MaxStreamsPerUser: cfg.MaxStreamsPerUser, MaxStreamsPerIP: cfg.MaxStreamsPerIP,
		MaxReplays: cfg.MaxReplays, ReplayWait: cfg.ReplayWait, ResumeWindow: cfg.ResumeWindow,
	}, log, registry.SSEConnections,
		func(ctx context.Context, m chat.Message) ([]byte, error) {
			return s.RenderString(s.MentioningEach(ctx, m), views.MessageItem(m))
		},
		func(ev live.Event) { s.publish(context.Background(), ev) })
	s.live.RenderChanges(s.renderChange)
	transport, _ := hub.(presence.Transport)
	s.presence = presence.New(s.live, transport, s.closing)
	if cfg.Indexer == nil {
		panic("handlers: Config.Indexer is required (the composition root starts the store's indexer)")
	}
	s.indexer = cfg.Indexer(log, cfg.SearchIndexRate, cfg.SearchIndexOff, s.closing)
	var mailer service.Mailer
	if cfg.Email.On() {
		s.setUpEmail()
		mailer = s.outbox
	}
	s.setUpOutgoing()
	s.app = service.New(service.Deps{
		Mail: mailer, Email: db, SiteURL: cfg.SiteURL, EmailHideText: cfg.EmailHideText,
		Storage: db, Accounts: db, Bots: db, Hooks: db, Rows: s.rows, Bus: hub, Sequencer: s.live, Renderer: liveRenderer{s},
		Indexer: s.indexer, Push: pushPosted{s}, Outgoing: outgoingPosted{s}, Log: log, ShownParticipants: views.ShownParticipants,
		SessionDigest:         session.Digest,
		CountRoomPost:         func(how string) { registry.RoomPosts.WithLabelValues(how).Inc() },
		CountFenceTimeout:     registry.FenceTimeouts.Inc,
		Rooms:                 s,
		CountSearchStatements: func(n int) { registry.SearchStatements.Observe(float64(n)) },
		FileStored: func(ctx context.Context, size int64) {
			registry.CountUpload("stored", size)
			s.FileStored(ctx)
		},
	})
	if !cfg.PushOff {
		s.setUpPush()
	}
	return s
}

// Push is the Web Push sender: nil when off, or until its VAPID keys are
// set up (see setUpPush).
func (s *Server) Push() *push.Sender { return s.push.Load() }

// Register installs the middleware and lists the core's routes, then has
// each module list its own (handlers/app lists every module).
func (s *Server) Register(e *echo.Echo, modules ...Module) {
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(middleware.Recover())
	e.Use(s.logRequests())
	e.Use(s.metrics.Measure(responseStatus))
	e.Use(s.transport.Headers)
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection:      "0",
		ContentTypeNosniff: "nosniff",
		XFrameOptions:      "DENY",
		ReferrerPolicy:     "same-origin",
		// HSTS is web.Transport.Headers' job: echo's would believe any
		// client's X-Forwarded-Proto.
		ContentSecurityPolicy: "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'; object-src 'none'",
	}))
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: "64K", Skipper: skipBodyLimit}))
	// Small htmx fragments cost more to compress than they save; files
	// are served with ranges, which compression would break. The fastest
	// level: a room page (130 KB of repetitive HTML) is 7.3 KB at level 1
	// for 0.5 ms of CPU, 6.4 KB at the default level for 1.2 ms, more
	// than the rest of the page costs (e2e/load roompage, docs/benchmarks.md).
	e.Use(middleware.GzipWithConfig(middleware.GzipConfig{Level: gzip.BestSpeed, MinLength: 1400, Skipper: func(c echo.Context) bool {
		return strings.HasSuffix(c.Path(), "/events") || c.Path() == "/metrics" || strings.HasPrefix(c.Path(), "/files/") ||
			c.Path() == "/static/*" // packed once, at the best level (static.go)
	}}))

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	if !s.cfg.PrivateMetrics {
		e.GET("/metrics", echo.WrapHandler(s.metrics.Handler()))
	}
	e.GET("/static/*", s.staticFiles())

	app := e.Group("", s.loadSession, s.csrf.Check)
	auth := app.Group("", s.requireUser, canonicalNames)
	auth.GET("/", s.home)
	auth.GET("/rooms", s.listRooms)
	auth.GET("/rooms/new", s.newRoom)
	auth.POST("/rooms", s.createRoom, s.limitUser(s.limits.rooms, "creating rooms"))
	auth.GET("/rooms/:room", s.showRoom)
	membership := s.limitUser(s.limits.membership, "joining and leaving rooms")
	auth.POST("/rooms/:room/join", s.joinRoom, membership)
	auth.POST("/rooms/:room/leave", s.leaveRoom, membership)
	auth.POST("/rooms/:room/delete", s.deleteRoom)
	sending := s.limitUser(s.limits.messages, "sending messages")
	auth.POST("/rooms/:room/messages", s.postMessage, sending)
	auth.GET("/rooms/:room/messages", s.olderMessages)
	// A DM is served by the room handlers (see conversationOf); its
	// address has one spelling, to which the others redirect.
	auth.GET("/dm", s.listDMs)
	auth.GET("/dm/:logins", s.showRoom, CanonicalDM)
	auth.GET("/dm/:logins/messages", s.olderMessages, CanonicalDM)
	auth.POST("/dm/:logins/messages", s.postMessage, CanonicalDM, sending)
	auth.POST("/rooms/:room/read", s.markRoomRead)
	auth.GET("/sidebar", s.showSidebar)
	auth.POST("/dm/:logins/read", s.markRoomRead, CanonicalDM)
	passwords := []echo.MiddlewareFunc{
		s.limitIP(s.limits.passwordIP, "trying passwords"), s.limitUser(s.limits.passwordUser, "trying passwords")}
	for _, m := range modules {
		m(s, Routes{Public: app, Bare: e.Group(""), Auth: auth, SignIn: s.rateLimit(), Passwords: passwords, Sending: sending, Membership: membership})
	}
}

// IsHTMX reports whether htmx made the request, so a fragment is wanted.
// Boosted and history-restore requests want the whole page.
func IsHTMX(c echo.Context) bool {
	h := c.Request().Header
	return h.Get("HX-Request") == "true" && h.Get("HX-Boosted") != "true" &&
		h.Get("HX-History-Restore-Request") != "true"
}

// Render writes body with status: the fragment alone for htmx, inside the
// layout otherwise. It renders into a buffer first so a failure is a 500,
// not half a page.
func (s *Server) Render(c echo.Context, status int, page views.Page, body templ.Component) error {
	comp := body
	if !IsHTMX(c) {
		page = s.fillPage(c, page)
		comp = views.Layout(page, body)
	}
	return s.RenderRaw(c, status, comp)
}

// RenderRaw writes comp as it is, with no layout.
func (s *Server) RenderRaw(c echo.Context, status int, comp templ.Component) error {
	c.Response().Header().Add("Vary", "HX-Request")
	ctx := views.WithCSRF(c.Request().Context(), csrf.Token(c))
	if u, ok := CurrentUser(c); ok {
		// Rendered for this person alone: their mentions are highlighted.
		ctx = views.WithViewer(ctx, u.Login)
	}
	buf := renderBuffers.Get().(*bytes.Buffer)
	defer putRenderBuffer(buf)
	pw := &pageWriter{buf: buf}
	if err := s.renderInto(ctx, comp, pw); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	return pw.send(c, status)
}

// renderBuffers hold pages as they are rendered: a room page is about
// 130 KB, which a fresh buffer reaches by growing (and copying) a dozen
// times. A buffer goes back once its page is written.
var renderBuffers = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 192<<10)) }}

func putRenderBuffer(buf *bytes.Buffer) {
	if buf.Cap() > 1<<20 {
		return // an outsized page's buffer is not kept
	}
	buf.Reset()
	renderBuffers.Put(buf)
}

// fillPage adds what the layout needs: the user, the sidebar and the token.
func (s *Server) fillPage(c echo.Context, page views.Page) views.Page {
	page.CSRF = csrf.Token(c)
	if u, ok := CurrentUser(c); ok {
		page.User = &u
		if page.Unread == nil {
			s.readSidebar(c.Request().Context(), u.Login, "").fill(&page)
		}
	}
	if page.Notice == "" {
		page.Notice = notices[c.QueryParam("notice")]
	}
	return page
}

// notices are the one-line messages a redirect can ask for by name.
var notices = map[string]string{
	"room-deleted":    "The room you were in has been deleted.",
	"you-deleted":     "You deleted the room and all its messages.",
	"room-left":       "You left the room.",
	"welcome":         "Welcome to KillrChat!",
	"logged-out":      "You are logged out.",
	"password-set":    "Your password is set: log in with it.",
	"account-deleted": "Your account is deleted.",
	"deactivated":     "This account is deactivated. Ask an administrator of the site to reactivate it.",
	"sessions-ended":  "Your sessions were ended by an administrator: log in again.",
	"level-saved":     "Your notification setting is saved.",
	"email-saved":     "Your email settings are saved.",
	"email-link-sent": "A new verification link is on its way to your address.",
}

// Redirect sends the browser to url after a successful POST: 303 for a
// plain form, HX-Redirect for htmx (a full page load).
func Redirect(c echo.Context, url string) error {
	if IsHTMX(c) {
		c.Response().Header().Set("HX-Redirect", url)
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, url)
}

// clientGone reports whether the client went away: its request's context
// is cancelled, which net/http does when the connection fails (a hang-up,
// a body that stopped arriving before the read deadline). Whatever error
// the handler returned then (a half-read form that fails the CSRF check,
// a cancelled query), there is no one to answer.
func clientGone(c echo.Context) bool {
	return errors.Is(c.Request().Context().Err(), context.Canceled)
}

// responseStatus is the status a request ended with, for metrics: 499
// when the client went away before an answer.
func responseStatus(c echo.Context, err error) int {
	if err == nil {
		return c.Response().Status
	}
	if clientGone(c) && !c.Response().Committed {
		return web.StatusClientClosed
	}
	code, _ := web.StatusOf(err)
	return code
}

// handleError is echo's error handler: a readable page (or fragment for
// htmx) for every error, 5xx logged once with the detail.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, msg := web.StatusOf(err)
	if status == web.StatusClientClosed || clientGone(c) {
		// The browser went away, or its request was cut off: no page is
		// rendered. Aborting, rather than returning, keeps net/http from
		// sending an empty 200 when the connection can still be written
		// to; it closes the connection and logs nothing.
		s.log.Debug("client went away", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
		panic(http.ErrAbortHandler)
	}
	if status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "status", status, "err", err)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	if status == http.StatusUnauthorized && c.Request().Method == http.MethodGet && !IsHTMX(c) {
		_ = c.Redirect(http.StatusSeeOther, "/login?next="+c.Request().URL.RequestURI())
		return
	}
	if status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", "5")
	}
	if IsHTMX(c) {
		// htmx swaps the message into the page's error slot.
		c.Response().Header().Set("HX-Retarget", "#flash")
		c.Response().Header().Set("HX-Reswap", "innerHTML")
	}
	title := web.TitleOf(err, status)
	var removed removedError
	if errors.As(err, &removed) {
		title, msg = "You were removed", "You were removed from #"+removed.room+" by an admin of the room."
	} else if status == http.StatusNotFound && strings.HasPrefix(c.Path(), "/rooms/:room") {
		msg = "This room does not exist or was deleted."
	}
	page := views.Page{Title: title, Unavailable: status == http.StatusServiceUnavailable}
	body := views.ErrorView(views.ErrorPage{Status: status, Title: title, Message: msg})
	if rerr := s.Render(c, status, page, body); rerr != nil {
		s.log.Error("render error page", "err", rerr)
		_ = c.String(status, msg)
	}
}

func (s *Server) logRequests() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		// Below debug level the line is never written: skip its making too
		// (the clock, the client IP, an allocation per value).
		Skipper:   func(c echo.Context) bool { return !s.log.Enabled(c.Request().Context(), slog.LevelDebug) },
		LogMethod: true, LogURIPath: true, LogStatus: true, LogLatency: true, LogRemoteIP: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			path := v.URIPath
			if strings.HasPrefix(path, "/hooks/") {
				path = c.Path() // the route, not a webhook's secret
			}
			s.log.Debug("request", "method", v.Method, "path", path, "status", v.Status,
				"latency", v.Latency, "ip", v.RemoteIP)
			return nil
		},
	})
}

func (s *Server) healthz(c echo.Context) error { return c.String(http.StatusOK, "ok\n") }

func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	degraded, err := s.db.Health(ctx)
	if err != nil {
		return c.String(http.StatusServiceUnavailable, "cassandra unavailable\n")
	}
	if degraded != "" {
		// Still ready: every request works while a quorum answers.
		return c.String(http.StatusOK, "degraded: "+degraded+"\n")
	}
	return c.String(http.StatusOK, "ready\n")
}

// staticFiles serves the embedded files with a day of caching; the layout
// links them with a version query so a new build is fetched at once.
// limitUser is middleware that takes a token of l for the logged-in user
// before the handler runs, so a refused request stores nothing.
func (s *Server) limitUser(l *limit.Keyed, what string) echo.MiddlewareFunc {
	return limit.By(l, what, func(c echo.Context) string { return MustUser(c).Login })
}

// limitIP is limitUser keyed by the client address (echo's RealIP, which
// believes X-Forwarded-For only from --trusted-proxies).
func (s *Server) limitIP(l *limit.Keyed, what string) echo.MiddlewareFunc {
	return limit.By(l, what, func(c echo.Context) string { return c.RealIP() })
}

// SessionIDFromCookie returns the session id inside a signed cookie value;
// tests use it to look at the stored row.
func (s *Server) SessionIDFromCookie(value string) (string, error) {
	return s.sessions.IDFromCookie(session.CookieName, value)
}

// Shutdown ends every live stream, so the HTTP server can stop, and the
// upload sweeper.
func (s *Server) Shutdown() {
	s.live.Shutdown()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
}

// RenderString renders comp into bytes: every page, fragment and live
// event is rendered here, where avatars get their pictures
// (views.WithAvatars).
func (s *Server) RenderString(ctx context.Context, comp templ.Component) ([]byte, error) {
	var buf bytes.Buffer
	err := s.renderInto(ctx, comp, &buf)
	return buf.Bytes(), err
}

// renderInto renders comp into buf, with what every render knows.
func (s *Server) renderInto(ctx context.Context, comp templ.Component, buf io.Writer) error {
	ctx = views.WithBots(views.WithClosed(views.WithAvatars(ctx, s.avatars.Version), s.closedList(ctx)), s.botList(ctx))
	return comp.Render(ctx, buf)
}

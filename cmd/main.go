// This file owns Main, the serve command: it puts the store, the hub,
// the handlers and the HTTP servers together, starts them, and stops
// them.

package cmd

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/handlers/routes"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/live/natshub"
	"github.com/killrchat/killrchat/push/outgoing"
	"github.com/killrchat/killrchat/static"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/web/metrics"
	"github.com/killrchat/killrchat/web/server"
)

// DefaultGCPercent is the --gc-percent default. Go's own, 100, spent a
// fifth of the app's CPU on collections under 16 posters at once (e2e/load
// post); 400 spends about a twentieth, for a heap up to five times what is
// live (docs/benchmarks.md, "The garbage collector's target").
const DefaultGCPercent = 400

// setGCPercent sets the garbage collector's target to percent unless the
// environment sets GOGC, which the runtime has already applied. It is the
// process's, so the last Main started sets it; they all ask the same.
func setGCPercent(percent int, log *slog.Logger) {
	if _, set := os.LookupEnv("GOGC"); set || percent <= 0 {
		return
	}
	if old := debug.SetGCPercent(percent); old != percent {
		log.Debug("garbage collector target", "percent", percent, "was", old)
	}
}

// Main is one running KillrChat server, as the binary runs it and as
// tests start it: NewMain, Run, then Close.
type Main struct {
	Config Config
	// Log is where the server logs (default: nothing).
	Log *slog.Logger
	// Observe, if set, also sees every statement the server's store
	// sends (the load commands count what a request costs).
	Observe func(store.ObservedQuery)

	db       *store.Store
	hub      live.Hub
	stopNATS func()
	srv      *handlers.Server
	httpSrv  *http.Server
	metrics  *http.Server
	ln       net.Listener
	// cancel ends the background connection to Cassandra.
	cancel context.CancelFunc
	errs   chan error
	wg     sync.WaitGroup
	closed sync.Once
	err    error
}

// NewMain returns a server for cfg, not started.
func NewMain(cfg Config) *Main {
	return &Main{Config: cfg, errs: make(chan error, 3), stopNATS: func() {}}
}

// Run starts the server and returns once it listens: Cassandra is
// connected in the background (retried until it answers; /readyz and
// the pages answer 503 until then), and what needs it at start follows.
// It returns an error if something cannot start; Close stops what did.
func (m *Main) Run(ctx context.Context) error {
	cfg := m.Config.Serve
	if m.Log == nil {
		m.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log := m.Log
	setGCPercent(cfg.GCPercent, log)
	key := cfg.SessionKey
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		log.Warn("no SESSION_KEY set: using a random one; sessions will not survive a restart or work across instances")
	}

	registry := metrics.New()
	sc := m.Config.Cassandra.Store()
	sc.Observe, sc.Log = registry.ObserveQuery, log
	if also := m.Observe; also != nil {
		sc.Observe = func(q store.ObservedQuery) { registry.ObserveQuery(q); also(q) }
	}
	sc.NoMigrate = !cfg.Migrate
	sc.DecodeBudget, sc.ReadBudget = cfg.DecodeBudget, cfg.DownloadMemory
	m.db = store.New(sc)

	var err error
	if m.hub, err = m.newHub(); err != nil {
		return err
	}

	e := echo.New()
	setIPExtractor(e, cfg.TrustedProxies)
	m.srv = handlers.New(m.db, registry, m.hub, handlers.Config{
		SessionKey: key, SecureCookies: cfg.SecureCookies, AuthRate: cfg.AuthRate, Limits: cfg.Limits(), Static: static.Files,
		TrustedProxies: cfg.TrustedProxies, PrivateMetrics: cfg.MetricsAddr != "",
		SessionCacheTTL: cfg.SessionCacheTTL, SessionCacheSize: cfg.SessionCacheSize,
		CacheTTL: cfg.CacheTTL, CacheSize: cfg.CacheSize,
		MaxStreamsPerUser: cfg.StreamsPerUser, MaxStreamsPerIP: cfg.StreamsPerIP, MaxReplays: cfg.MaxReplays, ResumeWindow: cfg.ResumeWindow,
		MaxUpload: cfg.MaxUpload, UploadTimeout: cfg.UploadTimeout, SearchIndexOff: !cfg.SearchIndex, SearchIndexRate: cfg.SearchIndexRate,
		Push: cfg.Push, PushOff: cfg.PushOff, Outgoing: outgoing.Config{Allow: cfg.BotAllow},
		MaxUploadsPerUser: cfg.UploadsPerUser, UploadMinRate: cfg.UploadMinRate,
		Email: m.Config.Email.SMTP, SiteURL: m.Config.Email.SiteURL, EmailDelay: m.Config.Email.Delay, EmailHideText: m.Config.Email.HideText,
		Indexer: func(log *slog.Logger, perSecond float64, off bool, closing <-chan struct{}) handlers.Indexer {
			return store.NewIndexer(m.db, log, perSecond, off, closing)
		},
	}, log)
	routes.Register(e, m.srv, m.db)

	// Cassandra may come up after the app: connect in the background
	// while /readyz and the pages answer 503.
	connectCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := m.db.ConnectWithRetry(connectCtx); err != nil && !errors.Is(err, context.Canceled) {
			m.errs <- err // see store.Permanent: refuse to run
		}
	}()

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return err
	}
	var served net.Listener
	m.httpSrv, served = server.New(ln, e, cfg.HTTP)
	m.ln = ln
	if cl, ok := served.(*server.ConnLimiter); ok {
		registry.WatchConns(cl)
	}
	go func() {
		log.Info("killrchat listening", "addr", ln.Addr().String(), "url", "http://localhost:"+portOf(ln.Addr()),
			"max_conns", cfg.HTTP.MaxConns)
		if err := m.httpSrv.Serve(served); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.errs <- err
		}
	}()
	if cfg.MetricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", registry.Handler())
		m.metrics = &http.Server{Addr: cfg.MetricsAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
		go func() {
			log.Info("metrics listening", "addr", cfg.MetricsAddr)
			if err := m.metrics.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				m.errs <- err
			}
		}()
	}
	return nil
}

// Addr is the address the server listens on (with --addr :0, the port
// it was given); nil before Run.
func (m *Main) Addr() net.Addr {
	if m.ln == nil {
		return nil
	}
	return m.ln.Addr()
}

// Hub is the server's live hub once Run returned (nil before): a test or
// tool that writes behind the server's back tells its caches through it.
func (m *Main) Hub() live.Hub { return m.hub }

// Err delivers an error that stops the server after Run: a listener
// that failed, or a migration that was changed since it was applied.
func (m *Main) Err() <-chan error { return m.errs }

// Close stops the server: the HTTP servers (waiting up to 10 s for
// requests under way), the handlers' work, the hub, NATS and the store.
// It may be called more than once.
func (m *Main) Close() error {
	m.closed.Do(func() { m.err = m.close() })
	return m.err
}

func (m *Main) close() error {
	var err error
	if m.cancel != nil {
		m.cancel()
	}
	if m.srv != nil {
		m.srv.Shutdown()
	}
	if m.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = m.httpSrv.Shutdown(ctx)
		cancel()
	}
	if m.metrics != nil {
		_ = m.metrics.Close()
	}
	m.wg.Wait()
	if m.hub != nil {
		m.hub.Close()
	}
	m.stopNATS()
	if m.db != nil {
		m.db.Close()
	}
	return err
}

func portOf(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return strconv.Itoa(tcp.Port)
	}
	return addr.String()
}

// setIPExtractor makes echo's RealIP trust X-Forwarded-For only when it
// comes from one of the trusted proxies.
func setIPExtractor(e *echo.Echo, proxies []*net.IPNet) {
	if len(proxies) == 0 {
		e.IPExtractor = echo.ExtractIPDirect()
		return
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range proxies {
		opts = append(opts, echo.TrustIPRange(n))
	}
	e.IPExtractor = echo.ExtractIPFromXFFHeader(opts...)
}

// newHub picks the in-process hub, or NATS when a URL is configured;
// with --nats-embed this instance also runs the NATS server itself.
func (m *Main) newHub() (live.Hub, error) {
	cfg := m.Config.Serve
	url := cfg.NATSURL
	if cfg.NATSEmbed != "" {
		host, portStr, _ := net.SplitHostPort(cfg.NATSEmbed) // checked by Parse
		port, _ := strconv.Atoi(portStr)
		ns, err := natsserver.NewServer(&natsserver.Options{Host: host, Port: port, NoSigs: true, NoLog: true})
		if err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
		go ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			ns.Shutdown()
			return nil, fmt.Errorf("embedded nats did not start on %s", cfg.NATSEmbed)
		}
		m.Log.Info("embedded NATS server running", "url", ns.ClientURL())
		m.stopNATS = ns.Shutdown
		if url == "" {
			url = ns.ClientURL()
		}
	}
	if url == "" {
		return live.NewLocalHub(), nil
	}
	return natshub.New(url, m.Log)
}

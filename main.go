// Command killrchat is the KillrChat chat server: it reads its
// configuration from flags (with environment fallbacks), connects to
// Cassandra in the background, and serves HTTP until SIGINT or SIGTERM.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gocql/gocql"
	"github.com/labstack/echo/v4"
	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/handlers/routes"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/live/natshub"
	"github.com/killrchat/killrchat/push"
	"github.com/killrchat/killrchat/schema"
	"github.com/killrchat/killrchat/static"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/web"
)

type config struct {
	addr             string
	push             push.Config
	pushOff          bool
	searchIndex      bool
	searchIndexRate  float64
	hosts            string
	keyspace         string
	replication      string
	consistency      string
	serial           string
	localDC          string
	speculative      time.Duration
	sessionKey       string
	secureCookies    bool
	trustedProxies   string
	authRate         int
	messageRate      float64
	messageBurst     int
	roomsPerHour     int
	joinRate         float64
	joinBurst        int
	sessionCacheTTL  time.Duration
	sessionCacheSize int
	cacheTTL         time.Duration
	cacheSize        int
	streamsPerUser   int
	streamsPerIP     int
	maxReplays       int
	maxUpload        int64
	uploadPerHour    int64
	uploadTimeout    time.Duration
	uploadsPerUser   int
	uploadMinRate    int64
	decodeBudget     int64
	downloadMemory   int64
	resumeWindow     time.Duration
	natsURL          string
	natsEmbed        string
	logLevel         string
	metricsAddr      string
	http             web.HTTPLimits
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if f, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		return f
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

// limits are the per-user write limits the flags ask for.
func (c config) limits() web.Limits {
	every := func(perSecond float64) time.Duration { return time.Duration(float64(time.Second) / perSecond) }
	return web.Limits{
		Messages:   web.Rate{Burst: c.messageBurst, Per: every(c.messageRate)},
		Rooms:      web.Rate{Burst: c.roomsPerHour, Per: time.Hour / time.Duration(c.roomsPerHour)},
		Membership: web.Rate{Burst: c.joinBurst, Per: every(c.joinRate)},
		// One token a byte: the hour's budget may be spent at once.
		UploadBytes: web.Rate{Burst: int(c.uploadPerHour), Per: time.Hour / time.Duration(c.uploadPerHour)},
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("killrchat", flag.ContinueOnError)
	addr := ":8080"
	if p := os.Getenv("PORT"); p != "" {
		addr = ":" + p
	}
	fs.StringVar(&c.addr, "addr", addr, "listen address (env PORT sets the port)")
	fs.StringVar(&c.hosts, "cassandra-hosts", env("CASSANDRA_HOSTS", "127.0.0.1"), "Cassandra contact points, comma-separated (env CASSANDRA_HOSTS)")
	fs.StringVar(&c.keyspace, "cassandra-keyspace", env("CASSANDRA_KEYSPACE", "killrchat"), "keyspace (env CASSANDRA_KEYSPACE)")
	fs.StringVar(&c.replication, "cassandra-replication", env("CASSANDRA_REPLICATION", "SimpleStrategy:1"),
		"keyspace replication when it is created: SimpleStrategy:RF or NetworkTopologyStrategy:dc1=3,dc2=3 (env CASSANDRA_REPLICATION)")
	fs.StringVar(&c.consistency, "cassandra-consistency", env("CASSANDRA_CONSISTENCY", "LOCAL_QUORUM"), "consistency of reads and writes (env CASSANDRA_CONSISTENCY)")
	fs.StringVar(&c.serial, "cassandra-serial-consistency", env("CASSANDRA_SERIAL_CONSISTENCY", "LOCAL_SERIAL"), "serial consistency of lightweight transactions: SERIAL or LOCAL_SERIAL (env CASSANDRA_SERIAL_CONSISTENCY)")
	fs.StringVar(&c.localDC, "cassandra-dc", env("CASSANDRA_DC", ""), "the local data centre: its nodes coordinate (LOCAL_QUORUM reads and writes go to its replicas); empty: every node in turn (env CASSANDRA_DC)")
	fs.DurationVar(&c.speculative, "cassandra-speculative", envDuration("CASSANDRA_SPECULATIVE", 200*time.Millisecond), "after this long without an answer, an idempotent statement is sent to a second node too, so that a slow or frozen node does not stall the requests it coordinates; 0: never (env CASSANDRA_SPECULATIVE)")
	fs.StringVar(&c.sessionKey, "session-key", env("SESSION_KEY", ""), "hex key (32+ bytes) signing session cookies; every instance needs the same one (env SESSION_KEY; random if unset)")
	fs.BoolVar(&c.secureCookies, "secure-cookies", env("SECURE_COOKIES", "") == "true", "mark every cookie Secure and send HSTS always (TLS-only sites); without it, requests over TLS or X-Forwarded-Proto: https from a trusted proxy still get both (env SECURE_COOKIES=true)")
	fs.StringVar(&c.trustedProxies, "trusted-proxies", env("TRUSTED_PROXIES", ""), "CIDRs of proxies whose X-Forwarded-For and X-Forwarded-Proto are believed, comma-separated (env TRUSTED_PROXIES)")
	fs.IntVar(&c.authRate, "auth-rate", envInt("AUTH_RATE", 10), "login and sign-up attempts per minute per client IP, per instance (env AUTH_RATE)")
	fs.Float64Var(&c.messageRate, "message-rate", envFloat("MESSAGE_RATE", 5), "messages per second one person may post after a burst, per instance (env MESSAGE_RATE)")
	fs.IntVar(&c.messageBurst, "message-burst", envInt("MESSAGE_BURST", 20), "messages one person may post at once (env MESSAGE_BURST)")
	fs.IntVar(&c.roomsPerHour, "rooms-per-hour", envInt("ROOMS_PER_HOUR", 10), "rooms one person may create per hour, per instance (env ROOMS_PER_HOUR)")
	fs.Float64Var(&c.joinRate, "join-rate", envFloat("JOIN_RATE", 1), "joins and leaves per second one person may make after a burst, per instance (env JOIN_RATE)")
	fs.IntVar(&c.joinBurst, "join-burst", envInt("JOIN_BURST", 10), "joins and leaves one person may make at once (env JOIN_BURST)")
	fs.DurationVar(&c.sessionCacheTTL, "session-cache-ttl", envDuration("SESSION_CACHE_TTL", 10*time.Second), "how long an instance trusts a session it read, without reading it again; logout and revocations reach every instance at once through the hub, this bounds one missed in a broker partition; negative: no cache (env SESSION_CACHE_TTL)")
	fs.IntVar(&c.sessionCacheSize, "session-cache-size", envInt("SESSION_CACHE_SIZE", 100_000), "sessions an instance keeps in its cache (env SESSION_CACHE_SIZE)")
	fs.DurationVar(&c.cacheTTL, "cache-ttl", envDuration("CACHE_TTL", 10*time.Second), "how long an instance trusts a room, DM or user row it read; joins, leaves, deletes and profile changes reach every instance at once through the hub, this bounds one missed in a broker partition; negative: no cache (env CACHE_TTL)")
	fs.IntVar(&c.cacheSize, "cache-size", envInt("CACHE_SIZE", 100_000), "rooms, DMs and users an instance keeps in each of its caches (env CACHE_SIZE)")
	fs.IntVar(&c.streamsPerUser, "max-streams-per-user", envInt("MAX_STREAMS_PER_USER", 20), "live streams (open room pages) one user may hold, per instance (env MAX_STREAMS_PER_USER)")
	fs.IntVar(&c.streamsPerIP, "max-streams-per-ip", envInt("MAX_STREAMS_PER_IP", 200), "live streams one client IP may hold, per instance; the IP honours --trusted-proxies (env MAX_STREAMS_PER_IP)")
	fs.DurationVar(&c.resumeWindow, "resume-window", envDuration("RESUME_WINDOW", 5*time.Second), "with --nats-url: for its first second on the broker, before it has heard the other instances' watermarks, how far behind the clock this instance keeps the resume cursors it gives pages (env RESUME_WINDOW)")
	fs.IntVar(&c.maxReplays, "max-replays", envInt("MAX_REPLAYS", 32), "live streams catching up on missed messages at once, per instance; others wait briefly, then get 503 (env MAX_REPLAYS)")
	fs.Int64Var(&c.maxUpload, "max-upload", int64(envInt("MAX_UPLOAD", handlers.DefaultMaxUpload)), "largest upload, in bytes (the files of one post together); larger ones get 413 and nothing is stored (env MAX_UPLOAD)")
	fs.Int64Var(&c.uploadPerHour, "upload-bytes-per-hour", int64(envInt("UPLOAD_BYTES_PER_HOUR", web.DefaultUploadBytesPerHour)), "bytes one person may upload per hour, per instance (env UPLOAD_BYTES_PER_HOUR)")
	fs.IntVar(&c.uploadsPerUser, "max-uploads-per-user", envInt("MAX_UPLOADS_PER_USER", handlers.DefaultMaxUploadsPerUser), "uploads one person may have under way at once, per instance; more get 429 (env MAX_UPLOADS_PER_USER)")
	fs.Int64Var(&c.uploadMinRate, "upload-min-rate", int64(envInt("UPLOAD_MIN_RATE", handlers.DefaultUploadMinRate)), "bytes a second an upload must send on average, counted after its first 10 s; a slower one is stopped with 408 and nothing of its file is kept (env UPLOAD_MIN_RATE)")
	fs.Int64Var(&c.decodeBudget, "decode-budget", int64(envInt("DECODE_BUDGET", store.DefaultDecodeBudget)), "bytes that the image decodes for previews may take at once, each counted as twice width × height × bytes per pixel of the decoded image (the garbage collector's headroom); an image whose decode alone needs more gets no preview (env DECODE_BUDGET)")
	fs.Int64Var(&c.downloadMemory, "download-memory", int64(envInt("DOWNLOAD_MEMORY", store.DefaultReadBudget)), "bytes of file chunks (1000 KB each) that downloads and preview decodes may hold at once; more wait their turn (env DOWNLOAD_MEMORY)")
	fs.DurationVar(&c.uploadTimeout, "upload-timeout", envDuration("UPLOAD_TIMEOUT", handlers.DefaultUploadTimeout), "time one upload or download may take, in place of --read-timeout and --write-timeout; a dead upload is swept after twice this (env UPLOAD_TIMEOUT)")
	fs.BoolVar(&c.searchIndex, "search-index", env("SEARCH_INDEX", "true") != "false", "index posted messages for search, after each post answers; false leaves them unfound until index-backfill (env SEARCH_INDEX=false)")
	fs.BoolVar(&c.pushOff, "push-off", env("PUSH_OFF", "") == "true", "send no Web Push notifications (env PUSH_OFF=true)")
	fs.StringVar(&c.push.PublicKey, "vapid-public-key", env("VAPID_PUBLIC_KEY", ""), "the VAPID public key (base64url) Web Push signs with; empty: a pair generated once and kept in Cassandra, the same for every instance (env VAPID_PUBLIC_KEY)")
	fs.StringVar(&c.push.PrivateKey, "vapid-private-key", env("VAPID_PRIVATE_KEY", ""), "the VAPID private key, with --vapid-public-key (env VAPID_PRIVATE_KEY)")
	fs.Float64Var(&c.push.Rate, "push-rate", envFloat("PUSH_RATE", 0), "the most Web Push requests this instance sends a second: 0 for the default, 300; negative for no bound (env PUSH_RATE)")
	fs.StringVar(&c.push.Subject, "push-subject", env("PUSH_SUBJECT", ""), "the contact push services see in VAPID tokens, mailto: or https: (env PUSH_SUBJECT)")
	fs.BoolVar(&c.push.AllowHTTPLoopback, "push-allow-http-loopback", env("PUSH_ALLOW_HTTP_LOOPBACK", "") == "true", "also accept push endpoints at http://127.0.0.1:<port>/ (tests run their own push service; env PUSH_ALLOW_HTTP_LOOPBACK=true)")
	fs.Float64Var(&c.searchIndexRate, "search-index-rate", envFloat("SEARCH_INDEX_RATE", store.DefaultIndexRate), "messages indexed a second at most, per instance; past it the index lags and catches up when posts slow down; negative: unpaced (env SEARCH_INDEX_RATE)")
	fs.StringVar(&c.natsURL, "nats-url", env("NATS_URL", ""), "NATS server for live events across instances; in-process hub if empty (env NATS_URL)")
	fs.StringVar(&c.natsEmbed, "nats-embed", env("NATS_EMBED", ""), "run a NATS server inside this instance on host:port, for trying several instances (env NATS_EMBED)")
	fs.StringVar(&c.logLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (env LOG_LEVEL)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", env("METRICS_ADDR", ""), "serve /metrics on this address only (e.g. 127.0.0.1:9091), not on --addr (env METRICS_ADDR)")
	lim := web.DefaultHTTPLimits()
	fs.IntVar(&c.http.MaxConns, "max-conns", envInt("MAX_CONNS", lim.MaxConns), "open HTTP connections at most; at the cap the longest-idle one is closed (env MAX_CONNS; default: the open-file limit less a tenth)")
	fs.DurationVar(&c.http.ReadTimeout, "read-timeout", envDuration("READ_TIMEOUT", lim.ReadTimeout), "time to read a whole request, body included (env READ_TIMEOUT)")
	fs.DurationVar(&c.http.WriteTimeout, "write-timeout", envDuration("WRITE_TIMEOUT", lim.WriteTimeout), "time from a request's headers to the end of its response; live streams are exempt (env WRITE_TIMEOUT)")
	fs.DurationVar(&c.http.IdleTimeout, "idle-timeout", envDuration("IDLE_TIMEOUT", lim.IdleTimeout), "keep-alive connections are closed after this long without a request (env IDLE_TIMEOUT)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.maxUpload < 1 || c.uploadPerHour < c.maxUpload || c.uploadTimeout <= 0 {
		return c, fmt.Errorf("--max-upload and --upload-timeout must be positive, and --upload-bytes-per-hour at least --max-upload")
	}
	if c.uploadsPerUser < 1 || c.uploadMinRate < 1 || c.decodeBudget < 1 || c.downloadMemory < store.ChunkSize {
		return c, fmt.Errorf("--max-uploads-per-user, --upload-min-rate and --decode-budget must be positive, and --download-memory at least one chunk (%d bytes)", store.ChunkSize)
	}
	if c.messageRate <= 0 || c.joinRate <= 0 || c.messageBurst < 1 || c.joinBurst < 1 || c.roomsPerHour < 1 {
		return c, fmt.Errorf("rates and bursts must be positive")
	}
	c.http.ReadHeaderTimeout = lim.ReadHeaderTimeout
	if c.http.ReadTimeout > 0 {
		c.http.ReadHeaderTimeout = min(c.http.ReadHeaderTimeout, c.http.ReadTimeout)
	}
	return c, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "index-backfill" {
		os.Exit(backfillMain(os.Args[2:]))
	}
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		slog.Error("killrchat stopped", "err", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.logLevel)); err != nil {
		return fmt.Errorf("log level %q: %w", cfg.logLevel, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)

	if cfg.streamsPerUser < 1 || cfg.streamsPerIP < 1 || cfg.maxReplays < 1 {
		return errors.New("--max-streams-per-user, --max-streams-per-ip and --max-replays must be at least 1")
	}
	if !schema.ValidKeyspace(cfg.keyspace) {
		return fmt.Errorf("invalid keyspace name %q", cfg.keyspace)
	}
	if _, err := schema.ReplicationCQL(cfg.replication); err != nil {
		return err
	}
	var consistency gocql.Consistency
	if err := consistency.UnmarshalText([]byte(cfg.consistency)); err != nil {
		return fmt.Errorf("consistency %q: %w", cfg.consistency, err)
	}
	var serial gocql.SerialConsistency
	if err := serial.UnmarshalText([]byte(cfg.serial)); err != nil {
		return fmt.Errorf("serial consistency %q: %w", cfg.serial, err)
	}
	key, err := sessionKey(cfg.sessionKey, log)
	if err != nil {
		return err
	}

	metrics := web.NewMetrics()
	db := store.New(store.Config{
		Hosts: strings.Split(cfg.hosts, ","), Keyspace: cfg.keyspace, Replication: cfg.replication,
		Consistency: consistency, SerialConsistency: serial, LocalDC: cfg.localDC, Speculative: cfg.speculative,
		Observe: metrics.ObserveQuery, Log: log,
		DecodeBudget: cfg.decodeBudget, ReadBudget: cfg.downloadMemory,
	})
	defer db.Close()

	hub, stopNATS, err := newHub(cfg, log)
	if err != nil {
		return err
	}
	defer stopNATS()
	defer hub.Close()

	e := echo.New()
	proxies, err := setIPExtractor(e, cfg.trustedProxies)
	if err != nil {
		return err
	}
	srv := handlers.New(db, metrics, hub, handlers.Config{
		SessionKey: key, SecureCookies: cfg.secureCookies, AuthRate: cfg.authRate, Limits: cfg.limits(), Static: static.Files,
		TrustedProxies: proxies, PrivateMetrics: cfg.metricsAddr != "",
		SessionCacheTTL: cfg.sessionCacheTTL, SessionCacheSize: cfg.sessionCacheSize,
		CacheTTL: cfg.cacheTTL, CacheSize: cfg.cacheSize,
		MaxStreamsPerUser: cfg.streamsPerUser, MaxStreamsPerIP: cfg.streamsPerIP, MaxReplays: cfg.maxReplays, ResumeWindow: cfg.resumeWindow,
		MaxUpload: cfg.maxUpload, UploadTimeout: cfg.uploadTimeout, SearchIndexOff: !cfg.searchIndex, SearchIndexRate: cfg.searchIndexRate,
		Push: cfg.push, PushOff: cfg.pushOff,
		MaxUploadsPerUser: cfg.uploadsPerUser, UploadMinRate: cfg.uploadMinRate,
	}, log)
	routes.Register(e, srv)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// Cassandra may come up after the app: connect in the background while
	// /readyz and the pages answer 503.
	connected := make(chan error, 1)
	go func() { connected <- db.ConnectWithRetry(ctx) }()

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	httpSrv, ln := web.NewHTTPServer(ln, e, cfg.http)
	if cl, ok := ln.(*web.ConnLimiter); ok {
		metrics.WatchConns(cl)
	}
	serveErr := make(chan error, 2)
	go func() {
		log.Info("killrchat listening", "addr", cfg.addr, "url", "http://localhost"+portOf(cfg.addr),
			"max_conns", cfg.http.MaxConns)
		serveErr <- httpSrv.Serve(ln)
	}()
	if cfg.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics.Handler())
		metricsSrv := &http.Server{Addr: cfg.metricsAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
		defer metricsSrv.Close()
		go func() {
			log.Info("metrics listening", "addr", cfg.metricsAddr)
			serveErr <- metricsSrv.ListenAndServe()
		}()
	}

	select {
	case err := <-serveErr:
		return err
	case err := <-connected:
		if err != nil && !errors.Is(err, context.Canceled) {
			return err // a changed migration: refuse to run
		}
	case <-ctx.Done():
	}
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown()
	return httpSrv.Shutdown(shutdownCtx)
}

func portOf(addr string) string {
	if _, port, err := net.SplitHostPort(addr); err == nil {
		return ":" + port
	}
	return addr
}

// sessionKey decodes the configured key, or makes a random one (sessions
// then end with the process and are not shared between instances).
func sessionKey(hexKey string, log *slog.Logger) ([]byte, error) {
	if hexKey == "" {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		log.Warn("no SESSION_KEY set: using a random one; sessions will not survive a restart or work across instances")
		return key, nil
	}
	key, err := hex.DecodeString(hexKey)
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("session key must be at least 32 bytes, hex-encoded")
	}
	return key, nil
}

// setIPExtractor makes echo's RealIP trust X-Forwarded-For only when it
// comes from a configured proxy, and returns those proxies' networks.
func setIPExtractor(e *echo.Echo, cidrs string) ([]*net.IPNet, error) {
	if cidrs == "" {
		e.IPExtractor = echo.ExtractIPDirect()
		return nil, nil
	}
	var opts []echo.TrustOption
	var nets []*net.IPNet
	opts = append(opts, echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false))
	for _, c := range strings.Split(cidrs, ",") {
		_, n, err := net.ParseCIDR(strings.TrimSpace(c))
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", c, err)
		}
		opts = append(opts, echo.TrustIPRange(n))
		nets = append(nets, n)
	}
	e.IPExtractor = echo.ExtractIPFromXFFHeader(opts...)
	return nets, nil
}

// newHub picks the in-process hub, or NATS when a URL is configured;
// with --nats-embed this instance also runs the NATS server itself.
func newHub(cfg config, log *slog.Logger) (live.Hub, func(), error) {
	stop := func() {}
	if cfg.natsEmbed != "" {
		host, portStr, err := net.SplitHostPort(cfg.natsEmbed)
		port, perr := strconv.Atoi(portStr)
		if err != nil || perr != nil {
			return nil, nil, fmt.Errorf("--nats-embed %q: want host:port", cfg.natsEmbed)
		}
		ns, err := natsserver.NewServer(&natsserver.Options{Host: host, Port: port, NoSigs: true, NoLog: true})
		if err != nil {
			return nil, nil, fmt.Errorf("embedded nats: %w", err)
		}
		go ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			return nil, nil, fmt.Errorf("embedded nats did not start on %s", cfg.natsEmbed)
		}
		log.Info("embedded NATS server running", "url", ns.ClientURL())
		stop = ns.Shutdown
		if cfg.natsURL == "" {
			cfg.natsURL = ns.ClientURL()
		}
	}
	if cfg.natsURL == "" {
		return live.NewLocalHub(), stop, nil
	}
	hub, err := natshub.New(cfg.natsURL, log)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return hub, stop, nil
}

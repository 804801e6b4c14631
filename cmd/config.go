// This file owns the configuration: every setting of every command, read
// from flags with environment fallbacks and checked here, so that a bad
// one stops the program at start with one sentence.

package cmd

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/push"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/web/limit"
	"github.com/killrchat/killrchat/web/server"
	"github.com/killrchat/killrchat/web/session"
)

// The commands.
const (
	Serve         = "serve"
	Migrate       = "migrate"
	IndexBackfill = "index-backfill"
	Admin         = "admin"
	Export        = "export"
	Import        = "import"
)

// Commands are the program's commands, the default first.
var Commands = []string{Serve, Migrate, IndexBackfill, Admin, Export, Import}

// Config is the whole configuration of every command.
type Config struct {
	// Command is one of Commands.
	Command string
	// ShowVersion asks for the version instead (--version).
	ShowVersion bool
	Cassandra   Cassandra
	LogLevel    slog.Level
	// LogFormat is "text" or "json".
	LogFormat string
	Serve     ServeConfig
	Backfill  BackfillConfig
	Admin     AdminConfig
	Export    ExportConfig
	Import    ImportConfig
	// Email is the SMTP server and the site's address (serve and admin).
	Email EmailConfig
}

// ServeConfig is what `serve` needs besides Cassandra.
type ServeConfig struct {
	Addr string
	// Migrate applies the schema at start; false only checks it.
	Migrate bool
	// SessionKey signs cookies; nil: a random one (see Main.Run).
	SessionKey     []byte
	SecureCookies  bool
	TrustedProxies []*net.IPNet
	AuthRate       int
	MessageRate    float64
	MessageBurst   int
	RoomsPerHour   int
	JoinRate       float64
	JoinBurst      int
	SearchesPerMin int
	// HookRate and HookBurst bound each incoming webhook's posts.
	HookRate  float64
	HookBurst int

	SessionCacheTTL  time.Duration
	SessionCacheSize int
	CacheTTL         time.Duration
	CacheSize        int
	StreamsPerUser   int
	StreamsPerIP     int
	MaxReplays       int
	ResumeWindow     time.Duration

	MaxUpload, UploadPerHour     int64
	UploadsPerUser               int
	UploadMinRate                int64
	DecodeBudget, DownloadMemory int64
	UploadTimeout                time.Duration

	SearchIndex     bool
	SearchIndexRate float64
	Push            push.Config
	PushOff         bool
	// BotAllow are the address ranges bots' outgoing webhooks may reach
	// beyond public addresses.
	BotAllow []netip.Prefix

	NATSURL, NATSEmbed string
	MetricsAddr        string
	HTTP               server.Limits
	// GCPercent is the garbage collector's target (see Main.Run).
	GCPercent int
}

// Limits are the per-user write limits the settings ask for.
func (c ServeConfig) Limits() limit.Writes {
	every := func(perSecond float64) time.Duration {
		return max(time.Duration(float64(time.Second)/perSecond), time.Nanosecond)
	}
	return limit.Writes{
		Messages:   limit.Rate{Burst: c.MessageBurst, Per: every(c.MessageRate)},
		Rooms:      limit.Rate{Burst: c.RoomsPerHour, Per: max(time.Hour/time.Duration(c.RoomsPerHour), time.Nanosecond)},
		Membership: limit.Rate{Burst: c.JoinBurst, Per: every(c.JoinRate)},
		// A minute's searches may be spent at once.
		Searches: limit.Rate{Burst: c.SearchesPerMin, Per: time.Minute / time.Duration(c.SearchesPerMin)},
		// One token a byte: the hour's budget may be spent at once.
		UploadBytes: limit.Rate{Burst: int(c.UploadPerHour), Per: max(time.Hour/time.Duration(c.UploadPerHour), time.Nanosecond)},
		Hooks:       limit.Rate{Burst: c.HookBurst, Per: every(c.HookRate)},
	}
}

// BackfillConfig is what `index-backfill` needs besides Cassandra.
type BackfillConfig struct {
	Job   string
	Rate  float64
	Until int
}

// Parse reads the configuration of the command args name (serve when
// they start with a flag or are empty) from args, with lookupEnv for
// the environment fallbacks (os.LookupEnv). It returns flag.ErrHelp for
// -h or --help, and otherwise an error of one sentence naming the first
// setting that is not accepted and what it accepts.
func Parse(args []string, lookupEnv func(string) (string, bool)) (Config, error) {
	c := Config{Command: Serve}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		c.Command, args = args[0], args[1:]
	}
	switch c.Command {
	case Admin:
		args = c.Admin.take(args)
	case Import:
		args = c.Import.take(args)
	}
	settings, check := c.settings()
	if settings == nil {
		return c, fmt.Errorf("there is no command %q: the commands are %s (the default), %s", c.Command, Serve, strings.Join(Commands[1:], ", "))
	}
	fs := flagSet(c.Command, settings, &c.ShowVersion)
	given := map[string]string{}
	for _, s := range settings {
		fs.Var(raw{s, new(string)}, s.name, "")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, fmt.Errorf("%s (killrchat %s --help lists the settings)", flagError(err), c.Command)
	}
	if c.ShowVersion {
		return c, nil
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%q is not a setting: settings are flags, such as --addr :8080 (killrchat %s --help lists them)", fs.Arg(0), c.Command)
	}
	fs.Visit(func(f *flag.Flag) {
		if r, ok := f.Value.(raw); ok {
			given[f.Name] = *r.val
		}
	})
	from, err := read(settings, given, lookupEnv)
	if err != nil {
		return c, err
	}
	return c, check(from)
}

// flagSet is a command's flag set, silent: Parse and Usage speak for it.
func flagSet(command string, settings []*setting, version *bool) *flag.FlagSet {
	fs := flag.NewFlagSet("killrchat "+command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.BoolVar(version, "version", false, "print the version and commit, and exit")
	return fs
}

// flagError says what the flag package found wrong, in our words.
func flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Sprintf("there is no setting --%s", strings.TrimLeft(name, "-"))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("--%s needs a value", strings.TrimLeft(name, "-"))
	}
	return msg
}

// settings lists the command's settings, which store into c, and the
// checks that span several of them; nil for an unknown command.
func (c *Config) settings() ([]*setting, func(map[string]source) error) {
	common := c.cassandraSettings()
	common = append(common, &setting{name: "log-level", env: "LOG_LEVEL", def: "info",
		usage: "what the log shows: debug, info, warn or error", accepts: "debug, info, warn or error",
		set: func(v string) bool { return c.LogLevel.UnmarshalText([]byte(v)) == nil }},
		&setting{name: "log-format", env: "LOG_FORMAT", def: "text",
			usage: "how log lines are written to stderr: text (key=value) or json (one object a line)", accepts: "text or json",
			set: func(v string) bool { c.LogFormat = v; return v == "text" || v == "json" }})
	var own []*setting
	check := func(map[string]source) error { return nil }
	switch c.Command {
	case Serve:
		own, check = append(c.serveSettings(), c.emailSettings()...), c.checkServe
	case Migrate:
	case IndexBackfill:
		own = c.backfillSettings()
	case Admin:
		own, check = append(c.adminSettings(), c.emailSettings()...), c.checkAdmin
	case Export:
		own = c.exportSettings()
	case Import:
		own, check = c.importSettings(), c.checkImport
	default:
		return nil, nil
	}
	return append(common, own...), func(from map[string]source) error {
		if err := c.checkCassandra(from); err != nil {
			return err
		}
		return check(from)
	}
}

func (c *Config) backfillSettings() []*setting {
	b := &c.Backfill
	return []*setting{
		{name: "job", def: "backfill", usage: "the name of the run's progress: the same name resumes where it stopped, another starts again",
			accepts: "a name that is not empty", set: func(v string) bool { b.Job = v; return v != "" }},
		{name: "rate", def: "500", usage: "messages indexed a second at most; 0: unpaced",
			accepts: "a number of 0 or more", set: number(&b.Rate, func(f float64) bool { return f >= 0 })},
		{name: "until", def: "0", usage: "the newest day bucket to index, yyyyMMdd; 0: today, UTC (messages posted since the indexer ran need none)",
			accepts: "0 or a day as yyyyMMdd", set: func(v string) bool {
				n, err := strconv.Atoi(v)
				b.Until = n
				if err != nil || n == 0 {
					return err == nil
				}
				_, err = time.Parse("20060102", v)
				return err == nil
			}},
	}
}

// checkServe checks what spans several serve settings.
func (c *Config) checkServe(from map[string]source) error {
	if err := c.checkEmail(from); err != nil {
		return err
	}
	s := &c.Serve
	if s.UploadPerHour < s.MaxUpload {
		return fmt.Errorf("%s must be at least --max-upload (%d bytes), not %d", from["upload-bytes-per-hour"].name("upload-bytes-per-hour"), s.MaxUpload, s.UploadPerHour)
	}
	if (s.Push.PublicKey == "") != (s.Push.PrivateKey == "") {
		return errors.New("--vapid-public-key and --vapid-private-key must be given together, or neither")
	}
	s.HTTP.ReadHeaderTimeout = server.DefaultLimits().ReadHeaderTimeout
	if s.HTTP.ReadTimeout > 0 {
		s.HTTP.ReadHeaderTimeout = min(s.HTTP.ReadHeaderTimeout, s.HTTP.ReadTimeout)
	}
	return nil
}

func (c *Config) serveSettings() []*setting {
	s := &c.Serve
	lim := server.DefaultLimits()
	positive := func(f float64) bool { return f > 0 }
	anyNumber := func(float64) bool { return true }
	d := func(v time.Duration) string { return v.String() }
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []*setting{
		{name: "addr", env: "PORT", def: ":8080", usage: "the address to listen on: host:port, :port or a port alone (as PORT gives it)",
			accepts: "host:port, :port or a port", set: func(v string) bool {
				if !strings.Contains(v, ":") {
					v = ":" + v
				}
				return hostPort(&s.Addr, false)(v)
			}},
		{name: "migrate", env: "MIGRATE", def: "true", boolean: true,
			usage:   "apply the schema's migrations at start, as killrchat migrate does; false: only check that they are applied, and refuse to start on an older schema (when killrchat migrate runs apart, before an upgrade)",
			accepts: "true or false", set: boolean(&s.Migrate)},
		{name: "session-key", env: "SESSION_KEY", usage: "hex key (32+ bytes) signing session cookies; every instance needs the same one; empty: a random one, so sessions end with the process",
			accepts: "empty, or 64 or more hex digits", set: func(v string) bool {
				if v == "" {
					s.SessionKey = nil
					return true
				}
				key, err := hex.DecodeString(v)
				s.SessionKey = key
				return err == nil && len(key) >= 32
			}},
		{name: "secure-cookies", env: "SECURE_COOKIES", def: "false", boolean: true,
			usage:   "mark every cookie Secure and send HSTS always (TLS-only sites); without it, requests over TLS or X-Forwarded-Proto: https from a trusted proxy still get both",
			accepts: "true or false", set: boolean(&s.SecureCookies)},
		{name: "trusted-proxies", env: "TRUSTED_PROXIES", usage: "CIDRs of proxies whose X-Forwarded-For and X-Forwarded-Proto are believed, comma-separated",
			accepts: "CIDRs separated by commas, such as 10.0.0.0/8", set: func(v string) bool {
				s.TrustedProxies = nil
				if v == "" {
					return true
				}
				for _, c := range strings.Split(v, ",") {
					_, n, err := net.ParseCIDR(strings.TrimSpace(c))
					if err != nil {
						return false
					}
					s.TrustedProxies = append(s.TrustedProxies, n)
				}
				return true
			}},
		{name: "auth-rate", env: "AUTH_RATE", def: "10", usage: "login and sign-up attempts per minute per client IP, per instance",
			accepts: "a whole number of 1 or more", set: integer(&s.AuthRate, 1)},
		{name: "message-rate", env: "MESSAGE_RATE", def: "5", usage: "messages a second one person may post after a burst, per instance",
			accepts: "a number above 0", set: number(&s.MessageRate, positive)},
		{name: "message-burst", env: "MESSAGE_BURST", def: "20", usage: "messages one person may post at once",
			accepts: "a whole number of 1 or more", set: integer(&s.MessageBurst, 1)},
		{name: "hook-rate", env: "HOOK_RATE", def: "1", usage: "posts a second each incoming webhook may make after a burst, per instance (Slack documents one a second)",
			accepts: "a number above 0", set: number(&s.HookRate, positive)},
		{name: "hook-burst", env: "HOOK_BURST", def: "20", usage: "posts each incoming webhook may make at once",
			accepts: "a whole number of 1 or more", set: integer(&s.HookBurst, 1)},
		{name: "rooms-per-hour", env: "ROOMS_PER_HOUR", def: "10", usage: "rooms one person may create an hour, per instance",
			accepts: "a whole number of 1 or more", set: integer(&s.RoomsPerHour, 1)},
		{name: "join-rate", env: "JOIN_RATE", def: "1", usage: "joins and leaves a second one person may make after a burst, per instance",
			accepts: "a number above 0", set: number(&s.JoinRate, positive)},
		{name: "join-burst", env: "JOIN_BURST", def: "10", usage: "joins and leaves one person may make at once",
			accepts: "a whole number of 1 or more", set: integer(&s.JoinBurst, 1)},
		{name: "searches-per-minute", env: "SEARCHES_PER_MINUTE", def: "30", usage: "searches one person may make a minute (all at once if need be), per instance",
			accepts: "a whole number of 1 or more", set: integer(&s.SearchesPerMin, 1)},
		{name: "session-cache-ttl", env: "SESSION_CACHE_TTL", def: d(session.DefaultCacheTTL),
			usage:   "how long an instance trusts a session it read, without reading it again; logout and revocations reach every instance at once through the hub, this bounds one missed in a broker partition; negative: no cache",
			accepts: "a duration, such as 10s", set: duration(&s.SessionCacheTTL, anyDuration)},
		{name: "session-cache-size", env: "SESSION_CACHE_SIZE", def: strconv.Itoa(session.DefaultCacheSize), usage: "sessions an instance keeps in its cache",
			accepts: "a whole number of 1 or more", set: integer(&s.SessionCacheSize, 1)},
		{name: "cache-ttl", env: "CACHE_TTL", def: "10s",
			usage:   "how long an instance trusts a room, DM or user row it read; joins, leaves, deletes and profile changes reach every instance at once through the hub, this bounds one missed in a broker partition; negative: no cache",
			accepts: "a duration, such as 10s", set: duration(&s.CacheTTL, anyDuration)},
		{name: "cache-size", env: "CACHE_SIZE", def: "100000", usage: "rooms, DMs and users an instance keeps in each of its caches",
			accepts: "a whole number of 1 or more", set: integer(&s.CacheSize, 1)},
		{name: "max-streams-per-user", env: "MAX_STREAMS_PER_USER", def: "20", usage: "live streams (open room pages) one user may hold, per instance",
			accepts: "a whole number of 1 or more", set: integer(&s.StreamsPerUser, 1)},
		{name: "max-streams-per-ip", env: "MAX_STREAMS_PER_IP", def: "200", usage: "live streams one client IP may hold, per instance; the IP honours --trusted-proxies",
			accepts: "a whole number of 1 or more", set: integer(&s.StreamsPerIP, 1)},
		{name: "resume-window", env: "RESUME_WINDOW", def: "5s",
			usage:   "with --nats-url: for its first second on the broker, before it has heard the other instances' watermarks, how far behind the clock this instance keeps the resume cursors it gives pages",
			accepts: "a duration above 0, such as 5s", set: duration(&s.ResumeWindow, positiveDuration)},
		{name: "max-replays", env: "MAX_REPLAYS", def: "32", usage: "live streams catching up on missed messages at once, per instance; others wait briefly, then get 503",
			accepts: "a whole number of 1 or more", set: integer(&s.MaxReplays, 1)},
		{name: "max-upload", env: "MAX_UPLOAD", def: n(handlers.DefaultMaxUpload),
			usage:   "the largest upload, in bytes (the files of one post together); larger ones get 413 and nothing is stored",
			accepts: "a whole number of bytes, 1 or more", set: integer(&s.MaxUpload, 1)},
		{name: "upload-bytes-per-hour", env: "UPLOAD_BYTES_PER_HOUR", def: n(limit.DefaultUploadBytesPerHour),
			usage:   "bytes one person may upload an hour, per instance; at least --max-upload",
			accepts: "a whole number of bytes, 1 or more", set: integer(&s.UploadPerHour, 1)},
		{name: "max-uploads-per-user", env: "MAX_UPLOADS_PER_USER", def: strconv.Itoa(handlers.DefaultMaxUploadsPerUser),
			usage:   "uploads one person may have under way at once, per instance; more get 429",
			accepts: "a whole number of 1 or more", set: integer(&s.UploadsPerUser, 1)},
		{name: "upload-min-rate", env: "UPLOAD_MIN_RATE", def: n(handlers.DefaultUploadMinRate),
			usage:   "bytes a second an upload must send on average, counted after its first 10 s; a slower one is stopped with 408 and nothing of its file is kept",
			accepts: "a whole number of bytes a second, 1 or more", set: integer(&s.UploadMinRate, 1)},
		{name: "decode-budget", env: "DECODE_BUDGET", def: n(store.DefaultDecodeBudget),
			usage:   "bytes that the image decodes for previews may take at once, each counted as twice width × height × bytes per pixel of the decoded image (the garbage collector's headroom); an image whose decode alone needs more gets no preview",
			accepts: "a whole number of bytes, 1 or more", set: integer(&s.DecodeBudget, 1)},
		{name: "download-memory", env: "DOWNLOAD_MEMORY", def: n(store.DefaultReadBudget),
			usage:   "bytes of file chunks (1000 KB each) that downloads and preview decodes may hold at once; more wait their turn",
			accepts: fmt.Sprintf("a whole number of bytes, at least one chunk (%d)", store.ChunkSize), set: integer(&s.DownloadMemory, store.ChunkSize)},
		{name: "upload-timeout", env: "UPLOAD_TIMEOUT", def: d(handlers.DefaultUploadTimeout),
			usage:   "the time one upload or download may take, in place of --read-timeout and --write-timeout; a dead upload is swept after twice this",
			accepts: "a duration above 0, such as 10m", set: duration(&s.UploadTimeout, positiveDuration)},
		{name: "search-index", env: "SEARCH_INDEX", def: "true", boolean: true,
			usage:   "index posted messages for search, after each post answers; false leaves them unfound until index-backfill",
			accepts: "true or false", set: boolean(&s.SearchIndex)},
		{name: "search-index-rate", env: "SEARCH_INDEX_RATE", def: strconv.FormatFloat(store.DefaultIndexRate, 'g', -1, 64),
			usage:   "messages indexed a second at most, per instance; past it the index lags and catches up when posts slow down; negative: unpaced",
			accepts: "a number", set: number(&s.SearchIndexRate, anyNumber)},
		{name: "push-off", env: "PUSH_OFF", def: "false", boolean: true, usage: "send no Web Push notifications",
			accepts: "true or false", set: boolean(&s.PushOff)},
		{name: "vapid-public-key", env: "VAPID_PUBLIC_KEY",
			usage: "the VAPID public key (base64url) Web Push signs with; empty: a pair generated once and kept in Cassandra, the same for every instance",
			set:   text(&s.Push.PublicKey)},
		{name: "vapid-private-key", env: "VAPID_PRIVATE_KEY", usage: "the VAPID private key, with --vapid-public-key",
			set: text(&s.Push.PrivateKey)},
		{name: "push-rate", env: "PUSH_RATE", def: "0", usage: "the most Web Push requests this instance sends a second: 0 for the default, 300; negative for no bound",
			accepts: "a number", set: number(&s.Push.Rate, anyNumber)},
		{name: "push-subject", env: "PUSH_SUBJECT", usage: "the contact push services see in VAPID tokens, mailto: or https:",
			accepts: "empty, or a mailto: or https: URL", set: func(v string) bool {
				s.Push.Subject = v
				return v == "" || strings.HasPrefix(v, "mailto:") || strings.HasPrefix(v, "https:")
			}},
		{name: "push-allow-http-loopback", env: "PUSH_ALLOW_HTTP_LOOPBACK", def: "false", boolean: true,
			usage:   "also accept push endpoints at http://127.0.0.1:<port>/ and connect there (tests run their own push service); no other private address",
			accepts: "true or false", set: boolean(&s.Push.AllowHTTPLoopback)},
		{name: "bot-allow-addresses", env: "BOT_ALLOW_ADDRESSES", usage: "address ranges bots' outgoing webhooks may reach beyond the internet, such as 10.1.0.0/16,127.0.0.1/32; empty: none (loopback, private, link-local and metadata addresses are refused)",
			accepts: "empty, or CIDR prefixes separated by commas", set: func(v string) bool {
				s.BotAllow = nil
				for _, p := range strings.Split(v, ",") {
					if p = strings.TrimSpace(p); p == "" {
						continue
					}
					prefix, err := netip.ParsePrefix(p)
					if err != nil {
						return false
					}
					s.BotAllow = append(s.BotAllow, prefix.Masked())
				}
				return true
			}},
		{name: "nats-url", env: "NATS_URL", usage: "the NATS server for live events across instances; empty: the in-process hub",
			set: text(&s.NATSURL)},
		{name: "nats-embed", env: "NATS_EMBED", usage: "run a NATS server inside this instance on host:port, for trying several instances",
			accepts: "empty, or host:port", set: hostPort(&s.NATSEmbed, true)},
		{name: "metrics-addr", env: "METRICS_ADDR", usage: "serve /metrics on this address only (such as 127.0.0.1:9091), not on --addr",
			accepts: "empty, or host:port", set: hostPort(&s.MetricsAddr, true)},
		{name: "max-conns", env: "MAX_CONNS", def: strconv.Itoa(lim.MaxConns), docDef: "the open-file limit less a tenth",
			usage:   "open HTTP connections at most; at the cap the longest-idle one is closed; 0: no cap",
			accepts: "a whole number of 0 or more", set: integer(&s.HTTP.MaxConns, 0)},
		{name: "read-timeout", env: "READ_TIMEOUT", def: d(lim.ReadTimeout), usage: "the time to read a whole request, body included; 0: none",
			accepts: "a duration of 0 or more, such as 20s", set: duration(&s.HTTP.ReadTimeout, notNegative)},
		{name: "write-timeout", env: "WRITE_TIMEOUT", def: d(lim.WriteTimeout), usage: "the time from a request's headers to the end of its response; live streams are exempt; 0: none",
			accepts: "a duration of 0 or more, such as 30s", set: duration(&s.HTTP.WriteTimeout, notNegative)},
		{name: "idle-timeout", env: "IDLE_TIMEOUT", def: d(lim.IdleTimeout), usage: "keep-alive connections are closed after this long without a request; 0: the read timeout",
			accepts: "a duration of 0 or more, such as 1m", set: duration(&s.HTTP.IdleTimeout, notNegative)},
		{name: "gc-percent", env: "GC_PERCENT", def: strconv.Itoa(DefaultGCPercent),
			usage:   "how far the Go heap grows past what is live before the garbage collector runs, in percent (Go's own default is 100): more spends memory to save CPU (see the operations guide); GOGC in the environment wins, and GOMEMLIMIT bounds the heap whatever this is",
			accepts: "a whole number of 1 or more", set: integer(&s.GCPercent, 1)},
	}
}

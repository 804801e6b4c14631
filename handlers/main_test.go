package handlers_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/bcrypt"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/cmd/cmdtest"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/handlers/routes"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/static"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
	"github.com/killrchat/killrchat/web/limit"
	"github.com/killrchat/killrchat/web/metrics"
)

var db *storetest.DB

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		// A worker process of `go test -fuzz` runs only the fuzz target,
		// which needs no database: no keyspace per worker.
		os.Exit(m.Run())
	}
	lowPasswordCost()
	os.Exit(storetest.Main(m, "handlers", &db))
}

// lowPasswordCost hashes the tests' passwords at bcrypt's lowest cost:
// under -race a hash at the production cost takes seconds, and the
// tests sign up hundreds of people. Benchmarks keep the production cost
// (BenchmarkLogin measures it); cmd's TestPasswordCost checks that the
// program itself never lowers it.
func lowPasswordCost() {
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return
	}
	store.PasswordCost = bcrypt.MinCost
}

// Tests that share nothing with others call t.Parallel: each has its own
// app, hub and limits over the package's store. Those that count
// statements or start db.Recorder, count goroutines, time a cache, a
// limiter or a connection, restart NATS on a port, list every room, stop
// Cassandra's proxy or start cmd.Main stay serial: Go runs every serial
// test of the package before the parallel ones, so the two never overlap.

var seq atomic.Int64

func unique(prefix string) string { return fmt.Sprintf("%s%d", prefix, seq.Add(1)) }

var testKey = bytes.Repeat([]byte("k"), 32)

// app is one running instance of the application on a real HTTP server.
type app struct {
	*httptest.Server
	srv *handlers.Server
	hub live.Hub
}

type appOption func(*handlers.Config)

func newApp(t testing.TB, st *store.Store, hub live.Hub, opts ...appOption) *app {
	t.Helper()
	noDefaultRooms(t)
	if st == nil {
		st = db.Store
	}
	if hub == nil {
		hub = live.NewLocalHub()
	}
	cfg := handlers.Config{SessionKey: testKey, AuthRate: 1000, Limits: limit.Unlimited, Static: static.Files, RoomsPerPage: 10}
	// The bots' delivery queue is one for the whole keyspace: an
	// instance reading it would take other tests' deliveries (and count
	// its reads in theirs). Only the outgoing tests turn it on.
	cfg.Outgoing.Off = true
	for _, o := range opts {
		o(&cfg)
	}
	e := echo.New()
	e.IPExtractor = echo.ExtractIPDirect()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg.Indexer = func(log *slog.Logger, perSecond float64, off bool, closing <-chan struct{}) handlers.Indexer {
		return store.NewIndexer(st, log, perSecond, off, closing)
	}
	srv := handlers.New(st, metrics.New(), hub, cfg, log)
	routes.Register(e, srv, st)
	ts := httptest.NewServer(e)
	t.Cleanup(func() {
		srv.Shutdown()
		ts.Close()
	})
	return &app{Server: ts, srv: srv, hub: hub}
}

// noDefaultRooms makes the tests' site one whose administrators chose no
// default rooms, once: the tests sign up hundreds of people, each of
// whom would otherwise join #general (issue 39), and count the rooms and
// statements of what they do. TestOnboarding sets them and puts this
// back.
func noDefaultRooms(t testing.TB) {
	noDefaultRoomsOnce.Do(func() {
		if err := db.SetDefaultRooms(context.Background(), []string{}); err != nil {
			t.Fatalf("no default rooms: %v", err)
		}
	})
}

var noDefaultRoomsOnce sync.Once

// mainApp is the program started as the binary starts it (cmd.Main),
// with real flags (args add to them) on the package's keyspace, once
// /readyz says it is ready; it stops when the test ends. Its srv and hub
// are nil: it is reached over HTTP only.
func mainApp(t testing.TB, args ...string) *app {
	t.Helper()
	m, url, err := cmdtest.StartReady(slog.New(slog.NewTextHandler(io.Discard, nil)),
		append(cmdtest.Flags(db.Keyspace, hex.EncodeToString(testKey)), append([]string{"--auth-rate", "1000"}, args...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return &app{Server: &httptest.Server{URL: url}}
}

// client is a browser without JavaScript: cookies, no automatic redirects.
type client struct {
	t    testing.TB
	base string
	http *http.Client
	htmx bool
	// login is whom signedUp signed up ("" for other clients).
	login string
	// csrf is the token the pages gave, for the cookies in csrfFor.
	csrf, csrfFor string
}

func (a *app) client(t testing.TB) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: a.URL, http: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// on returns a client for another instance that shares this one's cookies.
func (c *client) on(a *app) *client {
	jar, _ := cookiejar.New(nil)
	from, _ := url.Parse(c.base)
	to, _ := url.Parse(a.URL)
	jar.SetCookies(to, c.http.Jar.Cookies(from))
	d := *c
	d.base = a.URL
	d.http = &http.Client{Jar: jar, CheckRedirect: c.http.CheckRedirect}
	return &d
}

func (c *client) cookie(name string) string {
	u, _ := url.Parse(c.base)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

type page struct {
	*http.Response
	body string
	doc  *goquery.Document
}

func (c *client) do(req *http.Request) page {
	c.t.Helper()
	if c.htmx {
		req.Header.Set("HX-Request", "true")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	doc, _ := goquery.NewDocumentFromReader(bytes.NewReader(b))
	return page{Response: resp, body: string(b), doc: doc}
}

func (c *client) get(path string) page {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.base+path, nil)
	return c.do(req)
}

// ensureCSRF returns the CSRF token a page gives this client now, reading
// a page again whenever its session (or visitor) cookie changed.
func (c *client) ensureCSRF() string {
	c.t.Helper()
	cookies := func() string { return c.cookie("killrchat_session") + "|" + c.cookie("killrchat_csrf") }
	if c.csrf != "" && c.csrfFor == cookies() {
		return c.csrf
	}
	for _, path := range []string{"/profile", "/login"} {
		if tok, ok := c.get(path).doc.Find(`meta[name="csrf-token"]`).Attr("content"); ok && tok != "" {
			c.csrf, c.csrfFor = tok, cookies()
			return tok
		}
	}
	c.t.Fatal("no page gave a CSRF token")
	return ""
}

// post submits a form with the CSRF token, as the page's form would.
func (c *client) post(path string, form url.Values) page {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if form.Get("_csrf") == "" {
		form.Set("_csrf", c.ensureCSRF())
	}
	return c.postRaw(path, form)
}

// postRaw submits a form exactly as given.
func (c *client) postRaw(path string, form url.Values) page {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

func signupForm(login, password string) url.Values {
	return url.Values{
		"login": {login}, "password": {password}, "password_confirm": {password},
		"firstname": {"Ada"}, "lastname": {"Lovelace"},
	}
}

// signedUp returns a client logged in as a new user.
func (a *app) signedUp(t testing.TB, login string) *client {
	t.Helper()
	c := a.client(t)
	if p := c.post("/signup", signupForm(login, "password1")); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign up %s: %d %s", login, p.StatusCode, text(p, "main"))
	}
	c.login = chat.NameKey(login)
	return c
}

func text(p page, sel string) string {
	if p.doc == nil {
		return ""
	}
	return strings.Join(strings.Fields(p.doc.Find(sel).Text()), " ")
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

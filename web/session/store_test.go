package session_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/sessions"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/web"
	"github.com/killrchat/killrchat/web/session"
	"github.com/killrchat/killrchat/web/session/sessiontest"
)

var key = []byte("0123456789abcdef0123456789abcdef")

// counted is Sessions that counts reads and can be made to fail.
type counted struct {
	session.Sessions
	reads atomic.Int64
	down  atomic.Bool
}

func (c *counted) Session(ctx context.Context, id string) (chat.SessionRow, error) {
	c.reads.Add(1)
	if c.down.Load() {
		return chat.SessionRow{}, fmt.Errorf("test: %w", chat.ErrUnavailable)
	}
	return c.Sessions.Session(ctx, id)
}

// clock is a time that tests move.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// fixture is a session store over memory, whose rows and cache share a
// clock.
type fixture struct {
	store *session.Store
	rows  *counted
	clock *clock
}

func newFixture(cacheTTL time.Duration, cacheSize int) fixture {
	c := &clock{now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	mem := sessiontest.NewMemory()
	mem.Now = c.Now
	rows := &counted{Sessions: mem}
	s := session.NewStore(rows, key, false, cacheTTL, cacheSize)
	session.SetCacheClock(s, c.Now)
	return fixture{store: s, rows: rows, clock: c}
}

// login saves a new session of login and returns its cookie.
func (f fixture) login(t *testing.T, login string, remember bool) *http.Cookie {
	t.Helper()
	sess := sessions.NewSession(f.store, session.CookieName)
	opts := f.store.Options
	sess.Options = &opts
	if remember {
		sess.Options.MaxAge = int(session.RememberFor / time.Second)
	}
	sess.Values[session.KeyLogin] = login
	sess.Values[session.KeyFirstname] = "First" + login
	sess.Values[session.KeyLastname] = "Last"
	sess.Values[session.KeyRemember] = remember
	rec := httptest.NewRecorder()
	if err := f.store.Save(httptest.NewRequest(http.MethodPost, "/login", nil), rec, sess); err != nil {
		t.Fatalf("save: %v", err)
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name == session.CookieName {
			return c
		}
	}
	t.Fatal("no session cookie set")
	return nil
}

// load is the session of a request that carries cookie (none if nil).
func (f fixture) load(t *testing.T, cookie *http.Cookie) (*sessions.Session, error) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	return f.store.New(req, session.CookieName)
}

func mustLoad(t *testing.T, f fixture, cookie *http.Cookie) *sessions.Session {
	t.Helper()
	sess, err := f.load(t, cookie)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return sess
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(0, 0)
	cookie := f.login(t, "ada", false)
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/" || cookie.Secure {
		t.Fatalf("cookie attributes: %+v", cookie)
	}
	if cookie.MaxAge != 0 {
		t.Fatalf("a session that is not remembered has a MaxAge of %d; it ends with the browser", cookie.MaxAge)
	}
	sess := mustLoad(t, f, cookie)
	if sess.IsNew || sess.ID == "" {
		t.Fatalf("loaded session: new %v, id %q", sess.IsNew, sess.ID)
	}
	for k, want := range map[string]any{session.KeyLogin: "ada", session.KeyFirstname: "Firstada", session.KeyLastname: "Last", session.KeyRemember: false} {
		if got := sess.Values[k]; got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if id, err := f.store.IDFromCookie(session.CookieName, cookie.Value); err != nil || id != sess.ID {
		t.Fatalf("IDFromCookie = %q, %v; want %q", id, err, sess.ID)
	}
	if strings.Contains(cookie.Value, sess.ID) {
		t.Fatal("the cookie shows the session id in the clear")
	}
}

func TestRemember(t *testing.T) {
	t.Parallel()
	f := newFixture(0, 0)
	cookie := f.login(t, "ada", true)
	if cookie.MaxAge != int(session.RememberFor/time.Second) {
		t.Fatalf("cookie MaxAge %d, want %v", cookie.MaxAge, session.RememberFor)
	}
	if sess := mustLoad(t, f, cookie); sess.Options.MaxAge != int(session.RememberFor/time.Second) {
		t.Fatalf("loaded MaxAge %d", sess.Options.MaxAge)
	}
	f.clock.Advance(session.IdleTimeout + time.Hour)
	if mustLoad(t, f, cookie).IsNew {
		t.Fatal("a remembered session ended at the idle timeout")
	}
	f.clock.Advance(session.RememberFor)
	if !mustLoad(t, f, cookie).IsNew {
		t.Fatal("a remembered session outlived RememberFor")
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(0, 0)
	cookie := f.login(t, "ada", false)
	f.clock.Advance(session.IdleTimeout - time.Minute)
	if mustLoad(t, f, cookie).IsNew {
		t.Fatal("ended before the idle timeout")
	}
	f.clock.Advance(2 * time.Minute)
	if !mustLoad(t, f, cookie).IsNew {
		t.Fatal("a session outlived the idle timeout")
	}
}

// TestCookies: a missing, forged, foreign or revoked cookie is a new empty
// session and no error.
func TestCookies(t *testing.T) {
	t.Parallel()
	f := newFixture(0, 0)
	good := f.login(t, "ada", false)
	// A cookie signed with another key, for a row that exists.
	signer := f
	signer.store = session.NewStore(f.rows, []byte("another key, another key, another"), false, 0, 0)
	foreign := signer.login(t, "ada", false)
	revoked := f.login(t, "bob", false)
	id, err := f.store.IDFromCookie(session.CookieName, revoked.Value)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rows.DeleteSession(context.Background(), "bob", id); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cookie *http.Cookie
	}{
		{"None", nil},
		{"Empty", &http.Cookie{Name: session.CookieName, Value: ""}},
		{"Garbage", &http.Cookie{Name: session.CookieName, Value: "not-a-cookie"}},
		{"Tampered", &http.Cookie{Name: session.CookieName, Value: good.Value[:len(good.Value)-2] + "xx"}},
		{"ForeignKey", foreign},
		{"Revoked", revoked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := mustLoad(t, f, tc.cookie)
			if !sess.IsNew || sess.ID != "" || len(sess.Values) != 0 {
				t.Fatalf("got new %v, id %q, values %v; want a new empty session", sess.IsNew, sess.ID, sess.Values)
			}
		})
	}
	if mustLoad(t, f, good).IsNew {
		t.Fatal("the good cookie no longer works")
	}
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	f := newFixture(0, 0)
	cookie := f.login(t, "ada", false)
	f.rows.down.Store(true)
	sess, err := f.load(t, cookie)
	if !errors.Is(err, chat.ErrUnavailable) || sess == nil || !sess.IsNew {
		t.Fatalf("load with storage down: %v, %+v; want a new session and ErrUnavailable", err, sess)
	}
}

func TestUnreadableRow(t *testing.T) {
	t.Parallel()
	f := newFixture(0, 0)
	cookie := f.login(t, "ada", false)
	id, _ := f.store.IDFromCookie(session.CookieName, cookie.Value)
	if err := f.rows.SaveSession(context.Background(), id, chat.SessionRow{Login: "ada", Data: []byte("{not json")}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if sess := mustLoad(t, f, cookie); !sess.IsNew {
		t.Fatal("an unreadable row made a session")
	}
}

func TestSaveRefusesUnknownValues(t *testing.T) {
	t.Parallel()
	f := newFixture(0, 0)
	for _, tc := range []struct {
		name string
		key  any
		val  any
	}{
		{"UnknownKey", "theme", "dark"},
		{"WrongType", session.KeyLogin, 42},
		{"NonStringKey", 7, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := sessions.NewSession(f.store, session.CookieName)
			sess.Options = &sessions.Options{Path: "/"}
			sess.Values[tc.key] = tc.val
			err := f.store.Save(httptest.NewRequest(http.MethodPost, "/", nil), httptest.NewRecorder(), sess)
			if err == nil {
				t.Fatal("saved a value it cannot store")
			}
		})
	}
}

func TestLogoutDeletesRowAndCookie(t *testing.T) {
	t.Parallel()
	f := newFixture(time.Minute, 100)
	cookie := f.login(t, "ada", false)
	sess := mustLoad(t, f, cookie)
	sess.Options.MaxAge = -1
	rec := httptest.NewRecorder()
	if err := f.store.Save(httptest.NewRequest(http.MethodPost, "/logout", nil), rec, sess); err != nil {
		t.Fatal(err)
	}
	cleared := rec.Result().Cookies()
	if len(cleared) != 1 || cleared[0].Value != "" || cleared[0].MaxAge >= 0 {
		t.Fatalf("logout set %+v; want the cookie cleared", cleared)
	}
	if _, err := f.rows.Session(context.Background(), sess.ID); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("the row after logout: %v", err)
	}
	if !mustLoad(t, f, cookie).IsNew {
		t.Fatal("the cookie still works after logout (the cache kept it)")
	}
}

// TestSecureCookie: a request that came over TLS, or marked so, gets a
// Secure cookie even when the store's options do not ask for one.
func TestSecureCookie(t *testing.T) {
	t.Parallel()
	f := newFixture(0, 0)
	sess := sessions.NewSession(f.store, session.CookieName)
	opts := f.store.Options
	sess.Options = &opts
	sess.Values[session.KeyLogin] = "ada"
	rec := httptest.NewRecorder()
	if err := f.store.Save(web.MarkSecure(httptest.NewRequest(http.MethodPost, "/", nil)), rec, sess); err != nil {
		t.Fatal(err)
	}
	if c := rec.Result().Cookies(); len(c) != 1 || !c[0].Secure {
		t.Fatalf("cookies %+v; want one Secure cookie", c)
	}
}

// TestCache: a cached session is served without a read, for the cache's
// TTL; Forget and Reset drop it on this instance.
func TestCache(t *testing.T) {
	t.Parallel()
	f := newFixture(10*time.Second, 100)
	cookie := f.login(t, "ada", false) // Save caches it
	sess := mustLoad(t, f, cookie)
	digest := session.Digest(sess.ID)
	for range 3 {
		mustLoad(t, f, cookie)
	}
	if n := f.rows.reads.Load(); n != 0 {
		t.Fatalf("%d reads for a cached session", n)
	}
	f.clock.Advance(11 * time.Second)
	mustLoad(t, f, cookie)
	if n := f.rows.reads.Load(); n != 1 {
		t.Fatalf("%d reads after the TTL, want 1", n)
	}
	f.store.Forget("ada", "", []string{digest}, "")
	mustLoad(t, f, cookie)
	if n := f.rows.reads.Load(); n != 2 {
		t.Fatalf("%d reads after Forget, want 2", n)
	}
	f.store.Reset()
	mustLoad(t, f, cookie)
	if n := f.rows.reads.Load(); n != 3 {
		t.Fatalf("%d reads after Reset, want 3", n)
	}
	if !session.Cached(f.store, digest) {
		t.Fatal("a read did not cache the session again")
	}
}

func TestNoCache(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		size int
	}{{"ZeroTTL", 0, 100}, {"NegativeTTL", -time.Second, 100}, {"ZeroSize", time.Minute, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(tc.ttl, tc.size)
			cookie := f.login(t, "ada", false)
			mustLoad(t, f, cookie)
			mustLoad(t, f, cookie)
			if n := f.rows.reads.Load(); n != 2 {
				t.Fatalf("%d reads with the cache off, want 2", n)
			}
		})
	}
}

func TestStale(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		saved any
		stale bool
	}{
		{"JustSaved", time.Now().Unix(), false},
		{"NineMinutes", time.Now().Add(-9 * time.Minute).Unix(), false},
		{"ElevenMinutes", time.Now().Add(-11 * time.Minute).Unix(), true},
		{"Never", nil, true},
		{"WrongType", "yesterday", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sess := sessions.NewSession(nil, session.CookieName)
			if tc.saved != nil {
				sess.Values[session.KeySaved] = tc.saved
			}
			if got := session.Stale(sess); got != tc.stale {
				t.Fatalf("Stale = %v, want %v", got, tc.stale)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	t.Parallel()
	if session.Digest("") != "" {
		t.Fatal("the digest of no session is not empty")
	}
	a, b := session.Digest("id-a"), session.Digest("id-b")
	if a == b || a != session.Digest("id-a") || len(a) != 32 || strings.Contains(a, "id-a") {
		t.Fatalf("digests %q and %q", a, b)
	}
}

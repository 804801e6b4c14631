package handlers_test

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/web/metrics"
	"github.com/killrchat/killrchat/web/server"
)

func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	return string(b)
}

// inventedMethod is a random valid HTTP method token no server knows.
func inventedMethod() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return fmt.Sprintf("X%X", b)
}

// TestMetricsLabelsBounded: requests with invented methods, on known and
// unknown paths, add a fixed handful of series (method OTHER, route
// unmatched), however many distinct methods and paths are sent.
func TestMetricsLabelsBounded(t *testing.T) {
	a := newApp(t, nil, nil)
	hc := &http.Client{}
	send := func(n int) {
		for i := range n {
			method := inventedMethod()
			for _, path := range []string{"/healthz", "/rooms/" + unique("r"), "/nope-" + method} {
				req, _ := http.NewRequest(method, a.URL+path, nil)
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			resp, err := hc.Get(a.URL + "/nope-" + method)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	send(10) // the series every later request falls into
	metricsText(t, a.URL)
	before := metricsText(t, a.URL)
	send(990)
	after := metricsText(t, a.URL)
	t.Logf("/metrics: %d bytes after 10 invented methods, %d after 1,000", len(before), len(after))
	if len(after) > len(before)+2048 {
		t.Errorf("/metrics grew from %d to %d bytes", len(before), len(after))
	}
	for _, bad := range []string{`method="X`, `route="/nope-`} {
		if strings.Contains(after, bad) {
			t.Errorf("/metrics has a label from the request: %s", bad)
		}
	}
	for _, want := range []string{`method="OTHER"`, `route="unmatched"`} {
		if !strings.Contains(after, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestMetricsPrivate: with /metrics on its own listener (--metrics-addr),
// the public listener does not serve it.
func TestMetricsPrivate(t *testing.T) {
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.PrivateMetrics = true })
	for _, c := range []*client{a.client(t), a.signedUp(t, unique("metrics"))} {
		if p := c.get("/metrics"); p.StatusCode == http.StatusOK || strings.Contains(p.body, "killrchat_") {
			t.Fatalf("/metrics on the public listener: %d %.80q", p.StatusCode, p.body)
		}
	}
	rec := httptest.NewRecorder()
	metrics.New().Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "killrchat_sse_connections") {
		t.Fatal("Metrics.Handler does not serve the registry")
	}
}

// TestClientGoneMidBody: a POST whose client hangs up halfway through its
// body is a 499 in the metrics and a debug line in the log, with no ERROR
// and no attempt to render an error page.
func TestClientGoneMidBody(t *testing.T) {
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := newServedApp(t, server.DefaultLimits(), log, false)
	c := a.signedUp(t, unique("gone"))
	room := createRoom(t, c)
	u, _ := url.Parse(a.URL)
	var cookies []string
	for _, ck := range c.http.Jar.Cookies(u) {
		cookies = append(cookies, ck.Name+"="+ck.Value)
	}

	hangUp := func(path string, cookie string) {
		conn, err := net.Dial("tcp", a.host())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\nContent-Type: application/x-www-form-urlencoded\r\n"+
			"Content-Length: 1000\r\n\r\ncontent=half+a+message&login=x", path, a.host(), cookie)
		time.Sleep(100 * time.Millisecond) // the handler is reading the body
		conn.Close()
	}
	hangUp("/rooms/"+room+"/messages", strings.Join(cookies, "; "))
	hangUp("/login", "")

	for _, route := range []string{"/rooms/:room/messages", "/login"} {
		want := fmt.Sprintf(`code="499",method="POST",route="%s"`, route)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(metricsText(t, a.URL), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no 499 for %s in /metrics; log:\n%s", route, logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	out := logs.String()
	if strings.Contains(out, "level=ERROR") || strings.Contains(out, "render error page") {
		t.Errorf("a client hanging up was logged as an error:\n%s", out)
	}
	if n := strings.Count(out, `msg="client went away"`); n != 2 {
		t.Errorf("%d debug lines for the 2 hang-ups:\n%s", n, out)
	}
}

// TestPagesAreNotStored: every dynamic response is Cache-Control:
// no-store (a logged-in page must not be kept by a shared cache or shown
// again from the back-button cache after logout); static files keep
// their day of caching. It runs on the program as the binary starts it.
func TestPagesAreNotStored(t *testing.T) {
	a := mainApp(t)
	c := a.signedUp(t, unique("cache"))
	room := createRoom(t, c)
	for _, path := range []string{"/", "/rooms", "/rooms/" + room, "/profile", "/rooms/new"} {
		if p := c.get(path); p.StatusCode != http.StatusOK || p.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: %d, Cache-Control %q", path, p.StatusCode, p.Header.Get("Cache-Control"))
		}
	}
	anon := a.client(t)
	if p := anon.get("/login"); p.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("GET /login: Cache-Control %q", p.Header.Get("Cache-Control"))
	}
	if p := c.post("/rooms/"+room+"/messages", url.Values{"content": {"hi"}}); p.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("POST message: Cache-Control %q", p.Header.Get("Cache-Control"))
	}
	if p := c.get("/static/app.css"); p.StatusCode != http.StatusOK || !strings.Contains(p.Header.Get("Cache-Control"), "max-age=86400") {
		t.Errorf("GET /static/app.css: %d, Cache-Control %q", p.StatusCode, p.Header.Get("Cache-Control"))
	}
}

// browserVisit is a visit as a browser behind some transport: a login
// page, then a sign-up with the token from its form, cookies carried by
// hand (a cookie jar would hold back Secure cookies over plain http).
type browserVisit struct {
	page, signup *http.Response
}

func visit(t *testing.T, hc *http.Client, base string, header http.Header) browserVisit {
	t.Helper()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequest(http.MethodGet, base+"/login", nil)
	req.Header = header.Clone()
	page, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer page.Body.Close()
	doc, err := goquery.NewDocumentFromReader(page.Body)
	if err != nil {
		t.Fatal(err)
	}
	token, _ := doc.Find(`input[name=_csrf]`).First().Attr("value")
	form := signupForm(unique("tls"), "password1")
	form.Set("_csrf", token)
	req, _ = http.NewRequest(http.MethodPost, base+"/signup", strings.NewReader(form.Encode()))
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range page.Cookies() {
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	signup, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	signup.Body.Close()
	if signup.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign up: %s", signup.Status)
	}
	return browserVisit{page: page, signup: signup}
}

// check reports whether HSTS was sent and each cookie set was Secure as
// wanted.
func (v browserVisit) check(t *testing.T, secure bool) {
	t.Helper()
	for _, resp := range []*http.Response{v.page, v.signup} {
		if hsts := resp.Header.Get("Strict-Transport-Security"); (hsts != "") != secure {
			t.Errorf("%s %s: Strict-Transport-Security %q", resp.Request.Method, resp.Request.URL.Path, hsts)
		}
	}
	names := map[string]bool{}
	for _, resp := range []*http.Response{v.page, v.signup} {
		for _, ck := range resp.Cookies() {
			names[ck.Name] = true
			if ck.Secure != secure {
				t.Errorf("%s %s: cookie %s Secure=%v", resp.Request.Method, resp.Request.URL.Path, ck.Name, ck.Secure)
			}
		}
	}
	for _, name := range []string{"killrchat_csrf", "killrchat_session"} {
		if !names[name] {
			t.Errorf("no %s cookie was set (got %v)", name, names)
		}
	}
}

// TestSecureBehindTLS: over TLS (direct, or X-Forwarded-Proto: https
// from a trusted proxy) cookies are Secure and HSTS is sent; a client's
// own X-Forwarded-Proto is not believed.
func TestSecureBehindTLS(t *testing.T) {
	https := http.Header{"X-Forwarded-Proto": {"https"}}
	trust := func(cidr string) appOption {
		return func(c *handlers.Config) {
			_, n, _ := net.ParseCIDR(cidr)
			c.TrustedProxies = []*net.IPNet{n}
		}
	}
	t.Run("TrustedProxy", func(t *testing.T) {
		a := newServedApp(t, server.DefaultLimits(), nil, false, trust("127.0.0.0/8"))
		visit(t, &http.Client{}, a.URL, https).check(t, true)
	})
	t.Run("TrustedProxyPlainHTTP", func(t *testing.T) {
		a := newServedApp(t, server.DefaultLimits(), nil, false, trust("127.0.0.0/8"))
		visit(t, &http.Client{}, a.URL, http.Header{"X-Forwarded-Proto": {"http"}}).check(t, false)
	})
	t.Run("UntrustedClient", func(t *testing.T) {
		a := newServedApp(t, server.DefaultLimits(), nil, false, trust("10.0.0.0/8"))
		visit(t, &http.Client{}, a.URL, https).check(t, false)
	})
	t.Run("DirectTLS", func(t *testing.T) {
		a := newServedApp(t, server.DefaultLimits(), nil, true)
		visit(t, a.Client(), a.URL, http.Header{}).check(t, true)
	})
	t.Run("SecureCookiesFlag", func(t *testing.T) {
		a := newServedApp(t, server.DefaultLimits(), nil, false, func(c *handlers.Config) { c.SecureCookies = true })
		visit(t, &http.Client{}, a.URL, http.Header{}).check(t, true)
	})
}

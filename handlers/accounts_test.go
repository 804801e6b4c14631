package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/handlers"
)

func TestSignupRace(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	login := unique("racer")
	const n = 20
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := a.client(t)
			codes[i] = c.post("/signup", signupForm(login, "password-"+string(rune('a'+i)))).StatusCode
		}()
	}
	wg.Wait()
	created, taken := 0, 0
	for _, code := range codes {
		switch code {
		case http.StatusSeeOther:
			created++
		case http.StatusConflict:
			taken++
		default:
			t.Errorf("status %d", code)
		}
	}
	if created != 1 || taken != n-1 {
		t.Fatalf("created %d, taken %d; want 1 and %d", created, taken, n-1)
	}
	logins := 0
	for i := 0; i < n; i++ {
		c := a.client(t)
		p := c.post("/login", url.Values{"login": {login}, "password": {"password-" + string(rune('a'+i))}})
		if p.StatusCode == http.StatusSeeOther {
			logins++
		}
	}
	if logins != 1 {
		t.Fatalf("%d of the %d passwords log in, want exactly 1", logins, n)
	}
}

func TestSignupValidation(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	c := a.client(t)
	form := signupForm("x", "short")
	form.Set("firstname", "Grace")
	p := c.post("/signup", form)
	if p.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("status %d", p.StatusCode)
	}
	if text(p, "#err-login") == "" || text(p, "#err-password") == "" {
		t.Errorf("field errors missing: %q", text(p, "main"))
	}
	if v, _ := p.doc.Find("input#firstname").Attr("value"); v != "Grace" {
		t.Errorf("typed first name not kept: %q", v)
	}
	if v, _ := p.doc.Find("input#password").Attr("value"); v != "" {
		t.Errorf("password echoed back: %q", v)
	}
	t.Run("ErrUserExists", func(t *testing.T) {
		login := unique("taken")
		a.signedUp(t, login)
		p := a.client(t).post("/signup", signupForm(login, "otherpassword"))
		if p.StatusCode != http.StatusConflict || !strings.Contains(text(p, "main"), "This login is taken") {
			t.Fatalf("status %d: %q", p.StatusCode, text(p, "main"))
		}
	})
}

func sessionID(t *testing.T, c *client) string {
	t.Helper()
	return c.cookie("killrchat_session")
}

func TestSessions(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	login := unique("sess")
	c := a.signedUp(t, login)
	afterSignup := sessionID(t, c)
	if afterSignup == "" {
		t.Fatal("no session cookie after sign-up")
	}
	if p := c.get("/"); p.StatusCode != http.StatusOK {
		t.Fatalf("home after sign-up: %d", p.StatusCode)
	}

	t.Run("TTL", func(t *testing.T) {
		ttl := rowTTL(t, a, c)
		if ttl <= 11*time.Hour || ttl > 12*time.Hour {
			t.Errorf("session TTL %v, want about 12h", ttl)
		}
		r := a.client(t)
		if p := r.post("/login", url.Values{"login": {login}, "password": {"password1"}, "remember_me": {"1"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatal(p.StatusCode)
		}
		if ttl := rowTTL(t, a, r); ttl <= 29*24*time.Hour || ttl > 30*24*time.Hour {
			t.Errorf("remember-me TTL %v, want about 30 days", ttl)
		}
	})

	t.Run("NewIDAtLogin", func(t *testing.T) {
		if p := c.post("/login", url.Values{"login": {login}, "password": {"password1"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("login: %d", p.StatusCode)
		}
		if id := sessionID(t, c); id == "" || id == afterSignup {
			t.Fatalf("session cookie did not change at login")
		}
		// The pre-login session is gone.
		old := a.client(t)
		setCookie(old, "killrchat_session", afterSignup)
		if p := old.get("/"); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("pre-login cookie still works: %d", p.StatusCode)
		}
	})

	t.Run("LogoutRevokes", func(t *testing.T) {
		stolen := a.client(t)
		setCookie(stolen, "killrchat_session", sessionID(t, c))
		if p := stolen.get("/"); p.StatusCode != http.StatusOK {
			t.Fatalf("copied cookie before logout: %d", p.StatusCode)
		}
		if p := c.post("/logout", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d", p.StatusCode)
		}
		p := stolen.get("/")
		if p.StatusCode != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/login") {
			t.Fatalf("copied cookie after logout: %d %s", p.StatusCode, p.Header.Get("Location"))
		}
	})
}

func rowTTL(t *testing.T, a *app, c *client) time.Duration {
	t.Helper()
	// The cookie is signed; the store is asked through a fresh login check.
	ck := c.cookie("killrchat_session")
	id, err := a.srv.SessionIDFromCookie(ck)
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := db.SessionTTL(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return ttl
}

func setCookie(c *client, name, value string) {
	u, _ := url.Parse(c.base)
	c.http.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

func TestLogin(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	login := unique("login")
	a.signedUp(t, login)
	wrongPass := a.client(t).post("/login", url.Values{"login": {login}, "password": {"nope-nope"}})
	wrongLogin := a.client(t).post("/login", url.Values{"login": {unique("ghost")}, "password": {"nope-nope"}})
	if wrongPass.StatusCode != http.StatusUnauthorized || wrongLogin.StatusCode != http.StatusUnauthorized {
		t.Fatalf("statuses %d %d", wrongPass.StatusCode, wrongLogin.StatusCode)
	}
	if text(wrongPass, ".form-error") != text(wrongLogin, ".form-error") || text(wrongPass, ".form-error") == "" {
		t.Errorf("messages differ: %q vs %q", text(wrongPass, ".form-error"), text(wrongLogin, ".form-error"))
	}

	for _, tt := range []struct{ name, next, want string }{
		{"Local", "/rooms?x=1", "/rooms?x=1"},
		{"OffSite", "https://evil.example", "/"},
		{"SchemeRelative", "//evil.example/x", "/"},
		{"Backslash", "/\\evil.example", "/"},
		{"JavaScript", "javascript:alert(1)", "/"},
	} {
		t.Run("Next"+tt.name, func(t *testing.T) {
			p := a.client(t).post("/login", url.Values{"login": {login}, "password": {"password1"}, "next": {tt.next}})
			if loc := p.Header.Get("Location"); loc != tt.want {
				t.Errorf("next=%q redirected to %q, want %q", tt.next, loc, tt.want)
			}
		})
	}

	t.Run("BackToWhereYouWere", func(t *testing.T) {
		c := a.client(t)
		p := c.get("/rooms/new")
		if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/login?next=%2Frooms%2Fnew" {
			t.Fatalf("logged-out visit: %d %q", p.StatusCode, p.Header.Get("Location"))
		}
		form := c.get(p.Header.Get("Location"))
		next, _ := form.doc.Find(`input[name=next]`).Attr("value")
		p = c.post("/login", url.Values{"login": {login}, "password": {"password1"}, "next": {next}})
		if p.Header.Get("Location") != "/rooms/new" {
			t.Fatalf("after login: %q", p.Header.Get("Location"))
		}
	})
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	login := unique("csrf")
	c := a.client(t)
	c.ensureCSRF()
	for _, tt := range []struct{ name, token string }{{"Missing", ""}, {"Wrong", strings.Repeat("x", 43)}} {
		t.Run(tt.name, func(t *testing.T) {
			form := signupForm(login, "password1")
			if tt.token != "" {
				form.Set("_csrf", tt.token)
			}
			p := c.postRaw("/signup", form)
			if p.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d", p.StatusCode)
			}
			if _, err := db.User(ctxT(t), login); err == nil {
				t.Fatal("the user was created without a CSRF token")
			}
		})
	}
	t.Run("Header", func(t *testing.T) {
		// htmx sends the token as a header instead of a field.
		req, _ := http.NewRequest(http.MethodPost, a.URL+"/signup", strings.NewReader(signupForm(login, "password1").Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-CSRF-Token", c.ensureCSRF())
		if p := c.do(req); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("status %d", p.StatusCode)
		}
	})
}

// TestCSRFBoundToSession: the token is good for one session only, is not
// the cookie's value, and is never taken from the URL.
func TestCSRFBoundToSession(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	alice := a.signedUp(t, unique("csrfa"))
	mallory := a.signedUp(t, unique("csrfm"))
	roomOf := func(c *client) string {
		name := unique("csrfroom")
		form := url.Values{"room_name": {name}, "_csrf": {c.ensureCSRF()}}
		if p := c.postRaw("/rooms", form); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("create room with the page's token: %d", p.StatusCode)
		}
		return name
	}
	roomOf(alice)

	t.Run("OtherSessionsToken", func(t *testing.T) {
		name := unique("csrfx")
		p := alice.postRaw("/rooms", url.Values{"room_name": {name}, "_csrf": {mallory.ensureCSRF()}})
		if p.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d", p.StatusCode)
		}
		if _, err := db.Room(ctxT(t), name); err == nil {
			t.Fatal("a room was created with another session's token")
		}
	})
	t.Run("PlantedCookie", func(t *testing.T) {
		// The old double-submit check took any cookie equal to the field.
		c := a.client(t)
		planted := strings.Repeat("A", 43)
		u, _ := url.Parse(a.URL)
		c.http.Jar.SetCookies(u, []*http.Cookie{{Name: "killrchat_csrf", Value: planted, Path: "/"}})
		login := unique("csrfp")
		if p := c.postRaw("/signup", withField(signupForm(login, "password1"), "_csrf", planted)); p.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d", p.StatusCode)
		}
		if _, err := db.User(ctxT(t), login); err == nil {
			t.Fatal("signed up with a planted cookie")
		}
	})
	t.Run("TokenInURL", func(t *testing.T) {
		name := unique("csrfq")
		p := alice.postRaw("/rooms?_csrf="+url.QueryEscape(alice.ensureCSRF()), url.Values{"room_name": {name}})
		if p.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d", p.StatusCode)
		}
		if _, err := db.Room(ctxT(t), name); err == nil {
			t.Fatal("a room was created with the token in the URL")
		}
	})
	t.Run("NewSessionNewToken", func(t *testing.T) {
		before := alice.ensureCSRF()
		alice.post("/logout", nil)
		login := unique("csrfn")
		c := a.signedUp(t, login)
		if c.ensureCSRF() == before {
			t.Fatal("two sessions got the same token")
		}
	})
}

func withField(f url.Values, k, v string) url.Values {
	f.Set(k, v)
	return f
}

func TestProfileEscapesXSS(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	login := unique("xss")
	c := a.client(t)
	form := signupForm(login, "password1")
	form.Set("firstname", `<script>alert("first")</script>`)
	form.Set("bio", `<img src=x onerror=alert(1)>`)
	if p := c.post("/signup", form); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign up: %d %s", p.StatusCode, text(p, "main"))
	}
	p := c.get("/users/" + login)
	if p.StatusCode != http.StatusOK {
		t.Fatal(p.StatusCode)
	}
	if n := p.doc.Find("main script, main img").Length(); n != 0 {
		t.Fatalf("%d script/img elements made from user input", n)
	}
	if !strings.Contains(text(p, "main h1"), `<script>alert("first")</script>`) || !strings.Contains(text(p, ".bio"), "<img src=x") {
		t.Errorf("payload not shown as text: %q / %q", text(p, "main h1"), text(p, ".bio"))
	}
	t.Run("HoverCard", func(t *testing.T) {
		c.htmx = true
		defer func() { c.htmx = false }()
		p := c.get("/users/" + login)
		if p.doc.Find(".hovercard").Length() != 1 || p.doc.Find("aside.sidebar").Length() != 0 {
			t.Errorf("hover card fragment: %s", p.body)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if p := c.get("/users/" + unique("nobody")); p.StatusCode != http.StatusNotFound || text(p, ".error-page") == "" {
			t.Errorf("unknown user: %d", p.StatusCode)
		}
	})
}

func TestProfileEdit(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	login := unique("edit")
	c := a.signedUp(t, login)
	if p := c.post("/profile", url.Values{"email": {"ada@example.org"}, "bio": {"Analyst"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("save: %d %s", p.StatusCode, text(p, "main"))
	}
	u, _ := db.User(ctxT(t), login)
	if u.Email != "ada@example.org" || u.Bio != "Analyst" {
		t.Errorf("saved %+v", u)
	}
	if p := c.post("/profile", url.Values{"email": {"not an email"}}); p.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("bad email: %d", p.StatusCode)
	}
	if p := c.post("/profile/password", url.Values{"old_password": {"wrong-one"}, "password": {"newpassword"}, "password_confirm": {"newpassword"}}); p.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("wrong old password: %d", p.StatusCode)
	}
	if p := c.post("/profile/password", url.Values{"old_password": {"password1"}, "password": {"newpassword"}, "password_confirm": {"newpassword"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("change password: %d", p.StatusCode)
	}
	if p := a.client(t).post("/login", url.Values{"login": {login}, "password": {"newpassword"}}); p.StatusCode != http.StatusSeeOther {
		t.Errorf("new password does not log in: %d", p.StatusCode)
	}
}

func TestRateLimit(t *testing.T) {
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.AuthRate = 3 })
	c := a.client(t)
	codes := []int{}
	for i := 0; i < 5; i++ {
		codes = append(codes, c.post("/login", url.Values{"login": {"nobody"}, "password": {"whatever1"}}).StatusCode)
	}
	if codes[0] != http.StatusUnauthorized || codes[4] != http.StatusTooManyRequests {
		t.Fatalf("statuses %v, want 401 first and 429 last", codes)
	}
	p := c.post("/login", url.Values{"login": {"nobody"}, "password": {"whatever1"}})
	if !strings.Contains(text(p, ".error-page"), "Too many attempts") {
		t.Errorf("429 page: %q", text(p, "main"))
	}
}

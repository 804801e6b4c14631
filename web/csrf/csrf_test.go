package csrf_test

import (
	"bytes"
	"errors"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/web/csrf"
)

const (
	cookieName = "killrchat_csrf"
	sessionHdr = "X-Test-Session" // stands for the session the app would load
)

// guarded is an echo server whose routes are behind a Guard: GET /form
// answers the request's token, POST /act and POST /upload (a streamed
// route) answer "done" and whether the token is still to be read from
// the body.
func guarded(secure bool) (*echo.Echo, *csrf.Guard) {
	g := &csrf.Guard{
		Key:      []byte("0123456789abcdef0123456789abcdef"),
		Session:  func(c echo.Context) string { return c.Request().Header.Get(sessionHdr) },
		Secure:   func(echo.Context) bool { return secure },
		Streamed: map[string]bool{"/upload": true},
	}
	e := echo.New()
	e.Use(g.Check)
	e.GET("/form", func(c echo.Context) error { return c.String(http.StatusOK, csrf.Token(c)) })
	done := func(c echo.Context) error {
		if csrf.NeedsStreamed(c) {
			return c.String(http.StatusOK, "done, token in body")
		}
		return c.String(http.StatusOK, "done")
	}
	e.POST("/act", done)
	e.POST("/upload", done)
	return e, g
}

// visit GETs the form as a visitor (no cookie) or a session, and returns
// the token and the csrf cookie it set, if any.
func visit(t *testing.T, e *echo.Echo, session string, cookie *http.Cookie) (string, *http.Cookie) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/form", nil)
	if session != "" {
		req.Header.Set(sessionHdr, session)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
		t.Fatalf("GET /form: %d %q", rec.Code, rec.Body)
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name == cookieName {
			return rec.Body.String(), c
		}
	}
	return rec.Body.String(), nil
}

// post is one POST of /act or /upload.
type post struct {
	path    string
	session string
	cookie  *http.Cookie
	header  string // X-CSRF-Token
	field   string // _csrf in a url-encoded form
	// multipart sends a multipart body (with field as its _csrf part)
	multipart bool
}

func (p post) do(e *echo.Echo) *httptest.ResponseRecorder {
	var req *http.Request
	path := p.path
	if path == "" {
		path = "/act"
	}
	if p.multipart {
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		_ = w.WriteField(csrf.Field, p.field)
		_ = w.Close()
		req = httptest.NewRequest(http.MethodPost, path, &body)
		req.Header.Set("Content-Type", w.FormDataContentType())
	} else {
		form := url.Values{}
		if p.field != "" {
			form.Set(csrf.Field, p.field)
		}
		req = httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if p.session != "" {
		req.Header.Set(sessionHdr, p.session)
	}
	if p.cookie != nil {
		req.AddCookie(p.cookie)
	}
	if p.header != "" {
		req.Header.Set("X-CSRF-Token", p.header)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func TestVisitorCookie(t *testing.T) {
	t.Parallel()
	for _, secure := range []bool{false, true} {
		e, _ := guarded(secure)
		token, cookie := visit(t, e, "", nil)
		if cookie == nil || len(cookie.Value) < 32 || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Secure != secure {
			t.Fatalf("secure=%v: csrf cookie %+v", secure, cookie)
		}
		again, none := visit(t, e, "", cookie)
		if none != nil || again != token {
			t.Fatalf("a visitor with the cookie got a new cookie %v or another token", none)
		}
		if _, set := visit(t, e, "session-1", nil); set != nil {
			t.Fatal("a session got a visitor cookie")
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	e, _ := guarded(false)
	visitorToken, visitor := visit(t, e, "", nil)
	otherToken, other := visit(t, e, "", nil)
	sessionToken, _ := visit(t, e, "session-1", nil)
	otherSessionToken, _ := visit(t, e, "session-2", nil)
	if visitorToken == otherToken || sessionToken == otherSessionToken || visitorToken == sessionToken {
		t.Fatal("two subjects share a token")
	}
	short := &http.Cookie{Name: cookieName, Value: "short"}
	for _, tc := range []struct {
		name string
		post post
		want int
	}{
		{"VisitorField", post{cookie: visitor, field: visitorToken}, http.StatusOK},
		{"VisitorHeader", post{cookie: visitor, header: visitorToken}, http.StatusOK},
		{"SessionField", post{session: "session-1", field: sessionToken}, http.StatusOK},
		{"SessionHeader", post{session: "session-1", header: sessionToken}, http.StatusOK},
		{"Missing", post{cookie: visitor}, http.StatusForbidden},
		{"MissingSession", post{session: "session-1"}, http.StatusForbidden},
		{"NoSubject", post{field: visitorToken}, http.StatusForbidden},
		{"ForeignVisitor", post{cookie: visitor, field: otherToken}, http.StatusForbidden},
		{"ForeignCookie", post{cookie: other, field: visitorToken}, http.StatusForbidden},
		{"ForeignSession", post{session: "session-1", header: otherSessionToken}, http.StatusForbidden},
		{"VisitorTokenAfterLogin", post{session: "session-1", cookie: visitor, field: visitorToken}, http.StatusForbidden},
		{"ShortCookie", post{cookie: short, field: visitorToken}, http.StatusForbidden},
		{"Tampered", post{cookie: visitor, field: tampered(visitorToken)}, http.StatusForbidden},
		{"MultipartWithHeader", post{cookie: visitor, header: visitorToken, multipart: true}, http.StatusOK},
		// Only a streamed route takes a multipart body without the header.
		{"MultipartNotStreamed", post{cookie: visitor, field: visitorToken, multipart: true}, http.StatusForbidden},
		{"StreamedNoSubject", post{path: "/upload", field: visitorToken, multipart: true}, http.StatusForbidden},
		{"StreamedNotMultipart", post{path: "/upload", cookie: visitor}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := tc.post.do(e)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tc.want, rec.Body)
			}
			if tc.want == http.StatusOK && rec.Body.String() != "done" {
				t.Fatalf("body %q", rec.Body)
			}
		})
	}
}

// TestStreamed: a streamed route lets a multipart body without the header
// through to the handler, which must check the body's _csrf part with
// CheckStreamed before it stores anything.
func TestStreamed(t *testing.T) {
	t.Parallel()
	forms, g := guarded(false)
	token, visitor := visit(t, forms, "", nil)
	// The same guard on a handler that reads the part itself.
	e := echo.New()
	e.Use(g.Check)
	var checked []error
	e.POST("/upload", func(c echo.Context) error {
		if !csrf.NeedsStreamed(c) {
			return c.String(http.StatusOK, "header")
		}
		mr, err := c.Request().MultipartReader()
		if err != nil {
			return err
		}
		part, err := mr.NextPart()
		if err != nil {
			return err
		}
		var sent bytes.Buffer
		_, _ = sent.ReadFrom(part)
		err = g.CheckStreamed(c, sent.String())
		checked = append(checked, err)
		if err != nil {
			return err
		}
		return c.String(http.StatusOK, "streamed")
	})
	for _, tc := range []struct {
		name string
		post post
		want int
		body string
	}{
		{"Valid", post{path: "/upload", cookie: visitor, field: token, multipart: true}, http.StatusOK, "streamed"},
		{"Foreign", post{path: "/upload", cookie: visitor, field: "not-the-token", multipart: true}, http.StatusForbidden, ""},
		{"Empty", post{path: "/upload", cookie: visitor, multipart: true}, http.StatusForbidden, ""},
		{"Header", post{path: "/upload", cookie: visitor, header: token, multipart: true}, http.StatusOK, "header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.post.do(e)
			if rec.Code != tc.want || (tc.body != "" && rec.Body.String() != tc.body) {
				t.Fatalf("%d %q, want %d %q", rec.Code, rec.Body, tc.want, tc.body)
			}
		})
	}
	if len(checked) != 3 || checked[0] != nil || !errors.Is(checked[1], csrf.ErrToken) || !errors.Is(checked[2], csrf.ErrToken) {
		t.Fatalf("CheckStreamed answered %v", checked)
	}
}

// TestCheckStreamedPassesAHeaderToken: for a request whose header token
// Check accepted, CheckStreamed passes whatever the body says.
func TestCheckStreamedPassesAHeaderToken(t *testing.T) {
	t.Parallel()
	_, g := guarded(false)
	c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/upload", nil), httptest.NewRecorder())
	if err := g.CheckStreamed(c, "anything"); err != nil || csrf.NeedsStreamed(c) {
		t.Fatalf("CheckStreamed: %v, NeedsStreamed %v", err, csrf.NeedsStreamed(c))
	}
}

func TestErrTokenIsAForbiddenPage(t *testing.T) {
	t.Parallel()
	var he *echo.HTTPError
	if !errors.As(csrf.ErrToken, &he) || he.Code != http.StatusForbidden || he.Message == "" {
		t.Fatalf("ErrToken = %v", csrf.ErrToken)
	}
}

// tampered is token with its first character changed: the last one may
// already be the character put in its place, or carry only padding bits
// that decode the same.
func tampered(token string) string {
	c := "A"
	if token[0] == 'A' {
		c = "B"
	}
	return c + token[1:]
}

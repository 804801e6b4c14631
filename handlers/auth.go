// This file owns who is acting: the session loaded per request, the typed
// accessor for the logged-in user, the login guard, CSRF tokens and the
// rate limit on login and sign-up.
package handlers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/killrchat/killrchat/store"
)

const (
	sessionCookie = "killrchat_session"
	csrfCookie    = "killrchat_csrf"
	csrfField     = "_csrf"
	csrfHeader    = "X-CSRF-Token"

	ctxSession = "session"
	ctxCSRF    = "csrf"
	// ctxCSRFSubject holds the session whose token a streamed multipart
	// body must still show (see checkCSRF).
	ctxCSRFSubject = "csrf-subject"

	keyLogin     = "login"
	keyFirstname = "firstname"
	keyLastname  = "lastname"
	keyRemember  = "remember"
	keySaved     = "saved"
)

// loadSession puts the request's session in the context, and extends an
// idle session's lifetime now and then.
func (s *Server) loadSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		sess, err := s.sessions.Get(c.Request(), sessionCookie)
		if err != nil {
			return err // the database is down: 503, not "logged out"
		}
		c.Set(ctxSession, sess)
		if _, ok := currentUser(c); ok && stale(sess) {
			if err := sess.Save(c.Request(), c.Response()); err != nil {
				s.log.Warn("session: extend", "err", err)
			}
		}
		return next(c)
	}
}

func session(c echo.Context) *sessions.Session {
	sess, _ := c.Get(ctxSession).(*sessions.Session)
	return sess
}

// currentUser is the logged-in user, from the session only.
func currentUser(c echo.Context) (store.UserRef, bool) {
	sess := session(c)
	if sess == nil {
		return store.UserRef{}, false
	}
	login, _ := sess.Values[keyLogin].(string)
	if login == "" {
		return store.UserRef{}, false
	}
	first, _ := sess.Values[keyFirstname].(string)
	last, _ := sess.Values[keyLastname].(string)
	return store.UserRef{Login: login, Firstname: first, Lastname: last}, true
}

// mustUser is currentUser behind requireUser, where a user is certain.
func mustUser(c echo.Context) store.UserRef {
	u, _ := currentUser(c)
	return u
}

// requireUser sends a logged-out visitor to the login page, which brings
// them back afterwards.
func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, ok := currentUser(c); ok {
			return next(c)
		}
		target := "/"
		if c.Request().Method == http.MethodGet {
			target = c.Request().URL.RequestURI()
		}
		to := "/login"
		if target != "/" {
			to += "?next=" + url.QueryEscape(target)
		}
		if isHTMX(c) {
			c.Response().Header().Set("HX-Redirect", to)
			return c.NoContent(http.StatusUnauthorized)
		}
		return c.Redirect(http.StatusSeeOther, to)
	}
}

// logIn starts a new session for u: a fresh id (never the one the visitor
// came with, against session fixation), the old row deleted.
func (s *Server) logIn(c echo.Context, u store.User, remember bool) error {
	old := session(c)
	if old != nil && old.ID != "" {
		login, _ := old.Values[keyLogin].(string)
		if err := s.db.DeleteSession(c.Request().Context(), login, old.ID); err != nil {
			return err
		}
		if oldUser, ok := currentUser(c); ok {
			s.endStreams(c.Request().Context(), StreamEnd{Login: oldUser.Login, Sessions: []string{old.ID}})
		}
	}
	sess := sessions.NewSession(s.sessions, sessionCookie)
	opts := s.sessions.Options
	sess.Options = &opts
	sess.IsNew = true
	if remember {
		sess.Options.MaxAge = int(RememberFor / time.Second)
	}
	sess.Values[keyLogin] = u.Login
	sess.Values[keyFirstname] = u.Firstname
	sess.Values[keyLastname] = u.Lastname
	sess.Values[keyRemember] = remember
	if err := s.sessions.Save(c.Request(), c.Response(), sess); err != nil {
		return err
	}
	c.Set(ctxSession, sess)
	return nil
}

// safeNext returns next if it is a path on this site, else "/": no open
// redirects through ?next=.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsAny(next, "\\\r\n\t") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}

// checkCSRF requires a token on every state-changing request, in the form
// body field _csrf or the header X-CSRF-Token (never the URL, which leaks
// into logs and Referer). The token is an HMAC, under the server key, of
// the session id, so it is good for this session only: a cookie planted by
// someone else cannot go with a token of their choosing. Before login the
// session is the random id in the csrf cookie, which GET requests set. A
// missing or wrong token is a 403 and changes nothing.
func (s *Server) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		subject := ""
		if sess := session(c); sess != nil && sess.ID != "" {
			subject = "session:" + sess.ID
		} else if ck, err := c.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 {
			subject = "visitor:" + ck.Value
		}
		req := c.Request()
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			if subject == "" {
				id, err := randomToken(32)
				if err != nil {
					return err
				}
				subject = "visitor:" + id
				c.SetCookie(&http.Cookie{Name: csrfCookie, Value: id, Path: "/", HttpOnly: true,
					Secure: s.secureRequest(c), SameSite: http.SameSiteLaxMode})
			}
		default:
			sent := req.Header.Get(csrfHeader)
			if sent == "" && isMultipart(req) {
				// Parsing a multipart body here would read whole files
				// into memory or temporary files. Only routes that read
				// the body as a stream take it, and they check the
				// _csrf part (sent first) with checkStreamedCSRF before
				// they store anything.
				if subject == "" || !streamedForms[c.Path()] {
					return errCSRF
				}
				c.Set(ctxCSRFSubject, subject)
				break
			}
			if sent == "" {
				sent = req.PostFormValue(csrfField)
			}
			if !s.csrfMatches(subject, sent) {
				return errCSRF
			}
		}
		c.Set(ctxCSRF, s.csrfFor(subject))
		return next(c)
	}
}

var errCSRF = echo.NewHTTPError(http.StatusForbidden,
	"This form has expired or did not come from KillrChat. Reload the page and try again.")

// csrfMatches reports whether sent is the token of subject.
func (s *Server) csrfMatches(subject, sent string) bool {
	return subject != "" && hmac.Equal([]byte(sent), []byte(s.csrfFor(subject)))
}

// checkStreamedCSRF checks the _csrf field that a streamed multipart form
// sent in its body, for a request whose header carried no token; a
// request whose header token checkCSRF accepted passes.
func (s *Server) checkStreamedCSRF(c echo.Context, sent string) error {
	subject, pending := c.Get(ctxCSRFSubject).(string)
	if pending && !s.csrfMatches(subject, sent) {
		return errCSRF
	}
	return nil
}

// needsStreamedCSRF reports whether the token is still to be read from
// the body (see checkCSRF).
func needsStreamedCSRF(c echo.Context) bool {
	_, pending := c.Get(ctxCSRFSubject).(string)
	return pending
}

// isMultipart reports whether a request's body is multipart/form-data.
func isMultipart(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "multipart/form-data"
}

// csrfFor is the token of a session or visitor id.
func (s *Server) csrfFor(subject string) string {
	m := hmac.New(sha256.New, s.cfg.SessionKey)
	m.Write([]byte("killrchat csrf\x00" + subject))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func csrfToken(c echo.Context) string {
	t, _ := c.Get(ctxCSRF).(string)
	return t
}

// rateLimit limits login and sign-up attempts per client IP, per instance.
// The IP is echo's RealIP, which trusts X-Forwarded-For only from the
// proxies configured in main.
func (s *Server) rateLimit() echo.MiddlewareFunc {
	return middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
			Rate: rate.Limit(float64(s.cfg.AuthRate) / 60), Burst: s.cfg.AuthRate, ExpiresIn: 10 * time.Minute,
		}),
		IdentifierExtractor: func(c echo.Context) (string, error) { return c.RealIP(), nil },
		ErrorHandler: func(c echo.Context, err error) error {
			return echo.NewHTTPError(http.StatusForbidden, "Your address could not be read.")
		},
		DenyHandler: func(c echo.Context, id string, err error) error {
			c.Response().Header().Set("Retry-After", "60")
			return echo.NewHTTPError(http.StatusTooManyRequests,
				"Too many attempts from your address. Please wait a minute and try again.")
		},
	})
}

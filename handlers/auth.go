// This file owns who is acting: the session loaded per request, the typed
// accessor for the logged-in user, the login guard, CSRF tokens and the
// rate limit on login and sign-up.
package handlers

import (
	"crypto/subtle"
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
		if err := s.db.DeleteSession(c.Request().Context(), old.ID); err != nil {
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

// checkCSRF requires the double-submit token on every state-changing
// request: the form field _csrf or header X-CSRF-Token must equal the
// visitor's csrf cookie. A missing or wrong token is a 403 and changes
// nothing. GET requests get the cookie if they lack it.
func (s *Server) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token := ""
		if ck, err := c.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 {
			token = ck.Value
		}
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			if token == "" {
				t, err := randomToken(32)
				if err != nil {
					return err
				}
				token = t
				c.SetCookie(&http.Cookie{Name: csrfCookie, Value: token, Path: "/", HttpOnly: true,
					Secure: s.cfg.SecureCookies || c.Request().TLS != nil, SameSite: http.SameSiteLaxMode})
			}
		default:
			sent := c.Request().Header.Get(csrfHeader)
			if sent == "" {
				sent = c.FormValue(csrfField)
			}
			if token == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
				return echo.NewHTTPError(http.StatusForbidden,
					"This form has expired or did not come from KillrChat. Reload the page and try again.")
			}
		}
		c.Set(ctxCSRF, token)
		return next(c)
	}
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

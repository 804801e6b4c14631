// This file owns who is acting: the session loaded per request, the typed
// accessor for the logged-in user, the login guard, CSRF tokens and the
// rate limit on login and sign-up.

package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/web/session"
)

const ctxSession = "session"

// loadSession puts the request's session in the context, and extends an
// idle session's lifetime now and then.
func (s *Server) loadSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		sess, err := s.sessions.Get(c.Request(), session.CookieName)
		if err != nil {
			return err // the database is down: 503, not "logged out"
		}
		c.Set(ctxSession, sess)
		if _, ok := CurrentUser(c); ok && session.Stale(sess) {
			if err := sess.Save(c.Request(), c.Response()); err != nil {
				s.log.Warn("session: extend", "err", err)
			}
		}
		return next(c)
	}
}

func Session(c echo.Context) *sessions.Session {
	sess, _ := c.Get(ctxSession).(*sessions.Session)
	return sess
}

// CurrentUser is the logged-in user, from the session only.
func CurrentUser(c echo.Context) (chat.UserRef, bool) {
	sess := Session(c)
	if sess == nil {
		return chat.UserRef{}, false
	}
	login, _ := sess.Values[session.KeyLogin].(string)
	if login == "" {
		return chat.UserRef{}, false
	}
	first, _ := sess.Values[session.KeyFirstname].(string)
	last, _ := sess.Values[session.KeyLastname].(string)
	return chat.UserRef{Login: login, Firstname: first, Lastname: last}, true
}

// MustUser is currentUser behind requireUser, where a user is certain.
func MustUser(c echo.Context) chat.UserRef {
	u, _ := CurrentUser(c)
	return u
}

// requireUser sends a logged-out visitor to the login page, which brings
// them back afterwards.
func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, ok := CurrentUser(c); ok {
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
		if IsHTMX(c) {
			c.Response().Header().Set("HX-Redirect", to)
			return c.NoContent(http.StatusUnauthorized)
		}
		return c.Redirect(http.StatusSeeOther, to)
	}
}

// LogIn starts a new session for u: a fresh id (never the one the visitor
// came with, against session fixation), the old row deleted.
func (s *Server) LogIn(c echo.Context, u chat.User, remember bool) error {
	old := Session(c)
	if old != nil && old.ID != "" {
		login, _ := old.Values[session.KeyLogin].(string)
		if err := s.db.DeleteSession(c.Request().Context(), login, old.ID); err != nil {
			return err
		}
		if oldUser, ok := CurrentUser(c); ok {
			s.app.SessionsEnded(c.Request().Context(), oldUser.Login, []string{old.ID})
		}
	}
	sess := sessions.NewSession(s.sessions, session.CookieName)
	opts := s.sessions.Options
	sess.Options = &opts
	sess.IsNew = true
	if remember {
		sess.Options.MaxAge = int(session.RememberFor / time.Second)
	}
	sess.Values[session.KeyLogin] = u.Login
	sess.Values[session.KeyFirstname] = u.Firstname
	sess.Values[session.KeyLastname] = u.Lastname
	sess.Values[session.KeyRemember] = remember
	if err := s.sessions.Save(c.Request(), c.Response(), sess); err != nil {
		return err
	}
	c.Set(ctxSession, sess)
	return nil
}

// SafeNext returns next if it is a path on this site, else "/": no open
// redirects through ?next=.
func SafeNext(next string) string {
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

// This file owns CSRF tokens: every state-changing request carries a
// token in the form field _csrf or the header X-CSRF-Token (never the URL,
// which leaks into logs and Referer). The token is an HMAC, under the
// server key, of the session id, so it is good for this session only: a
// cookie planted by someone else cannot go with a token of their choosing.
// Before login the session is the random id in the csrf cookie, which GET
// requests set. A missing or wrong token is a 403 and changes nothing.

package csrf

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/web"
)

const (
	cookieName = "killrchat_csrf"
	// Field is the form field that carries the token.
	Field  = "_csrf"
	header = "X-CSRF-Token"

	ctxCSRF = "csrf"
	// ctxCSRFSubject holds the session whose token a streamed multipart
	// body must still show (see Guard.Check).
	ctxCSRFSubject = "csrf-subject"
)

// Guard checks and issues the tokens.
type Guard struct {
	// Key signs the tokens.
	Key []byte
	// Session is the request's session id, "" before login.
	Session func(echo.Context) string
	// Secure says whether cookies set for the request must be Secure.
	Secure func(echo.Context) bool
	// Streamed are the routes whose multipart bodies are read as a
	// stream, with the token checked from the body (CheckStreamed); any
	// other route refuses a multipart body without the token header.
	Streamed map[string]bool
}

// Check is the middleware that requires the token on every
// state-changing request and makes the request's token for its forms.
func (x *Guard) Check(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		subject := ""
		if id := x.Session(c); id != "" {
			subject = "session:" + id
		} else if ck, err := c.Cookie(cookieName); err == nil && len(ck.Value) >= 32 {
			subject = "visitor:" + ck.Value
		}
		req := c.Request()
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			if subject == "" {
				id, err := web.RandomToken(32)
				if err != nil {
					return err
				}
				subject = "visitor:" + id
				c.SetCookie(&http.Cookie{Name: cookieName, Value: id, Path: "/", HttpOnly: true,
					Secure: x.Secure(c), SameSite: http.SameSiteLaxMode})
			}
		default:
			sent := req.Header.Get(header)
			if sent == "" && web.IsMultipart(req) {
				// Parsing a multipart body here would read whole files
				// into memory or temporary files. Only routes that read
				// the body as a stream take it, and they check the
				// _csrf part (sent first) with CheckStreamed before
				// they store anything.
				if subject == "" || !x.Streamed[c.Path()] {
					return ErrToken
				}
				c.Set(ctxCSRFSubject, subject)
				break
			}
			if sent == "" {
				sent = req.PostFormValue(Field)
			}
			if !x.matches(subject, sent) {
				return ErrToken
			}
		}
		c.Set(ctxCSRF, x.tokenFor(subject))
		return next(c)
	}
}

// ErrToken is the answer to a request without its token, or with a
// wrong one.
var ErrToken = echo.NewHTTPError(http.StatusForbidden,
	"This form has expired or did not come from KillrChat. Reload the page and try again.")

// matches reports whether sent is the token of subject.
func (x *Guard) matches(subject, sent string) bool {
	return subject != "" && hmac.Equal([]byte(sent), []byte(x.tokenFor(subject)))
}

// CheckStreamed checks the _csrf field that a streamed multipart form
// sent in its body, for a request whose header carried no token; a
// request whose header token Check accepted passes.
func (x *Guard) CheckStreamed(c echo.Context, sent string) error {
	subject, pending := c.Get(ctxCSRFSubject).(string)
	if pending && !x.matches(subject, sent) {
		return ErrToken
	}
	return nil
}

// NeedsStreamed reports whether the token is still to be read from the
// body (see Check).
func NeedsStreamed(c echo.Context) bool {
	_, pending := c.Get(ctxCSRFSubject).(string)
	return pending
}

// tokenFor is the token of a session or visitor id.
func (x *Guard) tokenFor(subject string) string {
	m := hmac.New(sha256.New, x.Key)
	m.Write([]byte("killrchat csrf\x00" + subject))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Token is the request's token, for its forms.
func Token(c echo.Context) string {
	t, _ := c.Get(ctxCSRF).(string)
	return t
}

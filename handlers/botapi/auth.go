// This file owns who a request of the API is: its bearer token, checked
// once and cached per instance (see the package comment), and the JSON
// answers of errors.

package botapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/web"
)

const (
	// tokenTTL bounds how long an instance trusts a token it checked,
	// should it miss an invalidation.
	tokenTTL = time.Minute
	// tokensMax bounds the cache; past it, it starts again empty.
	tokensMax = 10000
	botKey    = "botapi.bot"
)

// Tokens are the token checks of the use cases (service.Service).
type Tokens interface {
	BotByToken(ctx context.Context, token string) (chat.User, error)
}

// Watcher tells the cache what to forget (handlers.Server).
type Watcher interface {
	WatchAccounts(forget func(logins []string), reset func())
}

type cachedBot struct {
	bot chat.User
	at  time.Time
}

// tokenCache maps a token's sha256 to its bot.
type tokenCache struct {
	mu      sync.Mutex
	entries map[[32]byte]cachedBot
	// gen counts invalidations: a check that saw one begin meanwhile
	// does not cache its answer.
	gen uint64
}

func newTokenCache(w Watcher) *tokenCache {
	c := &tokenCache{entries: map[[32]byte]cachedBot{}}
	w.WatchAccounts(c.forget, c.reset)
	return c
}

func (c *tokenCache) forget(logins []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, e := range c.entries {
		for _, l := range logins {
			if e.bot.Login == chat.NameKey(l) {
				delete(c.entries, k)
			}
		}
	}
}

func (c *tokenCache) reset() {
	c.mu.Lock()
	c.entries = map[[32]byte]cachedBot{}
	c.gen++
	c.mu.Unlock()
}

func (c *tokenCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *tokenCache) get(k [32]byte) (chat.User, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || time.Since(e.at) > tokenTTL {
		return chat.User{}, false
	}
	return e.bot, true
}

// put caches bot under k unless an invalidation came since the check
// began (gen, as read before it, changed), so a revocation racing the
// check is never undone by it.
func (c *tokenCache) put(k [32]byte, bot chat.User, gen uint64, started time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.entries) >= tokensMax {
		c.entries = map[[32]byte]cachedBot{}
	}
	c.entries[k] = cachedBot{bot: bot, at: started}
}

// authenticate is middleware: the bot of the request's bearer token,
// or a JSON 401.
func (m *module) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token, ok := bearer(c.Request().Header.Get(echo.HeaderAuthorization))
		if !ok || !chat.WellFormedBotToken(token) {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="killrchat"`)
			return jsonError(c, http.StatusUnauthorized, "Send a bot's API token as \"Authorization: Bearer <token>\".")
		}
		k := sha256.Sum256([]byte(token))
		bot, ok := m.tokens.get(k)
		if !ok {
			gen := m.tokens.generation()
			started := time.Now()
			u, err := m.app.BotByToken(c.Request().Context(), token)
			if errors.Is(err, service.ErrBadToken) {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="killrchat", error="invalid_token"`)
				return jsonError(c, http.StatusUnauthorized, "This API token is not valid: it may have been revoked or rotated.")
			}
			if err != nil {
				return m.fail(c, err)
			}
			m.tokens.put(k, u, gen, started)
			bot = u
		}
		c.Set(botKey, bot)
		return next(c)
	}
}

// bearer is the token of an Authorization header's Bearer scheme.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// botOf is the bot a request authenticated as.
func botOf(c echo.Context) chat.User { return c.Get(botKey).(chat.User) }

// jsonError writes {"error": msg} with status.
func jsonError(c echo.Context, status int, msg string) error {
	return c.JSON(status, map[string]string{"error": msg})
}

// fail answers err as JSON with the status and sentence the pages
// would give it (web.StatusOf); a 5xx is logged.
func (m *module) fail(c echo.Context, err error) error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		return jsonError(c, he.Code, msg)
	}
	status, msg := web.StatusOf(err)
	var v chat.ValidationError
	if errors.As(err, &v) {
		parts := make([]string, 0, len(v))
		for field, problem := range v {
			parts = append(parts, field+": "+problem)
		}
		msg = strings.Join(parts, "; ")
	}
	if status >= 500 {
		m.log.Error("bot api", "path", c.Path(), "status", strconv.Itoa(status), "err", err)
	}
	return jsonError(c, status, msg)
}

// This file owns the API's rate limit: a token bucket per bot, told on
// every answer in X-RateLimit-Limit (the burst), -Remaining (requests
// left now) and -Reset (seconds until the bucket is full again).

package botapi

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/killrchat/killrchat/web/limit"
)

// botsMax bounds the buckets kept; past it, they start again full.
const botsMax = 10000

type botRates struct {
	mu      sync.Mutex
	rate    limit.Rate
	buckets map[string]*rate.Limiter
}

func newBotRates(r limit.Rate) *botRates {
	return &botRates{rate: r, buckets: map[string]*rate.Limiter{}}
}

// take takes a token of login's bucket, and says what is left and when
// the bucket is full again.
func (b *botRates) take(login string) (ok bool, remaining int, reset, wait time.Duration) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.buckets[login]
	if l == nil {
		if len(b.buckets) >= botsMax {
			b.buckets = map[string]*rate.Limiter{}
		}
		l = rate.NewLimiter(rate.Every(b.rate.Per), b.rate.Burst)
		b.buckets[login] = l
	}
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		ok, wait = false, d
	} else {
		ok = true
	}
	tokens := l.TokensAt(now)
	remaining = max(0, int(math.Floor(tokens)))
	reset = time.Duration((float64(b.rate.Burst) - tokens) * float64(b.rate.Per))
	return ok, remaining, reset, wait
}

// limited is middleware, after authenticate: the bot's bucket, its
// headers on every answer, 429 past it.
func (m *module) limited(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ok, remaining, reset, wait := m.rates.take(botOf(c).Login)
		h := c.Response().Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(m.rates.rate.Burst))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		h.Set("X-RateLimit-Reset", strconv.Itoa(int(math.Ceil(reset.Seconds()))))
		if !ok {
			h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
			return jsonError(c, http.StatusTooManyRequests, "This bot makes requests too fast: wait and try again.")
		}
		return next(c)
	}
}

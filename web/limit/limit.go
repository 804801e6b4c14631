// This file owns the per-person and per-address limits on writes: token
// buckets keyed by login (or client IP), kept in this instance's memory. A
// cluster of N instances therefore allows up to N times each rate; the
// limits are there to stop one client from flooding, not to meter fairly.

package limit

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// Rate is a token bucket: Burst actions at once, then Per each.
type Rate struct {
	Burst int
	Per   time.Duration
}

// Writes are the per-user write limits; a zero Rate takes its default.
type Writes struct {
	// Messages limits posts (default: 20 at once, then 5 a second).
	Messages Rate
	// Rooms limits room creation (default: 10 an hour).
	Rooms Rate
	// Membership limits joins and leaves together (default: 10 at once,
	// then 1 a second).
	Membership Rate
	// Passwords limits password changes, per person and per address
	// (default: Config.AuthRate a minute, like logins).
	Passwords Rate
	// UploadBytes limits uploaded bytes, one token a byte (default: 500
	// MiB an hour, all at once if need be).
	UploadBytes Rate
	// Searches limits searches, each a few dozen reads (default: 30 a
	// minute, all at once if need be).
	Searches Rate
	// Admin limits an administrator's actions on /admin (default: 30 at
	// once, then one every 2 seconds).
	Admin Rate
	// Hooks limits the posts to each incoming webhook (default: 20 at
	// once, then one a second: Slack's documented pace of a message a
	// second per channel, with short bursts).
	Hooks Rate
	// API limits each bot's requests of the API (default: 60 at once,
	// then 10 a second).
	API Rate
}

// WithDefaults fills each zero Rate with its default.
func (l Writes) WithDefaults() Writes {
	def := func(r *Rate, burst int, per time.Duration) {
		if r.Burst <= 0 {
			r.Burst = burst
		}
		if r.Per <= 0 {
			r.Per = per
		}
	}
	def(&l.Messages, 20, time.Second/5)
	def(&l.Rooms, 10, time.Hour/10)
	def(&l.Membership, 10, time.Second)
	def(&l.UploadBytes, DefaultUploadBytesPerHour, time.Hour/DefaultUploadBytesPerHour)
	def(&l.Searches, 30, time.Minute/30)
	def(&l.Admin, 30, 2*time.Second)
	def(&l.Hooks, 20, time.Second)
	def(&l.API, 60, time.Second/10)
	return l
}

// Keyed is one token bucket per key. Buckets that have refilled
// completely are forgotten, so memory follows the number of active keys.
type Keyed struct {
	rate    Rate
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	swept   time.Time
	now     func() time.Time
}

// NewKeyed gives every key a bucket of r.
func NewKeyed(r Rate) *Keyed {
	return &Keyed{rate: r, buckets: map[string]*rate.Limiter{}, swept: time.Now(), now: time.Now}
}

// Allow takes one token for key. If none is left it takes nothing and
// says how long until one is.
func (l *Keyed) Allow(key string) (bool, time.Duration) { return l.AllowN(key, 1) }

// AllowN takes n tokens for key, or none and says how long until n are
// there (a very long time if n is more than the burst).
func (l *Keyed) AllowN(key string, n int) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b := l.buckets[key]
	if b == nil {
		b = rate.NewLimiter(rate.Every(l.rate.Per), l.rate.Burst)
		l.buckets[key] = b
	}
	if n > l.rate.Burst {
		return false, time.Duration(n) * l.rate.Per
	}
	r := b.ReserveN(now, n)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// sweep drops full buckets, at most once per refill period of a bucket.
func (l *Keyed) sweep(now time.Time) {
	full := time.Duration(l.rate.Burst) * l.rate.Per
	if now.Sub(l.swept) < max(full, time.Minute) {
		return
	}
	l.swept = now
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.rate.Burst) {
			delete(l.buckets, k)
		}
	}
}

// By is middleware that takes a token of l for the request's key before
// the handler runs, so a refused request stores nothing.
func By(l *Keyed, what string, key func(echo.Context) string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if ok, wait := l.Allow(key(c)); !ok {
				return TooMany(c, wait, what)
			}
			return next(c)
		}
	}
}

// TooMany is the 429 a person reads: what they did too often and when to
// try again, also as Retry-After (whole seconds, at least one).
func TooMany(c echo.Context, wait time.Duration, what string) error {
	secs := int(math.Ceil(wait.Seconds()))
	secs = max(secs, 1)
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return echo.NewHTTPError(http.StatusTooManyRequests,
		fmt.Sprintf("You are %s too fast. Please wait %s and try again.", what, seconds(secs)))
}

func seconds(n int) string {
	switch {
	case n == 1:
		return "a second"
	case n < 120:
		return strconv.Itoa(n) + " seconds"
	default:
		return strconv.Itoa((n+59)/60) + " minutes"
	}
}

// DefaultUploadBytesPerHour is the default of Writes.UploadBytes.
const DefaultUploadBytesPerHour = 500 << 20

// Unlimited lifts the per-user write limits, for load tests and test
// suites that write far faster than any person.
var Unlimited = Writes{
	Messages:   Rate{Burst: 1 << 30, Per: time.Nanosecond},
	Rooms:      Rate{Burst: 1 << 30, Per: time.Nanosecond},
	Membership: Rate{Burst: 1 << 30, Per: time.Nanosecond},
	// A terabyte at once, so load tests never wait on it.
	UploadBytes: Rate{Burst: 1 << 40, Per: time.Nanosecond},
	Searches:    Rate{Burst: 1 << 30, Per: time.Nanosecond},
	Admin:       Rate{Burst: 1 << 30, Per: time.Nanosecond},
	Hooks:       Rate{Burst: 1 << 30, Per: time.Nanosecond},
	API:         Rate{Burst: 1 << 30, Per: time.Nanosecond},
}

// UserCounts caps what one person has under way on this instance at
// once (uploads).
type UserCounts struct {
	mu     sync.Mutex
	max    int
	byUser map[string]int
}

// NewUserCounts allows max at once per person.
func NewUserCounts(max int) *UserCounts {
	return &UserCounts{max: max, byUser: map[string]int{}}
}

// Take counts one more upload of login, or answers false at the cap.
func (u *UserCounts) Take(login string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byUser[login] >= u.max {
		return false
	}
	u.byUser[login]++
	return true
}

// Give ends one upload of login.
func (u *UserCounts) Give(login string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byUser[login]--; u.byUser[login] <= 0 {
		delete(u.byUser, login)
	}
}

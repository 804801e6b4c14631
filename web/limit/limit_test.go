package limit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/web/limit"
)

// clock is a time that tests move.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// keyed is a Keyed of r on a clock of its own.
func keyed(r limit.Rate) (*limit.Keyed, *clock) {
	c := &clock{now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := limit.NewKeyed(r)
	limit.SetClock(l, c.Now)
	return l, c
}

func TestBurst(t *testing.T) {
	t.Parallel()
	l, _ := keyed(limit.Rate{Burst: 3, Per: time.Second})
	for i := range 3 {
		if ok, wait := l.Allow("ada"); !ok || wait != 0 {
			t.Fatalf("action %d of a burst of 3: %v, wait %v", i+1, ok, wait)
		}
	}
	ok, wait := l.Allow("ada")
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("past the burst: %v, wait %v; want refused, under a second", ok, wait)
	}
}

func TestRefill(t *testing.T) {
	t.Parallel()
	l, c := keyed(limit.Rate{Burst: 2, Per: time.Second})
	l.Allow("ada")
	l.Allow("ada")
	if ok, wait := l.Allow("ada"); ok || wait != time.Second {
		t.Fatalf("empty bucket: %v, wait %v; want a second", ok, wait)
	}
	c.Advance(400 * time.Millisecond)
	if ok, wait := l.Allow("ada"); ok || wait != 600*time.Millisecond {
		t.Fatalf("0.4 tokens: %v, wait %v; want 600ms", ok, wait)
	}
	c.Advance(600 * time.Millisecond)
	if ok, _ := l.Allow("ada"); !ok {
		t.Fatal("refused after a refill of one")
	}
	if ok, _ := l.Allow("ada"); ok {
		t.Fatal("a refill of one allowed two")
	}
	c.Advance(time.Hour) // refills to the burst, never past it
	for i := range 2 {
		if ok, _ := l.Allow("ada"); !ok {
			t.Fatalf("action %d after an hour", i+1)
		}
	}
	if ok, _ := l.Allow("ada"); ok {
		t.Fatal("an hour's rest filled the bucket past its burst")
	}
}

func TestPerKey(t *testing.T) {
	t.Parallel()
	l, _ := keyed(limit.Rate{Burst: 1, Per: time.Minute})
	if ok, _ := l.Allow("ada"); !ok {
		t.Fatal("ada's first")
	}
	if ok, _ := l.Allow("ada"); ok {
		t.Fatal("ada's second")
	}
	if ok, _ := l.Allow("bob"); !ok {
		t.Fatal("bob was refused for ada's actions")
	}
}

func TestAllowN(t *testing.T) {
	t.Parallel()
	l, c := keyed(limit.Rate{Burst: 100, Per: time.Second})
	if ok, _ := l.AllowN("ada", 60); !ok {
		t.Fatal("60 of 100")
	}
	ok, wait := l.AllowN("ada", 60)
	if ok || wait != 20*time.Second {
		t.Fatalf("60 more of 40 left: %v, wait %v; want 20s", ok, wait)
	}
	if ok, _ := l.AllowN("ada", 40); !ok {
		t.Fatal("a refused AllowN took tokens")
	}
	if ok, wait := l.AllowN("ada", 101); ok || wait != 101*time.Second {
		t.Fatalf("more than the burst: %v, wait %v", ok, wait)
	}
	c.Advance(100 * time.Second)
	if ok, _ := l.AllowN("ada", 101); ok {
		t.Fatal("more than the burst was allowed")
	}
}

// TestFullBucketsAreForgotten: memory follows the active keys.
func TestFullBucketsAreForgotten(t *testing.T) {
	t.Parallel()
	l, c := keyed(limit.Rate{Burst: 2, Per: time.Second})
	for _, k := range []string{"a", "b", "c"} {
		l.Allow(k)
	}
	if n := limit.Buckets(l); n != 3 {
		t.Fatalf("%d buckets, want 3", n)
	}
	c.Advance(30 * time.Second) // full, but sweeps wait a minute
	l.Allow("d")
	if n := limit.Buckets(l); n != 4 {
		t.Fatalf("%d buckets after 30 s, want 4 (no sweep yet)", n)
	}
	c.Advance(31 * time.Second)
	l.Allow("e")
	if n := limit.Buckets(l); n != 1 {
		t.Fatalf("%d buckets after a sweep, want only e's", n)
	}
}

func TestUserCounts(t *testing.T) {
	t.Parallel()
	u := limit.NewUserCounts(2)
	if !u.Take("ada") || !u.Take("ada") {
		t.Fatal("two of two refused")
	}
	if u.Take("ada") {
		t.Fatal("a third of two taken")
	}
	if !u.Take("bob") {
		t.Fatal("bob refused for ada's count")
	}
	u.Give("ada")
	if !u.Take("ada") {
		t.Fatal("refused after one was given back")
	}
	u.Give("ada")
	u.Give("ada")
	u.Give("ada") // one too many: the count stays at zero, not below
	if !u.Take("ada") || !u.Take("ada") || u.Take("ada") {
		t.Fatal("after giving back all and more, the cap is not two")
	}
}

func TestUserCountsConcurrently(t *testing.T) {
	t.Parallel()
	u := limit.NewUserCounts(5)
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if u.Take("ada") {
				mu.Lock()
				taken++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if taken != 5 {
		t.Fatalf("%d taken at once, cap 5", taken)
	}
}

func TestBy(t *testing.T) {
	t.Parallel()
	l, _ := keyed(limit.Rate{Burst: 1, Per: time.Minute})
	e := echo.New()
	ran := 0
	e.POST("/post", func(c echo.Context) error { ran++; return c.NoContent(http.StatusNoContent) },
		limit.By(l, "posting", func(c echo.Context) string { return c.Request().Header.Get("X-Who") }))
	send := func(who string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/post", nil)
		req.Header.Set("X-Who", who)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}
	if rec := send("ada"); rec.Code != http.StatusNoContent {
		t.Fatalf("first: %d", rec.Code)
	}
	rec := send("ada")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "60" {
		t.Fatalf("second: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if !strings.Contains(rec.Body.String(), "posting too fast") {
		t.Fatalf("429 says %q", rec.Body)
	}
	if rec := send("bob"); rec.Code != http.StatusNoContent {
		t.Fatalf("bob: %d", rec.Code)
	}
	if ran != 2 {
		t.Fatalf("the handler ran %d times, want 2: a refused request must not reach it", ran)
	}
}

func TestTooMany(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wait       time.Duration
		retryAfter string
		says       string
	}{
		{0, "1", "wait a second"},
		{300 * time.Millisecond, "1", "wait a second"},
		{time.Second, "1", "wait a second"},
		{1001 * time.Millisecond, "2", "wait 2 seconds"},
		{119 * time.Second, "119", "wait 119 seconds"},
		{120 * time.Second, "120", "wait 2 minutes"},
		{121 * time.Second, "121", "wait 3 minutes"},
		{time.Hour, "3600", "wait 60 minutes"},
	} {
		t.Run(tc.wait.String(), func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", nil), rec)
			err := limit.TooMany(c, tc.wait, "joining rooms")
			var he *echo.HTTPError
			if !errors.As(err, &he) || he.Code != http.StatusTooManyRequests {
				t.Fatalf("TooMany = %v", err)
			}
			msg, _ := he.Message.(string)
			if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			if want := "You are joining rooms too fast. Please " + tc.says + " and try again."; msg != want {
				t.Errorf("says %q, want %q", msg, want)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	d := limit.Writes{}.WithDefaults()
	for _, tc := range []struct {
		name string
		got  limit.Rate
		want limit.Rate
	}{
		{"Messages", d.Messages, limit.Rate{Burst: 20, Per: 200 * time.Millisecond}},
		{"Rooms", d.Rooms, limit.Rate{Burst: 10, Per: 6 * time.Minute}},
		{"Membership", d.Membership, limit.Rate{Burst: 10, Per: time.Second}},
		{"UploadBytes", d.UploadBytes, limit.Rate{Burst: limit.DefaultUploadBytesPerHour, Per: time.Hour / limit.DefaultUploadBytesPerHour}},
		// Passwords take AuthRate's default in handlers, not here.
		{"Passwords", d.Passwords, limit.Rate{}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
	set := limit.Writes{Messages: limit.Rate{Burst: 3}, Rooms: limit.Rate{Per: time.Minute}}.WithDefaults()
	if set.Messages != (limit.Rate{Burst: 3, Per: 200 * time.Millisecond}) || set.Rooms != (limit.Rate{Burst: 10, Per: time.Minute}) {
		t.Errorf("a half-set Rate: %+v, %+v", set.Messages, set.Rooms)
	}
}

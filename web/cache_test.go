package web_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/killrchat/killrchat/web"
)

// rowCache is a RowCache on a clock the test moves.
func rowCache(ttl time.Duration, max int) (*web.RowCache[string], *time.Time) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	c := web.NewRowCache[string](ttl, max)
	web.SetClock(c, func() time.Time { return now })
	return c, &now
}

// reader counts its reads.
type reader struct {
	n   int
	val string
	err error
}

func (r *reader) read() (string, error) { r.n++; return r.val, r.err }

func TestRowCacheLoad(t *testing.T) {
	t.Parallel()
	c, now := rowCache(10*time.Second, 10)
	r := &reader{val: "room"}
	if v, cached, err := c.Load("k", r.read); v != "room" || cached || err != nil {
		t.Fatalf("first load: %q %v %v", v, cached, err)
	}
	if v, cached, err := c.Load("k", r.read); v != "room" || !cached || err != nil || r.n != 1 {
		t.Fatalf("second load: %q %v %v, %d reads", v, cached, err, r.n)
	}
	*now = now.Add(10 * time.Second)
	if _, cached, _ := c.Load("k", r.read); cached || r.n != 2 {
		t.Fatalf("at its TTL: cached %v, %d reads", cached, r.n)
	}
}

func TestRowCacheErrorsAreNotCached(t *testing.T) {
	t.Parallel()
	c, _ := rowCache(time.Minute, 10)
	failing := &reader{err: errors.New("unavailable")}
	for range 2 {
		if _, _, err := c.Load("k", failing.read); err == nil {
			t.Fatal("no error")
		}
	}
	if failing.n != 2 || web.Len(c) != 0 {
		t.Fatalf("%d reads, %d rows: an error was cached", failing.n, web.Len(c))
	}
}

func TestRowCacheSize(t *testing.T) {
	t.Parallel()
	c, _ := rowCache(time.Minute, 3)
	for i := range 3 {
		c.Put(fmt.Sprint("k", i), "v", c.Snapshot())
	}
	c.Peek("k0") // k1 is now the least recently used
	c.Put("k3", "v", c.Snapshot())
	for k, want := range map[string]bool{"k0": true, "k1": false, "k2": true, "k3": true} {
		if _, ok := c.Peek(k); ok != want {
			t.Errorf("%s cached %v, want %v", k, ok, want)
		}
	}
	if web.Len(c) != 3 {
		t.Fatalf("%d rows, max 3", web.Len(c))
	}
}

func TestRowCacheForgetAndReset(t *testing.T) {
	t.Parallel()
	c, _ := rowCache(time.Minute, 10)
	for _, k := range []string{"a", "b", "c"} {
		c.Put(k, k, c.Snapshot())
	}
	c.Forget("a", "b", "unknown")
	for k, want := range map[string]bool{"a": false, "b": false, "c": true} {
		if _, ok := c.Peek(k); ok != want {
			t.Errorf("after Forget, %s cached %v, want %v", k, ok, want)
		}
	}
	c.Reset()
	if _, ok := c.Peek("c"); ok || web.Len(c) != 0 {
		t.Fatal("a row survived Reset")
	}
}

// TestRowCacheInvalidationWinsTheRace: a row read while an invalidation
// came is not cached, whichever invalidation it was.
func TestRowCacheInvalidationWinsTheRace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		invalidate func(*web.RowCache[string])
	}{
		{"Forget", func(c *web.RowCache[string]) { c.Forget("k") }},
		{"ForgetAnother", func(c *web.RowCache[string]) { c.Forget("other") }},
		{"Reset", func(c *web.RowCache[string]) { c.Reset() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := rowCache(time.Minute, 10)
			v, _, err := c.Load("k", func() (string, error) {
				tc.invalidate(c) // lands while the read is in flight
				return "stale", nil
			})
			if v != "stale" || err != nil {
				t.Fatalf("load: %q %v", v, err)
			}
			if _, ok := c.Peek("k"); ok {
				t.Fatal("the raced read was cached")
			}
			before := c.Snapshot()
			tc.invalidate(c)
			c.Put("k", "late", before)
			if _, ok := c.Peek("k"); ok {
				t.Fatal("a Put under an old snapshot was cached")
			}
		})
	}
}

func TestRowCacheOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		max  int
	}{{"ZeroTTL", 0, 10}, {"ZeroSize", time.Minute, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := rowCache(tc.ttl, tc.max)
			r := &reader{val: "v"}
			c.Load("k", r.read)
			if _, cached, _ := c.Load("k", r.read); cached || r.n != 2 {
				t.Fatalf("cached %v, %d reads: the cache is off", cached, r.n)
			}
			if _, ok := c.Peek("k"); ok {
				t.Fatal("Peek found a row in a cache that is off")
			}
		})
	}
}

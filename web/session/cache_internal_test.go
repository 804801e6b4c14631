package session

import (
	"fmt"
	"testing"
	"time"
)

// cacheAt is a session cache on a clock the test moves.
func cacheAt(ttl time.Duration, max int) (*sessionCache, *time.Time) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	c := newSessionCache(ttl, max)
	c.now = func() time.Time { return now }
	return c, &now
}

func TestSessionCacheTTL(t *testing.T) {
	t.Parallel()
	c, now := cacheAt(10*time.Second, 10)
	c.put("d1", sessionValues{Login: "ada"})
	*now = now.Add(9 * time.Second)
	if v, ok := c.get("d1"); !ok || v.Login != "ada" {
		t.Fatalf("within the TTL: %v %v", v, ok)
	}
	*now = now.Add(time.Second)
	if _, ok := c.get("d1"); ok {
		t.Fatal("served at its TTL")
	}
	if len(c.byKey) != 0 || c.lru.Len() != 0 {
		t.Fatal("an expired entry was kept")
	}
}

func TestSessionCacheSize(t *testing.T) {
	t.Parallel()
	c, _ := cacheAt(time.Minute, 3)
	for i := range 3 {
		c.put(fmt.Sprint("d", i), sessionValues{Login: "ada"})
	}
	c.get("d0") // d1 is now the least recently used
	c.put("d3", sessionValues{Login: "bob"})
	for d, want := range map[string]bool{"d0": true, "d1": false, "d2": true, "d3": true} {
		if _, ok := c.get(d); ok != want {
			t.Errorf("%s cached %v, want %v", d, ok, want)
		}
	}
	c.put("d3", sessionValues{Login: "bob", Firstname: "Bob"}) // a rewrite is no new entry
	if c.lru.Len() != 3 {
		t.Fatalf("%d entries, max 3", c.lru.Len())
	}
	if v, _ := c.get("d3"); v.Firstname != "Bob" {
		t.Fatal("a rewrite kept the old values")
	}
}

func TestSessionCacheForget(t *testing.T) {
	t.Parallel()
	fill := func() *sessionCache {
		c, _ := cacheAt(time.Minute, 10)
		c.put("ada1", sessionValues{Login: "ada"})
		c.put("ada2", sessionValues{Login: "ada"})
		c.put("ada3", sessionValues{Login: "ada"})
		c.put("bob1", sessionValues{Login: "bob"})
		return c
	}
	for _, tc := range []struct {
		name    string
		login   string
		room    string
		digests []string
		except  string
		left    []string
	}{
		{"Digests", "ada", "", []string{"ada1", "bob1", "unknown"}, "", []string{"ada2", "ada3"}},
		{"EveryOneOfLogin", "ada", "", nil, "", []string{"bob1"}},
		{"EveryOneButExcept", "ada", "", nil, "ada2", []string{"ada2", "bob1"}},
		{"EmptyDigests", "ada", "", []string{}, "", []string{"ada1", "ada2", "ada3", "bob1"}},
		// Leaving a room ends no session.
		{"Room", "ada", "general", nil, "", []string{"ada1", "ada2", "ada3", "bob1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := fill()
			c.forget(tc.login, tc.room, tc.digests, tc.except)
			var left []string
			for _, d := range []string{"ada1", "ada2", "ada3", "bob1"} {
				if _, ok := c.get(d); ok {
					left = append(left, d)
				}
			}
			if fmt.Sprint(left) != fmt.Sprint(tc.left) {
				t.Fatalf("left %v, want %v", left, tc.left)
			}
		})
	}
}

func TestSessionCacheReset(t *testing.T) {
	t.Parallel()
	c, _ := cacheAt(time.Minute, 10)
	c.put("d1", sessionValues{Login: "ada"})
	c.reset()
	if _, ok := c.get("d1"); ok || c.lru.Len() != 0 {
		t.Fatal("an entry survived reset")
	}
	c.put("d2", sessionValues{Login: "ada"})
	if _, ok := c.get("d2"); !ok {
		t.Fatal("the cache does not work after reset")
	}
}

// TestValuesRoundTrip: every known key survives valuesOf and into.
func TestValuesRoundTrip(t *testing.T) {
	t.Parallel()
	in := map[any]any{KeyLogin: "ada", KeyFirstname: "Ada", KeyLastname: "Lovelace", KeyRemember: true, KeySaved: int64(1700000000)}
	v, err := valuesOf(in)
	if err != nil {
		t.Fatal(err)
	}
	out := map[any]any{}
	v.into(out)
	if fmt.Sprint(out) != fmt.Sprint(in) {
		t.Fatalf("round trip: %v, want %v", out, in)
	}
}

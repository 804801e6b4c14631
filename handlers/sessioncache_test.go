package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/handlers"
)

// longCache keeps cached sessions for an hour, so only the hub (or a
// broker reconnect) can make an instance read a session again.
func longCache(c *handlers.Config) { c.SessionCacheTTL = time.Hour }

// refusedWithin polls until c's session is refused (redirect to login).
func refusedWithin(t *testing.T, c *client, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		p := c.get("/")
		if p.StatusCode == http.StatusSeeOther && strings.HasPrefix(p.Header.Get("Location"), "/login") {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("session still accepted after %v (status %d)", limit, p.StatusCode)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSessionCacheAcrossInstances: B has A's session cached (for an hour);
// a logout on A is refused on B at once, through the hub.
func TestSessionCacheAcrossInstances(t *testing.T) {
	ns := startNATS(t, -1)
	var logsA, logsB syncBuffer
	a := instance(t, ns.ClientURL(), &logsA, longCache)
	b := instance(t, ns.ClientURL(), &logsB, longCache)
	user := a.signedUp(t, unique("cached"))
	onB := user.on(b)
	if p := onB.get("/"); p.StatusCode != http.StatusOK {
		t.Fatalf("session on B: %d", p.StatusCode)
	}

	t.Run("CacheIsUsed", func(t *testing.T) {
		db.Recorder.Start()
		onB.get("/")
		for _, q := range db.Recorder.Stop() {
			if strings.Contains(q.Statement, "FROM sessions") {
				t.Fatalf("B read the session again: %s", q.Statement)
			}
		}
	})

	t.Run("LogoutOnA", func(t *testing.T) {
		if p := user.post("/logout", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d", p.StatusCode)
		}
		took := refusedWithin(t, onB, 5*time.Second)
		t.Logf("logout on A refused on B after %v", took)
	})

	t.Run("PasswordChangeOnA", func(t *testing.T) {
		login := unique("pwcache")
		keeper := a.signedUp(t, login)
		other := a.login(t, login).on(b)
		if p := other.get("/"); p.StatusCode != http.StatusOK {
			t.Fatalf("other session on B: %d", p.StatusCode)
		}
		p := keeper.post("/profile/password", map[string][]string{"old_password": {"password1"}, "password": {"newpassword1"}, "password_confirm": {"newpassword1"}})
		if p.StatusCode != http.StatusSeeOther {
			t.Fatalf("change password: %d", p.StatusCode)
		}
		took := refusedWithin(t, other, 5*time.Second)
		t.Logf("password change on A ended the other session on B after %v", took)
		if p := keeper.on(b).get("/"); p.StatusCode != http.StatusOK {
			t.Fatalf("the re-issued session is refused on B: %d", p.StatusCode)
		}
	})
}

// TestSessionCacheDroppedOnReconnect: a revocation B never heard of (the
// row deleted behind its back, as if the event was lost) stays cached
// until B loses and regains the broker, which drops its whole cache.
func TestSessionCacheDroppedOnReconnect(t *testing.T) {
	ns := startNATS(t, -1)
	addr := ns.Addr().String()
	var logs syncBuffer
	b := instance(t, ns.ClientURL(), &logs, longCache)
	login := unique("partition")
	c := b.signedUp(t, login)
	if p := c.get("/"); p.StatusCode != http.StatusOK {
		t.Fatalf("home: %d", p.StatusCode)
	}
	if err := db.DeleteSession(ctxT(t), login, c.sessionID(t)); err != nil {
		t.Fatal(err)
	}
	if p := c.get("/"); p.StatusCode != http.StatusOK {
		t.Fatalf("the cache was not used: %d", p.StatusCode)
	}
	ns.Shutdown()
	waitLog(t, &logs, "nats: lost the broker")
	var port int
	fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
	ns2 := startNATS(t, port)
	defer ns2.Shutdown()
	waitLog(t, &logs, "nats: reconnected")
	refusedWithin(t, c, 5*time.Second)
}

// TestSessionCacheTTL: with no event at all, an entry lives at most the TTL.
func TestSessionCacheTTL(t *testing.T) {
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.SessionCacheTTL = 300 * time.Millisecond })
	login := unique("ttl")
	c := a.signedUp(t, login)
	if p := c.get("/"); p.StatusCode != http.StatusOK {
		t.Fatalf("home: %d", p.StatusCode)
	}
	if err := db.DeleteSession(ctxT(t), login, c.sessionID(t)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(350 * time.Millisecond)
	refusedWithin(t, c, time.Second)
}

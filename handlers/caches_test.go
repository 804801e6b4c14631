package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
)

// longCaches keeps cached rooms, DMs and users for an hour, so only the
// hub (or a broker reconnect) can make an instance read them again.
func longCaches(c *handlers.Config) { c.CacheTTL = time.Hour }

// postStatus posts content in room as c and returns the status.
func postStatus(c *client, room, content string) int {
	return c.post("/rooms/"+room+"/messages", url.Values{"content": {content}}).StatusCode
}

// untilStatus polls f until it returns want, and says how long it took.
func untilStatus(t *testing.T, what string, want int, f func() int) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := f()
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%s: still %d after 5s, want %d", what, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRoomCacheAcrossInstances: B serves posts from its room cache (the
// only read of the room is the store's check after the insert, see
// store.SaveMessage), and joins, leaves and deletes on A reach B's caches
// through the hub at once.
func TestRoomCacheAcrossInstances(t *testing.T) {
	ns := startNATS(t, -1)
	var logsA, logsB syncBuffer
	a := instance(t, ns.ClientURL(), &logsA, longCaches)
	b := instance(t, ns.ClientURL(), &logsB, longCaches)
	alice, bob := a.signedUp(t, unique("alice")), a.signedUp(t, unique("bob"))
	room := roomWith(t, alice, bob)
	bobOnB := bob.on(b)
	postMessage(t, bobOnB, room, "first, which fills B's cache")

	t.Run("PostReadsNoRoom", func(t *testing.T) {
		// The invalidation of bob's join on A reaches B through the broker
		// and may land after B cached the room; a few posts give it time.
		// Every one of them reading twice (the participants before the
		// insert, the row's check after it) means the cache is not used.
		var reads []string
		for try := 0; try < 5; try++ {
			db.Recorder.Start()
			postMessage(t, bobOnB, room, "from the cache")
			reads = reads[:0]
			for _, q := range db.Recorder.Stop() {
				if strings.HasPrefix(strings.TrimSpace(q.Statement), "SELECT") {
					reads = append(reads, q.Statement)
				}
			}
			if len(reads) <= 1 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("every post on B read %d times: %v", len(reads), reads)
	})

	t.Run("JoinOnAPostOnB", func(t *testing.T) {
		// B has the room cached without carol: her post right after her
		// join is not refused (a cached "not a participant" is checked
		// again in Cassandra).
		carol := a.signedUp(t, unique("carol"))
		if p := carol.post("/rooms/"+room+"/join", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("join: %d", p.StatusCode)
		}
		if got := postStatus(carol.on(b), room, "just joined"); got != http.StatusSeeOther {
			t.Fatalf("post on B right after a join on A: %d", got)
		}
	})

	t.Run("SidebarAfterJoinOnA", func(t *testing.T) {
		// B's user cache has bob's list; his join on A shows on B.
		other := createRoom(t, alice)
		if n := bobOnB.get("/").doc.Find(fmt.Sprintf("#my-rooms a[href='/rooms/%s#latest']", room)).Length(); n != 1 {
			t.Fatalf("B's sidebar does not list bob's room (%d)", n)
		}
		if p := bob.post("/rooms/"+other+"/join", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("join: %d", p.StatusCode)
		}
		took := untilStatus(t, "the new room in B's sidebar", 1, func() int {
			return bobOnB.get("/").doc.Find(fmt.Sprintf("#my-rooms a[href='/rooms/%s#latest']", other)).Length()
		})
		t.Logf("a join on A showed in B's sidebar after %v", took)
	})

	t.Run("LeaveOnA", func(t *testing.T) {
		if p := bob.post("/rooms/"+room+"/leave", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("leave: %d", p.StatusCode)
		}
		took := untilStatus(t, "bob's post on B after leaving on A", http.StatusForbidden, func() int {
			return postStatus(bobOnB, room, "after leaving")
		})
		t.Logf("a leave on A refused the post on B after %v", took)
	})

	t.Run("DeleteOnA", func(t *testing.T) {
		aliceOnB := alice.on(b)
		if p := aliceOnB.get("/rooms/" + room); p.StatusCode != http.StatusOK {
			t.Fatalf("room page on B: %d", p.StatusCode)
		}
		if p := alice.post("/rooms/"+room+"/delete", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete: %d", p.StatusCode)
		}
		took := untilStatus(t, "the deleted room on B", http.StatusNotFound, func() int {
			return aliceOnB.get("/rooms/" + room).StatusCode
		})
		t.Logf("a delete on A answered 404 on B after %v", took)
		// Alice's list was cached on B with the room in it.
		if n := aliceOnB.get("/").doc.Find(fmt.Sprintf("#my-rooms a[href='/rooms/%s#latest']", room)).Length(); n != 0 {
			t.Errorf("B's sidebar still lists the deleted room")
		}
	})
}

// leaveBehindBack removes login from room in Cassandra without telling any
// instance, as if the invalidation had been lost.
func leaveBehindBack(t *testing.T, login, room string) {
	t.Helper()
	if err := db.LeaveRoom(ctxT(t), chat.UserRef{Login: login}, room); err != nil {
		t.Fatal(err)
	}
}

// TestRoomCacheDroppedOnReconnect: a leave B never heard of stays cached
// (the page still offers the composer) until B loses and regains the
// broker, which drops all its caches.
func TestRoomCacheDroppedOnReconnect(t *testing.T) {
	ns := startNATS(t, -1)
	addr := ns.Addr().String()
	var logs syncBuffer
	b := instance(t, ns.ClientURL(), &logs, longCaches)
	alice, bobLogin := b.signedUp(t, unique("alice")), unique("bob")
	bob := b.signedUp(t, bobLogin)
	room := roomWith(t, alice, bob)
	postMessage(t, bob, room, "cached")
	leaveBehindBack(t, bobLogin, room)
	// The cached row still has bob in it: his page offers the composer (a
	// post itself is refused, since the store checks its author after the
	// insert).
	composer := func() int { return bob.get("/rooms/" + room).doc.Find("#composer").Length() }
	if got := composer(); got != 1 {
		t.Fatalf("page with the room cached: %d composers", got)
	}
	ns.Shutdown()
	waitLog(t, &logs, "nats: lost the broker")
	var port int
	fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
	ns2 := startNATS(t, port)
	defer ns2.Shutdown()
	waitLog(t, &logs, "nats: reconnected")
	untilStatus(t, "the page without the composer after the reconnect", 0, composer)
	if got := postStatus(bob, room, "after the reconnect"); got != http.StatusForbidden {
		t.Errorf("post after the reconnect: %d", got)
	}
}

// TestRoomCacheTTL: with no event at all, a room entry lives at most the TTL.
func TestRoomCacheTTL(t *testing.T) {
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.CacheTTL = 300 * time.Millisecond })
	alice, bobLogin := a.signedUp(t, unique("alice")), unique("bob")
	bob := a.signedUp(t, bobLogin)
	room := roomWith(t, alice, bob)
	postMessage(t, bob, room, "cached")
	leaveBehindBack(t, bobLogin, room)
	time.Sleep(350 * time.Millisecond)
	if got := postStatus(bob, room, "after the TTL"); got != http.StatusForbidden {
		t.Fatalf("post after the TTL: %d, want 403", got)
	}
}

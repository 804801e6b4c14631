package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/live"
)

// heardEvents are the events an instance's hub has handed its watchers
// (the sidebar states among them, which watch first: they are built with
// the server).
type heardEvents chan live.Event

func hear(hub live.Hub) heardEvents {
	h := make(heardEvents, 4096)
	hub.WatchEvents(func(ev live.Event) {
		select {
		case h <- ev:
		default: // never blocks the hub; a test waits for few
		}
	}, func(bool) {})
	return h
}

// waitFor waits until the instance has heard an event of kind in
// conversation (a message's with content, if not "").
func (h heardEvents) waitFor(t *testing.T, kind, conversation, content string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-h:
			if ev.Kind == kind && ev.Conversation == conversation && (content == "" || ev.Message != nil && ev.Message.Content == content) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s event of %s heard", kind, conversation)
		}
	}
}

// drain forgets the events heard so far.
func (h heardEvents) drain() {
	for {
		select {
		case <-h:
		default:
			return
		}
	}
}

// TestSidebarAcrossInstances (issue 38): each instance keeps a person's
// sidebar state in memory (service/cache's Sidebars) and serves it while
// nothing it depends on changed; a change made on another instance
// reaches it through the broker. Bob reads his pages on B, whose state of
// him is kept (an hour: only changes drop it here); once B heard them,
// B's sidebar shows a message Ada posted on A as unread, clears it when
// Bob reads the room on A, shows the level he set on A, and a DM that
// Carol started on A; a broker gap drops the state kept, none is kept
// while events may be missed, and what happened meanwhile shows.
func TestSidebarAcrossInstances(t *testing.T) {
	ns := startNATS(t, -1)
	var logsA, logsB syncBuffer
	hour := func(c *handlers.Config) { c.CacheTTL, c.SessionCacheTTL, c.PageTTL = time.Hour, time.Hour, time.Hour }
	a, b := instance(t, ns.ClientURL(), &logsA, hour), instance(t, ns.ClientURL(), &logsB, hour)
	ada := a.signedUp(t, unique("ada"))
	bob := b.signedUp(t, unique("bob"))
	bobLogin := loginOf(t, bob)
	room := roomWith(t, ada, bob.on(a))
	postMessage(t, ada, room, "first")
	bob.get("/rooms/" + room) // read on B
	heard := hear(b.hub)

	sidebar := func(conv string) (unread, level string) {
		t.Helper()
		p := bob.get("/")
		if p.StatusCode != http.StatusOK {
			t.Fatalf("GET / on B: %d", p.StatusCode)
		}
		e := p.doc.Find(fmt.Sprintf("#my-rooms a[data-conversation='%s'], #my-dms a[data-conversation='%s']", conv, conv))
		if e.Length() != 1 {
			return "absent", ""
		}
		return e.AttrOr("data-unread", ""), e.AttrOr("data-level", "")
	}
	// kept checks that B serves Bob's sidebar from memory now.
	kept := func() {
		t.Helper()
		heard.drain()
		sidebar(room)
		hits, reads := b.srv.Rows().Sidebars().Stats()
		sidebar(room)
		if h, r := b.srv.Rows().Sidebars().Stats(); h != hits+1 || r != reads {
			t.Fatalf("B read Bob's sidebar again with nothing changed: %d hits, %d reads more", h-hits, r-reads)
		}
	}

	t.Run("PostOnA", func(t *testing.T) {
		kept()
		postMessage(t, ada, room, "news")
		heard.waitFor(t, live.KindMessage, room, "news")
		if got, _ := sidebar(room); got != "1" {
			t.Errorf("B's sidebar after Ada posted on A: data-unread %q, want 1", got)
		}
	})
	t.Run("ReadOnA", func(t *testing.T) {
		kept()
		if got, _ := sidebar(room); got != "1" {
			t.Fatalf("B's sidebar before Bob read the room: data-unread %q, want 1", got)
		}
		bob.on(a).get("/rooms/" + room) // marks it read, on A
		heard.waitFor(t, live.KindUnread, live.PersonalKey(bobLogin), "")
		if got, _ := sidebar(room); got != "0" {
			t.Errorf("B's sidebar after Bob read the room on A: data-unread %q, want 0", got)
		}
	})
	t.Run("LevelOnA", func(t *testing.T) {
		kept()
		if p := bob.on(a).post("/rooms/"+room+"/notifications", url.Values{"level": {"nothing"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("set the level on A: %d", p.StatusCode)
		}
		heard.waitFor(t, live.KindUnread, live.PersonalKey(bobLogin), "")
		if _, got := sidebar(room); got != "nothing" {
			t.Errorf("B's sidebar after Bob set the level on A: data-level %q, want nothing", got)
		}
	})
	t.Run("NewDMOnA", func(t *testing.T) {
		kept()
		carol := a.signedUp(t, unique("carol"))
		logins := []string{bobLogin, loginOf(t, carol)}
		sort.Strings(logins)
		address := strings.Join(logins, "+")
		if got, _ := sidebar("dm:" + address); got != "absent" {
			t.Fatalf("B's sidebar shows the DM before it began: %q", got)
		}
		if p := carol.post("/dm/"+address+"/messages", url.Values{"content": {"hello Bob"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("Carol's DM on A: %d", p.StatusCode)
		}
		heard.waitFor(t, live.KindMessage, "dm:"+address, "hello Bob")
		if got, _ := sidebar("dm:" + address); got != "1" {
			t.Errorf("B's sidebar after Carol wrote to Bob on A: the DM's data-unread %q, want 1", got)
		}
	})
	outer := t
	t.Run("BrokerGap", func(t *testing.T) {
		bob.get("/rooms/" + room) // all read again
		kept()
		addr := ns.Addr().String()
		ns.Shutdown()
		waitLog(t, &logsB, "nats: lost the broker")
		_, reads := b.srv.Rows().Sidebars().Stats()
		sidebar(room)
		sidebar(room)
		if _, r := b.srv.Rows().Sidebars().Stats(); r != reads+2 {
			t.Errorf("B while the broker is away: %d reads of 2 pages, want 2 (dropped, none kept)", r-reads)
		}
		// Posted on A meanwhile: B never hears of it, and reads it.
		postMessage(t, ada, room, "while the broker is away")
		if got, _ := sidebar(room); got != "1" {
			t.Errorf("B's sidebar while the broker is away: data-unread %q, want 1", got)
		}
		var port int
		fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
		ns2 := startNATS(t, port)
		outer.Cleanup(ns2.Shutdown)
		waitLog(t, &logsA, "nats: reconnected")
		waitLog(t, &logsB, "nats: reconnected")
		if got, _ := sidebar(room); got != "1" {
			t.Errorf("B's sidebar after the broker came back: data-unread %q, want 1", got)
		}
		kept()
		// Kept again, and dropped by the next event.
		postMessage(t, ada, room, "after the broker came back")
		heard.waitFor(t, live.KindMessage, room, "after the broker came back")
		if got, _ := sidebar(room); got != "2" {
			t.Errorf("B's sidebar after the broker came back and Ada posted: data-unread %q, want 2", got)
		}
	})
}

// TestSidebarSwapReadsAgain: GET /sidebar, which a page asks for when
// its stream says something changed (maybe a stream of another instance,
// of a change this one has not heard of yet), reads the sidebar state
// again whatever is kept, and keeps it: a message stored with no event
// at all (behind the app's back) is not on the kept sidebar of the next
// page, but on the swapped one, and on the pages after it.
func TestSidebarSwapReadsAgain(t *testing.T) {
	hour := func(c *handlers.Config) { c.CacheTTL, c.SessionCacheTTL = time.Hour, time.Hour }
	a := newApp(t, nil, nil, hour)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)
	postMessage(t, ada, room, "first")
	bob.get("/rooms/" + room)
	entry := fmt.Sprintf("#my-rooms a[data-conversation='%s']", room)
	unread := func(p page) string { return p.doc.Find(entry).AttrOr("data-unread", "absent") }
	if got := unread(bob.get("/")); got != "0" {
		t.Fatalf("home after reading the room: data-unread %q, want 0", got)
	}
	adaLogin := loginOf(t, ada)
	r, err := db.RoomFor(ctxT(t), room, adaLogin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.PostMessage(ctxT(t), r, chat.UserRef{Login: adaLogin}, "unannounced"); err != nil {
		t.Fatal(err)
	}
	if got := unread(bob.get("/")); got != "0" {
		t.Fatalf("home, kept, after a post no event announced: data-unread %q (the state was not kept?)", got)
	}
	bob.htmx = true
	got := unread(bob.get("/sidebar"))
	bob.htmx = false
	if got != "1" {
		t.Errorf("GET /sidebar after a post no event announced: data-unread %q, want 1", got)
	}
	if got := unread(bob.get("/")); got != "1" {
		t.Errorf("home after the swap: data-unread %q, want 1", got)
	}
}

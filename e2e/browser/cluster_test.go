package browser

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/killrchat/killrchat/chat"
)

// twoInstances starts two app instances (Main, with --nats-url) over an
// embedded NATS broker, each with its own store and hub on the package's
// keyspace, and returns their addresses. They stop when the test ends.
func twoInstances(t *testing.T) (a, b string) {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats did not start")
	}
	t.Cleanup(ns.Shutdown)
	var urls []string
	for range 2 {
		m, url, err := startMain(appLog(), "--nats-url", ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		urls = append(urls, url)
	}
	return urls[0], urls[1]
}

// on makes a new tab's pages come from base (another instance).
func (p *tab) on(base string) *tab {
	p.base = base
	return p
}

// TestAcrossInstances (issue 19): Ada's browser talks to instance A, Bob's
// to instance B, over NATS. Ada's typing shows on Bob's page and is gone
// about 5 s after she stops; each sees the other's presence dot online,
// and Ada sees Bob's go offline when his last page goes; Bob, with no tab
// in view, gets one notification for Ada's DM and none for a room message
// at the room's default level.
func TestAcrossInstances(t *testing.T) {
	b := begin(t)
	urlA, urlB := twoInstances(t)
	a := b.newTab("ada on A").on(urlA)
	a.signUp(newPerson("Ada", "Lovelace"))
	room := unique("two")
	a.createRoom(room, "Two instances")
	o := b.newTab("bob on B").on(urlB)
	o.signUp(newPerson("Bob", "Babbage"))
	o.joinFromRoomPage(room)
	for _, p := range []*tab{a, o} {
		p.open("/rooms/" + room)
		p.waitRoomPage(room)
		p.waitStream()
	}
	ada := eval[string](a, `document.body.getAttribute("data-viewer")`)
	bob := eval[string](o, `document.body.getAttribute("data-viewer")`)

	// Typing, from A to B.
	eval[bool](a, `(() => { const c = document.getElementById("content"); c.value = "hel";
		c.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`)
	o.waitJSFor(3*time.Second, "ada typing on bob's page on B", `document.getElementById("typing").textContent === "Ada Lovelace is typing…"`)
	if took := o.waitJSFor(9*time.Second, "the typing line gone", `document.getElementById("typing").textContent === ""`); took < 3*time.Second {
		t.Errorf("the typing line went after %v, want about 5 s after the last event", took)
	}

	// Presence, both ways.
	dot := func(login string) string {
		d := `document.querySelector('#participants [data-presence="` + login + `"]')`
		return d + ` && ` + d + `.getAttribute("data-online") === "true"`
	}
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitJS("bob, on B, online on A", dot(bob))
	o.open("/rooms/" + room)
	o.waitRoomPage(room)
	o.waitJS("ada, on A, online on B", dot(ada))

	// Notifications on B for what is posted through A.
	grantNotifications(t, o)
	probeNotifications(t, o)
	o.open("/")
	o.waitJS("bob's live connection", `document.documentElement.getAttribute("data-live") === "up"`)
	a.post("nothing for bob " + unique("#"))
	settleNotes(t, 0, "a room message at the mentions level, across instances", o)
	address, err := chat.DMAddress([]string{ada, bob})
	if err != nil {
		t.Fatal(err)
	}
	a.open("/dm/" + address)
	a.waitStream()
	dm := fmt.Sprintf("across instances %s", unique("#"))
	a.post(dm)
	if got := settleNotes(t, 1, "a DM across instances", o); got[0] != "Ada Lovelace | "+dm { // a DM's title is its author alone (issue 39)
		t.Errorf("the DM's notification: %q", got[0])
	}

	// Bob's last page goes: A hears it through NATS.
	o.run("bob leaves for a blank page", chromedp.Navigate("about:blank"))
	waitOffline(t, a, bob)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitJS("bob offline on A", `document.querySelector('#participants [data-presence="`+bob+`"]').getAttribute("data-online") === "false"`)
}

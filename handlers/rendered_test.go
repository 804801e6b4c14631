package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestEditedMessageNeverStale: a message is rendered once and its HTML
// kept (views/shared.go); after an edit on instance A, instance B, which
// rendered it before, shows the new text on the room page, in the live
// stream and on the permalink, and so does A.
func TestEditedMessageNeverStale(t *testing.T) {
	a, b := twoInstances(t)
	ada := a.signedUp(t, unique("ada"))
	bob := b.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob.on(a))
	postMessage(t, ada, room, "before the edit, @"+bob.login)
	id := latestID(t, room, "before the edit, @"+bob.login)
	permalink := "/rooms/" + room + "?at=" + id

	shows := func(c *client, path, want string) {
		t.Helper()
		p := c.get(path)
		if p.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, p.StatusCode)
		}
		if got := strings.TrimSpace(p.doc.Find("#msg-" + id + " .text").Text()); got != want {
			t.Errorf("GET %s shows %q, want %q", path, got, want)
		}
	}
	// Both instances render (and keep) the first text.
	for _, c := range []*client{bob, bob.on(a), ada, ada.on(b)} {
		shows(c, "/rooms/"+room, "before the edit, @"+bob.login)
		shows(c, permalink, "before the edit, @"+bob.login)
	}
	s := bob.subscribe(t, room, "")
	if p := ada.post("/rooms/"+room+"/messages/"+id+"/edit", url.Values{"content": {"after the edit, @" + bob.login}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", p.StatusCode, text(p, "main"))
	}
	// At once on both instances (read your writes: the newest page kept
	// in memory is checked against the room's change count), before any
	// instance need have heard the edit's event.
	for _, c := range []*client{bob, bob.on(a), ada, ada.on(b)} {
		shows(c, "/rooms/"+room, "after the edit, @"+bob.login)
		shows(c, permalink, "after the edit, @"+bob.login)
	}
	ev := s.nextEvent(t, "edit", 5*time.Second)
	if !strings.Contains(ev, "after the edit") || strings.Contains(ev, "before the edit") {
		t.Errorf("B's stream's edit event: %s", ev)
	}
	// The reader's own mention is still marked for them alone.
	if p := bob.get("/rooms/" + room); p.doc.Find("#msg-"+id+" a.mention.mention-me").Length() != 1 {
		t.Errorf("bob's page: his mention is not marked")
	}
	if p := ada.get("/rooms/" + room); p.doc.Find("#msg-"+id+" a.mention-me").Length() != 0 {
		t.Errorf("ada's page marks bob's mention as hers")
	}
	// A new message posted on A is on B's page as soon as A answered
	// (B keeps the room's newest page), and on B's stream.
	postMessage(t, ada, room, "posted after")
	if p := bob.get("/rooms/" + room); !strings.Contains(p.doc.Find("#messages").Text(), "posted after") {
		t.Errorf("B's page lacks the message posted on A")
	}
	s.messageWith(t, "posted after", 5*time.Second)
}

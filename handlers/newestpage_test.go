package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
)

// TestNewestPageAcrossInstances (issue 38): each instance keeps a
// conversation's newest page in memory (service/cache's Pages) and
// serves it only while the conversation's change count is the one it was
// read with. Instance B, whose page is kept, shows what A posts, edits,
// deletes and reacts to as soon as A answered, before B's stream has the
// event; a change stored with no event at all (written behind the app's
// back) is on B's next page; while the broker is away, a message posted
// meanwhile, of which B never hears, is on B's page during the absence
// and after it; and a new instance (a restart) shows the room as stored.
func TestNewestPageAcrossInstances(t *testing.T) {
	ns := startNATS(t, -1)
	broker := ns.ClientURL()
	var logsA, logsB syncBuffer
	// Pages kept for an hour: only events and gaps drop them here.
	hour := func(c *handlers.Config) { c.PageTTL = time.Hour }
	a, b := instance(t, broker, &logsA, hour), instance(t, broker, &logsB, hour)
	ada := a.signedUp(t, unique("ada"))
	bob := b.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob.on(a))
	postMessage(t, ada, room, "first")

	page := func(c *client) page {
		t.Helper()
		p := c.get("/rooms/" + room)
		if p.StatusCode != http.StatusOK {
			t.Fatalf("GET /rooms/%s: %d", room, p.StatusCode)
		}
		return p
	}
	texts := func(c *client) string {
		t.Helper()
		var out []string
		page(c).doc.Find("#messages li[id^='msg-'] .text").Each(func(_ int, s *goquery.Selection) {
			out = append(out, strings.TrimSpace(s.Text()))
		})
		return strings.Join(out, "|")
	}
	// B keeps the page; A posts; B shows the post once it heard it.
	if got := texts(bob); !strings.HasSuffix(got, "first") {
		t.Fatalf("B's page: %q", got)
	}
	s := bob.subscribe(t, room, "")
	postMessage(t, ada, room, "second")
	if got := texts(bob); !strings.HasSuffix(got, "first|second") {
		t.Fatalf("B's page after A posted: %q", got)
	}
	s.messageWith(t, "second", 5*time.Second)
	id := latestID(t, room, "second")

	t.Run("Edit", func(t *testing.T) {
		if p := ada.post("/rooms/"+room+"/messages/"+id+"/edit", url.Values{"content": {"second, edited"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("edit: %d", p.StatusCode)
		}
		if got := texts(bob); !strings.HasSuffix(got, "first|second, edited") {
			t.Errorf("B's page after A's edit: %q", got)
		}
		s.nextEvent(t, "edit", 5*time.Second)
	})
	t.Run("Reaction", func(t *testing.T) {
		if p := ada.post("/rooms/"+room+"/messages/"+id+"/reactions", url.Values{"emoji": {"👍"}, "add": {"1"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("react: %d", p.StatusCode)
		}
		if n := page(bob).doc.Find("#msg-" + id + " form.reaction[data-emoji='👍']").Length(); n != 1 {
			t.Errorf("B's page shows %d reactions 👍 of A's, want 1", n)
		}
		s.nextEvent(t, "reaction", 5*time.Second)
	})
	t.Run("Delete", func(t *testing.T) {
		if p := ada.post("/rooms/"+room+"/messages/"+id+"/delete", url.Values{"confirm": {"yes"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete: %d", p.StatusCode)
		}
		if got := texts(bob); strings.Contains(got, "second") {
			t.Errorf("B's page after A's delete: %q", got)
		}
		s.nextEvent(t, "delete", 5*time.Second)
	})
	t.Run("UnannouncedChange", func(t *testing.T) {
		texts(bob) // kept on B
		r := roomPlace(t, room)
		msgs, _, err := db.MessagesBefore(ctxT(t), r, chat.ID{}, 1)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("newest message: %v %v", msgs, err)
		}
		// Straight to the store: no instance publishes anything.
		if _, err := db.EditMessage(ctxT(t), r, msgs[0], "edited behind the app's back", db.NewChangeID()); err != nil {
			t.Fatal(err)
		}
		if got := texts(bob); !strings.HasSuffix(got, "edited behind the app's back") {
			t.Errorf("B's page after an edit no event announced: %q", got)
		}
	})
	outer := t
	t.Run("BrokerGap", func(t *testing.T) {
		texts(bob) // kept on B
		addr := ns.Addr().String()
		ns.Shutdown()
		waitLog(t, &logsB, "nats: lost the broker")
		postMessage(t, ada, room, "while the broker is away")
		if got := texts(bob); !strings.HasSuffix(got, "while the broker is away") {
			t.Errorf("B's page while the broker is away: %q", got)
		}
		var port int
		fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
		ns2 := startNATS(t, port)
		outer.Cleanup(ns2.Shutdown)
		waitLog(t, &logsA, "nats: reconnected")
		waitLog(t, &logsB, "nats: reconnected")
		if got := texts(bob); !strings.HasSuffix(got, "while the broker is away") {
			t.Errorf("B's page after the broker came back: %q", got)
		}
		// Kept again, and dropped by the next event.
		s2 := bob.subscribe(t, room, "")
		postMessage(t, ada, room, "after the broker came back")
		s2.messageWith(t, "after the broker came back", 5*time.Second)
		if got := texts(bob); !strings.HasSuffix(got, "while the broker is away|after the broker came back") {
			t.Errorf("B's page after the broker came back and A posted: %q", got)
		}
	})
	t.Run("Restart", func(t *testing.T) {
		var logsC syncBuffer
		c := instance(t, broker, &logsC, hour)
		want := texts(ada)
		if got := texts(bob.on(c)); got != want {
			t.Errorf("a new instance shows %q, A shows %q", got, want)
		}
	})
}

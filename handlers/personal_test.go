package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// TestPersonalEvents: GET /events carries the conversations it is asked
// for, each replayed from its own resume point and named on every event,
// tells which ones it may not carry (a room the reader is not in, a room
// that does not exist), says when another conversation got a message,
// ends on POST /events/end, and refuses malformed requests with 400.
func TestPersonalEvents(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	one, two, other := roomWith(t, ada, bob), roomWith(t, ada, bob), roomWith(t, ada)
	quiet := roomWith(t, ada, bob) // bob's, not carried
	for i := 0; i < 3; i++ {
		postMessage(t, ada, one, fmt.Sprintf("one %d", i))
		postMessage(t, ada, two, fmt.Sprintf("two %d", i))
	}
	ones := storedIn(t, one)
	twos := storedIn(t, two)

	q := url.Values{"b": {"browser1"}, "c": {
		one + "@" + ones[0].ID.String(), two + "@" + twos[1].ID.String(), other + "@", "nosuchroom@"}}
	s := bob.subscribePath(t, "/events?"+q.Encode(), "")
	if s.status != http.StatusOK {
		t.Fatalf("GET /events: %d", s.status)
	}
	want := []sseEvent{
		{name: "stream-end", data: other + "\n"},
		{name: "room-deleted", data: "nosuchroom\n/?notice=room-deleted"},
		{name: "message", id: ones[1].ID.String(), data: one + "\n"},
		{name: "message", id: ones[2].ID.String(), data: one + "\n"},
		{name: "message", id: twos[2].ID.String(), data: two + "\n"},
	}
	for i, w := range want {
		select {
		case ev := <-s.events:
			if ev.name != w.name || !strings.HasPrefix(ev.data, w.data) || (w.id != "" && ev.id != w.id) {
				t.Fatalf("event %d: %+v, want %+v", i, ev, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d: none within 5s", i)
		}
	}
	postMessage(t, ada, quiet, "elsewhere")
	postMessage(t, ada, two, "live two")
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case ev := <-s.events:
			switch {
			case ev.name == "unread" && strings.HasPrefix(ev.data, quiet+"\n"):
				// The notice a notification shows (issue 19): who wrote what.
				if !strings.Contains(ev.data, `"text":"elsewhere"`) || !strings.Contains(ev.data, `"author":"`+loginOf(t, ada)+`"`) {
					t.Errorf("the unread event's notice: %q", ev.data)
				}
				seen["unread"] = true
			case ev.name == "message" && strings.HasPrefix(ev.data, two+"\n") && strings.Contains(ev.data, "live two"):
				seen["message"] = true
			case ev.name == "unread":
			default:
				t.Fatalf("unexpected %+v", ev)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("got %v, want the live message of %s and the unread of %s", seen, two, quiet)
		}
	}

	// The browser's last page went away: its stream ends at once.
	if p := bob.post("/events/end", url.Values{"b": {"browser1"}}); p.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /events/end: %d", p.StatusCode)
	}
	for ended := time.After(5 * time.Second); ; {
		select {
		case _, ok := <-s.events:
			if ok {
				continue
			}
		case <-ended:
			t.Fatal("the stream did not end")
		}
		break
	}

	for name, query := range map[string]string{
		"NoCursorMark":   "c=" + one,
		"BadCursor":      "c=" + url.QueryEscape(one+"@nope"),
		"Twice":          "c=" + url.QueryEscape(one+"@") + "&c=" + url.QueryEscape(one+"@"),
		"NotCanonicalDM": "c=" + url.QueryEscape("dm:zed+ada@"),
		"BadBrowserKey":  "b=" + url.QueryEscape("a b"),
	} {
		t.Run(name, func(t *testing.T) {
			if p := bob.get("/events?" + query); p.StatusCode != http.StatusBadRequest {
				t.Fatalf("GET /events?%s: %d, want 400", query, p.StatusCode)
			}
		})
	}
}

// storedIn is the messages of room, oldest first.
func storedIn(t *testing.T, room string) []chat.Message {
	t.Helper()
	r, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := db.MessagesAfter(ctxT(t), r, [16]byte{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []chat.Message
	for _, m := range msgs {
		if !m.System {
			out = append(out, m)
		}
	}
	return out
}

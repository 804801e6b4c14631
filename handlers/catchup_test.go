package handlers_test

// Catching up over real HTTP (issue 39, day one, item 2): "Mark all as
// read" for one conversation and for every one, as plain forms, and who
// may use them.

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
)

// unreadOn is the data-unread of the sidebar entry linking to href on
// the home page of c.
func unreadOn(c *client, href string) string {
	return c.get("/").doc.Find(fmt.Sprintf(".sidebar a[href='%s#latest']", href)).AttrOr("data-unread", "missing")
}

func TestMarkAllReadEverywhere(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	rooms := []string{roomWith(t, ada, bob), roomWith(t, ada, bob)}
	for _, r := range rooms {
		bob.get("/rooms/" + r) // read up to the join
		postMessage(t, ada, r, "news in "+r)
		postMessage(t, ada, r, "more news")
	}
	pair := []string{loginOf(t, ada), loginOf(t, bob)}
	sort.Strings(pair)
	dm := "/dm/" + strings.Join(pair, "+")
	if p := ada.post(dm+"/messages", url.Values{"content": {"psst"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("post in the dm: %d", p.StatusCode)
	}

	home := bob.get("/")
	form := home.doc.Find(`.sidebar form.mark-all-read[action="/read"][method="post"]`)
	if form.Length() != 1 || form.Find(`input[name="_csrf"]`).Length() != 1 {
		t.Fatalf("the sidebar has %d \"Mark all as read\" forms with a token, want 1", form.Length())
	}
	if got := unreadOn(bob, "/rooms/"+rooms[0]); got != "2" {
		t.Fatalf("before: %s unread in %s, want 2", got, rooms[0])
	}

	t.Run("NoToken", func(t *testing.T) {
		if p := bob.postRaw("/read", url.Values{}); p.StatusCode != http.StatusForbidden {
			t.Errorf("POST /read without a CSRF token: %d, want 403", p.StatusCode)
		}
		if got := unreadOn(bob, "/rooms/"+rooms[0]); got != "2" {
			t.Errorf("a refused POST /read changed the count to %s", got)
		}
	})

	req, _ := http.NewRequest(http.MethodPost, bob.base+"/read", strings.NewReader(url.Values{"_csrf": {bob.ensureCSRF()}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Referer", bob.base+"/rooms?notice=welcome")
	p := bob.do(req)
	if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/rooms" {
		t.Errorf("POST /read: %d to %q, want 303 back to /rooms (without the notice)", p.StatusCode, p.Header.Get("Location"))
	}
	for _, href := range []string{"/rooms/" + rooms[0], "/rooms/" + rooms[1], dm} {
		if got := unreadOn(bob, href); got != "0" {
			t.Errorf("after marking all read, %s has %s unread", href, got)
		}
	}
	home = bob.get("/")
	if home.doc.Find(".mark-all-read").Length() != 0 {
		t.Error("\"Mark all as read\" still shows with nothing unread")
	}
	if title := text(home, "title"); strings.HasPrefix(title, "(") {
		t.Errorf("title %q after marking all read", title)
	}
	// Ada's own state is hers: her DM from Bob stays as it was.
	if got := unreadOn(ada, "/rooms/"+rooms[0]); got != "0" {
		t.Errorf("ada's room: %s", got)
	}
}

func TestMarkConversationRead(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob, eve := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("eve"))
	room, other := roomWith(t, ada, bob), roomWith(t, ada, bob)
	bob.get("/rooms/" + room)
	bob.get("/rooms/" + other)
	for i := 0; i < 4; i++ {
		postMessage(t, ada, room, fmt.Sprintf("more %d", i))
	}
	postMessage(t, ada, other, "elsewhere")

	if got := unreadOn(bob, "/rooms/"+room); got != "4" {
		t.Fatalf("before: %s unread, want 4", got)
	}
	if p := eve.post("/rooms/"+room+"/read-all", nil); p.StatusCode != http.StatusForbidden && p.StatusCode != http.StatusNotFound {
		t.Errorf("an outsider marks the room read: %d, want 403 or 404", p.StatusCode)
	}
	if p := bob.post("/rooms/"+room+"/read-all", nil); p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/rooms/"+room+"#latest" {
		t.Errorf("POST read-all: %d to %q", p.StatusCode, p.Header.Get("Location"))
	}
	if got := unreadOn(bob, "/rooms/"+room); got != "0" {
		t.Errorf("after read-all, %s unread", got)
	}
	if got := unreadOn(bob, "/rooms/"+other); got != "1" {
		t.Errorf("the other room is now %s unread, want 1 still", got)
	}

	// A page with something new offers to jump to it and to catch up.
	postMessage(t, ada, room, "later")
	p := bob.get("/rooms/" + room)
	bar := p.doc.Find("#catch-up")
	if bar.Find(`a[href="#unread-since"]`).Length() != 1 || p.doc.Find("#unread-since").Length() != 1 {
		t.Errorf("no link to the first unread message: %q", text(p, "#catch-up"))
	}
	if bar.Find(`form[action="/rooms/`+room+`/read-all"] button`).Length() != 1 {
		t.Errorf("no \"Mark all as read\" form for the room: %q", text(p, "#catch-up"))
	}

	// A DM likewise, for its members only.
	pair := []string{loginOf(t, ada), loginOf(t, bob)}
	sort.Strings(pair)
	dm := "/dm/" + strings.Join(pair, "+")
	if p := ada.post(dm+"/messages", url.Values{"content": {"psst"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("post in the dm: %d", p.StatusCode)
	}
	if p := eve.post(dm+"/read-all", nil); p.StatusCode != http.StatusNotFound {
		t.Errorf("an outsider marks the dm read: %d, want 404", p.StatusCode)
	}
	bob.htmx = true
	if p := bob.post(dm+"/read-all", nil); p.StatusCode != http.StatusNoContent {
		t.Errorf("htmx read-all of the dm: %d, want 204", p.StatusCode)
	}
	bob.htmx = false
	if got := unreadOn(bob, dm); got != "0" {
		t.Errorf("after read-all, the dm has %s unread", got)
	}
}

package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestNotificationLevels (issue 19, item 1): a room starts at "mentions"
// and a DM at "everything"; a member sets either from its menu with a
// plain form; "nothing" turns the sidebar's count into a quiet dot and
// leaves the conversation out of the title's count. A bad level, and a
// level set by someone outside the conversation, change nothing.
func TestNotificationLevels(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	eve := a.signedUp(t, unique("eve"))
	adaLogin, bobLogin := loginOf(t, ada), loginOf(t, bob)
	room := createRoom(t, ada)
	bob.post("/rooms/"+room+"/join", nil)
	address := dmAddress(t, adaLogin, bobLogin)

	checked := func(c *client, path string) string {
		t.Helper()
		v, _ := c.get(path).doc.Find(`form.level-form input[name=level]:checked`).Attr("value")
		return v
	}
	if got := checked(bob, "/rooms/"+room); got != "mentions" {
		t.Errorf("a room starts at %q, want mentions", got)
	}
	postDM(t, ada, address, "hello")
	if got := checked(bob, "/dm/"+address); got != "everything" {
		t.Errorf("a DM starts at %q, want everything", got)
	}

	p := bob.post("/rooms/"+room+"/notifications", url.Values{"level": {"nothing"}})
	if p.StatusCode != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/rooms/"+room) {
		t.Fatalf("set a level: %d to %q", p.StatusCode, p.Header.Get("Location"))
	}
	if got := checked(bob, "/rooms/"+room); got != "nothing" {
		t.Errorf("after saving nothing, the menu says %q", got)
	}
	for _, bad := range []string{"", "loud", "NOTHING"} {
		if p := bob.post("/rooms/"+room+"/notifications", url.Values{"level": {bad}}); p.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("level %q: %d, want 422", bad, p.StatusCode)
		}
	}
	if got := checked(bob, "/rooms/"+room); got != "nothing" {
		t.Errorf("after bad levels, the menu says %q", got)
	}
	if p := eve.post("/dm/"+address+"/notifications", url.Values{"level": {"nothing"}}); p.StatusCode != http.StatusNotFound {
		t.Errorf("an outsider setting a DM's level: %d, want 404", p.StatusCode)
	}

	// Unread in both: the room (nothing) is a dot, the DM (everything) a
	// count, and the title counts the DM alone.
	postMessage(t, ada, room, "in the quiet room")
	postDM(t, ada, address, "in the dm")
	home := bob.get("/")
	roomEntry := home.doc.Find(`#my-rooms a[href^="/rooms/` + room + `"]`)
	if roomEntry.Find(".badge.quiet").Length() != 1 || roomEntry.Find(".badge.unread").Length() != 0 {
		t.Errorf("the quiet room's entry: %q", roomEntry.Text())
	}
	if home.doc.Find(`#my-dms .badge.unread`).Length() != 1 {
		t.Errorf("the DM's entry has no count")
	}
	if n, _ := home.doc.Find("#sidebar-lists").Attr("data-unread-conversations"); n != "1" {
		t.Errorf("unread conversations for the title: %s, want 1 (the DM)", n)
	}
	if title := text(home, "title"); !strings.HasPrefix(title, "(1) ") {
		t.Errorf("title %q, want it to count the DM alone", title)
	}
}

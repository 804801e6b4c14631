package handlers_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// TestInviteLinkDiesWithItsRoom (issue 37, fault 1): a member's link to
// an open room, deleted, then made again under the same name as a closed
// room by someone else, opens nothing of the new room: the link is gone
// with its room, the new room's admins do not see it, and the old room's
// mentions, levels and search postings do not carry over.
func TestInviteLinkDiesWithItsRoom(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	fay, hal := a.signedUp(t, unique("fay")), a.signedUp(t, unique("hal"))
	room := roomWith(t, ada, bob)
	link := inviteLink(t, bob, room, nil)
	oldWord := unique("oldword")
	postMessage(t, ada, room, "@"+bob.login+" the old room's "+oldWord)
	if p := bob.post("/rooms/"+room+"/notifications", url.Values{"level": {"nothing"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("level: %d", p.StatusCode)
	}
	a.srv.FlushSearchIndex()
	if p := ada.post("/rooms/"+room+"/delete", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", p.StatusCode, text(p, "main"))
	}
	if p := fay.post("/rooms", url.Values{"room_name": {room}, "kind": {"closed"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("the name again, closed: %d %s", p.StatusCode, text(p, "main"))
	}
	secret := "fay's closed plans " + unique("w")
	postMessage(t, fay, room, secret)
	addMember(t, fay, room, bob.login, http.StatusSeeOther)
	a.srv.FlushSearchIndex()

	if p := hal.get(link); p.StatusCode != http.StatusNotFound || strings.Contains(p.body, fay.login) {
		t.Errorf("the old link's page: %d %s, want 404 naming no one", p.StatusCode, text(p, "main"))
	}
	if p := hal.post(link, nil); p.StatusCode != http.StatusNotFound {
		t.Errorf("join by the old link: %d %q, want 404", p.StatusCode, p.Header.Get("Location"))
	}
	if _, in := participants(t, room)[hal.login]; in {
		t.Error("the old link let hal into the new closed room")
	}
	if p := hal.get("/rooms/" + room); p.StatusCode != http.StatusNotFound || strings.Contains(p.body, secret) {
		t.Errorf("the new room to hal: %d, want 404 without its messages", p.StatusCode)
	}
	token, _ := url.PathUnescape(strings.TrimPrefix(link, "/invites/"))
	if _, err := db.Store.Invite(ctxT(t), token); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("the deleted room's link is still stored: %v", err)
	}
	if n := fay.get("/rooms/" + room + "/members").doc.Find("#invite-list li").Length(); n != 0 {
		t.Errorf("the new room's members page lists %d links of the old room", n)
	}
	// Bob is in the new room: nothing of the old one follows him there.
	if p := bob.get("/mentions"); strings.Contains(p.body, oldWord) {
		t.Errorf("the deleted room's mention is still on /mentions")
	}
	if p := searchPage(t, a, bob, oldWord); p.doc.Find(".search-result").Length() != 0 || strings.Contains(p.body, "the old room") {
		t.Errorf("a search finds the deleted room's message in the new room: %s", text(p, "main"))
	}
	if _, l, err := db.Store.MarkerAndLevel(ctxT(t), bob.login, room); err != nil || l != chat.DefaultLevel(room) {
		t.Errorf("bob's level in the old room carries over to the new one: %q %v", l, err)
	}
	if levels, err := db.Store.ConversationLevels(ctxT(t), room); err != nil || len(levels) != 0 {
		t.Errorf("the old room's push levels carry over to the new one: %v %v", levels, err)
	}
}

// TestLinksAfterRemovalAndClosing (issue 37, item 9): a member an admin
// removed does not come back by a multi-use link made before the
// removal (one made after lets them in), and a plain member's link from
// while the room was open admits no one once an admin closes the room
// (an admin's link still does).
func TestLinksAfterRemovalAndClosing(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner, bob, dan := a.signedUp(t, unique("owner")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("dan"))
	room := roomWith(t, owner, bob)
	ownerLink := inviteLink(t, owner, room, nil)
	bobLink := inviteLink(t, bob, room, nil)
	if p := owner.post("/rooms/"+room+"/members/"+bob.login+"/remove", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove: %d %s", p.StatusCode, text(p, "main"))
	}
	if p := bob.post(ownerLink, nil); p.StatusCode != http.StatusGone || !strings.Contains(text(p, "main"), "removed") {
		t.Errorf("the removed member by an older link: %d %s, want 410", p.StatusCode, text(p, "main"))
	}
	if _, in := participants(t, room)[bob.login]; in {
		t.Fatal("the removed member came back by a link made before the removal")
	}
	if p := bob.post(inviteLink(t, owner, room, nil), nil); p.StatusCode != http.StatusSeeOther {
		t.Errorf("the removed member by a link made after: %d %s", p.StatusCode, text(p, "main"))
	}

	if p := owner.post("/rooms/"+room+"/kind", url.Values{"kind": {"closed"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("close: %d %s", p.StatusCode, text(p, "main"))
	}
	if p := dan.get(bobLink); p.StatusCode != http.StatusGone || strings.Contains(p.body, bob.login) {
		t.Errorf("a member's link after the room closed: %d %s, want 410", p.StatusCode, text(p, "main"))
	}
	if p := dan.post(bobLink, nil); p.StatusCode != http.StatusGone {
		t.Errorf("join by a member's link after the room closed: %d %q", p.StatusCode, p.Header.Get("Location"))
	}
	if _, in := participants(t, room)[dan.login]; in {
		t.Fatal("a member's link admitted someone to the closed room")
	}
	if p := dan.post(ownerLink, nil); p.StatusCode != http.StatusSeeOther {
		t.Errorf("join by the admin's link: %d %s", p.StatusCode, text(p, "main"))
	}
}

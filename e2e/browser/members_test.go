package browser

import (
	"strings"
	"testing"
)

// TestClosedRoomInviteAndAdd: Ada creates a closed room and makes an
// invitation link; Bob, in another browser context, opens it, joins and
// posts, and Ada sees his message live. Ada adds Carol by login on the
// members page, and Carol finds the room in her sidebar. The members and
// invitation pages pass the accessibility check.
func TestClosedRoomInviteAndAdd(t *testing.T) {
	b := begin(t)
	ada, bob, carol := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage"), newPerson("Carol", "Shaw")
	room := unique("closed")

	a := b.newTab("ada")
	a.signUp(ada)
	a.click(`.sidebar a[href="/rooms/new"]`)
	a.waitJS("the new room form", atPath("/rooms/new")+` && document.querySelector("#new-room #room_name")`)
	a.fill("room_name", room, "banner", "Only us")
	a.click(`#new-room input[name=kind][value=closed]`)
	a.click("#new-room button[type=submit]")
	a.waitRoomPage(room)
	if got := a.text("#room .room-kind"); !strings.Contains(got, "Closed room") {
		t.Errorf("the room page says %q, want that it is closed", got)
	}

	a.open("/rooms/" + room + "/members")
	a.waitJS("the members page", `document.querySelector("#members-page form.new-invite")`)
	a.fill("max_uses", "5")
	a.click("#members-page form.new-invite button[type=submit]")
	a.waitJS("the new link", `document.querySelector("#new-link")`)
	link := eval[string](a, `document.querySelector("#new-link").getAttribute("href")`)
	if !strings.HasPrefix(link, "/invites/") {
		t.Fatalf("new link %q", link)
	}
	a.checkAccessibility("members page")
	a.screenshot("members-page")

	c := b.newTab("carol")
	c.signUp(carol)

	bt := b.newTab("bob")
	bt.signUp(bob)
	bt.open(link)
	bt.waitJS("the invitation page", hasText("#invite-page h1", "#"+room))
	bt.checkAccessibility("invitation page")
	bt.screenshot("invitation")

	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitStream()

	bt.click("#invite-page form button[type=submit]")
	bt.waitRoomPage(room)
	bt.send("hello from bob")
	a.waitJS("bob's message on ada's page", messagesWith("hello from bob")+`.length === 1`)

	a.open("/rooms/" + room + "/members")
	a.waitJS("the add form", `document.querySelector("#members-page form.add-member")`)
	a.fill("login", carol.login)
	a.click("#members-page form.add-member button[type=submit]")
	a.waitJS("carol among the members", `document.querySelector('#member-list li[data-login="`+carol.login+`"]')`)

	c.open("/")
	if got := c.sidebarRooms(); !contains(got, "#"+room) {
		t.Errorf("carol's sidebar rooms = %v, want #%s", got, room)
	}
	c.open("/rooms/" + room)
	c.waitRoomPage(room)
	if got := c.text("#messages"); !strings.Contains(got, "added "+carol.name()) {
		t.Errorf("carol's page misses the system message: %q", got)
	}
}

package browser

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestRooms: create a room with the New room form, a second person finds
// it in All rooms, joins and leaves it, a taken name gets the 409 message
// in the form, and the creator deletes the room through its confirmation.
func TestRooms(t *testing.T) {
	b := begin(t)
	ada, bob := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage")
	room := unique("lobby")

	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Talk about engines")
	if got := a.sidebarRooms(); !contains(got, "#"+room) {
		t.Fatalf("ada's sidebar rooms = %v, want #%s", got, room)
	}
	if got := a.text("#my-rooms a.active"); got != "#"+room {
		t.Errorf("the sidebar highlights %q, want #%s", got, room)
	}
	if got := a.text("#room .room-header .banner"); got != "Talk about engines" {
		t.Errorf("banner = %q", got)
	}
	if got := a.texts("#participants li"); len(got) != 1 || !strings.Contains(got[0], ada.name()) {
		t.Errorf("participants = %v, want only %s", got, ada.name())
	}
	if got := a.text("#messages .room-start"); got != "This is the start of #"+room+"." {
		t.Errorf("empty room shows %q", got)
	}
	a.screenshot("room-created")

	// A taken room name: 409, the form comes back with the message, no
	// page load.
	a.click(`.sidebar a[href="/rooms/new"]`)
	a.waitJS("the new room form", atPath("/rooms/new")+` && document.querySelector("#new-room #room_name")`)
	a.fill("room_name", room, "banner", "again")
	a.mark()
	a.click("#new-room button[type=submit]")
	a.waitJS("the taken-name message", hasText("#new-room #err-room_name", "This room name is taken."))
	if n := eval[int](a, `(document.getElementById("new-room").innerText.match(/This room name is taken\./g) || []).length`); n != 1 {
		t.Errorf("the taken-name message shows %d times, want once", n)
	}
	a.waitJS("the focus on the room name", `document.activeElement && document.activeElement.id === "room_name"`)
	if !a.marked() {
		t.Error("a taken room name reloaded the page; htmx should have swapped the form")
	}
	if got := a.lastStatus(); got != 409 {
		t.Errorf("a taken room name answered %d, want 409", got)
	}
	if got := eval[string](a, `document.getElementById("room_name").value`); got != room {
		t.Errorf("room name field holds %q after the error, want %q", got, room)
	}
	if got := eval[string](a, `document.getElementById("room_name").getAttribute("aria-invalid")`); got != "true" {
		t.Errorf("room name field is not marked invalid (aria-invalid=%q)", got)
	}
	a.screenshot("room-name-taken")

	// Bob finds the room in All rooms and joins it.
	o := b.newTab("bob")
	o.signUp(bob)
	o.click(`.sidebar a[href="/rooms"]`)
	o.waitJS("All rooms", atPath("/rooms")+` && document.querySelector("#rooms")`)
	o.findRoomRow(room)
	if got := o.text("#room-" + room + " .room-name"); got != "#"+room {
		t.Errorf("room row shows %q", got)
	}
	o.screenshot("all-rooms")
	o.click("#room-" + room + " button")
	o.waitRoomPage(room)
	if got := o.sidebarRooms(); !contains(got, "#"+room) {
		t.Errorf("bob's sidebar after joining = %v, want #%s", got, room)
	}
	if got := o.texts("#participants li"); len(got) != 2 {
		t.Errorf("participants after bob joined = %v, want ada and bob", got)
	}
	o.waitJS("bob's join message", hasText("#messages li.message.system", bob.name()+" joins the room"))
	o.screenshot("joined")

	// Bob leaves: he goes to All rooms with a notice; the room leaves his
	// sidebar, and he can join it again from the list.
	o.click("#room .room-menu > summary")
	o.click(`#room .room-actions form[action$="/leave"] button`)
	o.waitJS("All rooms after leaving", atPath("/rooms?notice=room-left")+` && `+hasText("#flash .notice", "You left the room."))
	if got := o.sidebarRooms(); contains(got, "#"+room) {
		t.Errorf("bob's sidebar after leaving still has #%s: %v", room, got)
	}
	o.findRoomRow(room)
	if got := o.text("#room-" + room + " button"); got != "Join" {
		t.Errorf("after leaving, the row's button says %q, want Join", got)
	}

	// Ada deletes the room: "Delete room…" opens a confirmation.
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	if n := a.count(`#room details.confirm-delete[open]`); n != 0 {
		t.Fatal("the delete confirmation is open before anyone asked")
	}
	a.click("#room .room-menu > summary")
	a.click("#room details.confirm-delete summary")
	a.waitJS("the delete confirmation", `document.querySelector("#room details.confirm-delete").open`)
	a.screenshot("delete-confirmation")
	a.click("#room details.confirm-delete form button")
	a.waitJS("home after deleting", atPath("/?notice=you-deleted")+` && `+hasText("#flash .notice", "You deleted the room"))
	if got := a.sidebarRooms(); contains(got, "#"+room) {
		t.Errorf("ada's sidebar after deleting still has #%s: %v", room, got)
	}
	a.screenshot("deleted")

	// The room is gone for Bob too.
	o.open("/rooms")
	o.waitJS("All rooms", atPath("/rooms")+` && document.querySelector("#rooms")`)
	if o.roomListed(room) {
		t.Errorf("#%s is still listed in All rooms after it was deleted", room)
	}
	o.open("/rooms/" + room)
	o.waitJS("the 404 page", hasText(".error-page h1", "Not found")+` && `+hasText(".error-page p", "This room does not exist or was deleted."))
	if n := o.count(".error-page h1"); n != 1 {
		t.Errorf("the error page has %d headings, want 1", n)
	}
	o.screenshot("room-not-found")
}

// findRoomRow walks the pages of All rooms (the tab is on its first page)
// until the room's row shows.
func (p *tab) findRoomRow(room string) {
	p.t.Helper()
	if !p.roomListed(room) {
		p.fail("#%s is not in All rooms", room)
	}
}

// roomListed reports whether the room is on some page of All rooms,
// leaving the tab on that page (or on the last one).
func (p *tab) roomListed(room string) bool {
	p.t.Helper()
	for page := 0; page < 100; page++ {
		if eval[bool](p, fmt.Sprintf(`!!document.getElementById(%s)`, js("room-"+room))) {
			return true
		}
		next := eval[string](p, `(document.querySelector("#rooms a.next-page") || {}).href || ""`)
		if next == "" {
			return false
		}
		p.run("open the next page of All rooms", chromedp.Navigate(next))
		p.waitJS("All rooms", `document.querySelector("#rooms")`)
	}
	p.fail("All rooms has more than 100 pages")
	return false
}

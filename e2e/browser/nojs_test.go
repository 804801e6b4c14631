package browser

import (
	"fmt"
	"testing"
)

// TestWithoutJavaScript: with scripts turned off, every step is a plain
// link or form (POST → 303 → GET): sign up, create a room, post a message,
// read older messages on their own page, join, leave and delete.
func TestWithoutJavaScript(t *testing.T) {
	b := begin(t)
	ada, bob := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage")
	room := unique("plain")

	a := b.newTab("ada", withoutJS)
	a.signUp(ada)
	if eval[bool](a, `typeof htmx !== "undefined" || typeof window.htmx !== "undefined"`) {
		t.Fatal("htmx ran although scripts are off in this tab")
	}
	a.createRoom(room, "No scripts here")
	if got := a.sidebarRooms(); !contains(got, "#"+room) {
		t.Errorf("sidebar after creating = %v, want #%s", got, room)
	}
	// No live stream without scripts: the element is inert.
	if eval[bool](a, `document.documentElement.hasAttribute("data-live-mode")`) {
		t.Error("the live stream started although scripts are off")
	}

	// Post a message: the form posts, the server answers 303, the room
	// page shows the message.
	text := "Plain old form post " + unique("#")
	a.typeInto("#content", text)
	a.click("#composer button[type=submit]")
	a.waitJS("the posted message", atPath("/rooms/"+room)+` && `+messagesWith(text)+`.length === 1`)
	if got := eval[string](a, `location.hash`); got != "#latest" {
		t.Errorf("after posting the page is at %q, want #latest (the newest message)", got)
	}
	if got := eval[string](a, `document.getElementById("content").value`); got != "" {
		t.Errorf("the composer holds %q after posting", got)
	}
	// An empty message: the text box is not required (a file may go
	// alone), so the server answers 422 with the room page and the error
	// under the composer.
	a.click("#composer button[type=submit]")
	a.waitJS("the empty message's error", `document.querySelector("#composer-error .field-error")`)
	a.screenshot("posted")

	// Older messages: 55 more, so the first one is on the second page.
	seedMessages(t, room, ada, 55)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	if n := a.count("#messages li.message"); n != 50 {
		t.Fatalf("the room page shows %d messages, want 50", n)
	}
	href := eval[string](a, `document.querySelector("#messages a.load-older").getAttribute("href")`)
	a.click("#messages a.load-older")
	a.waitJS("the page of older messages", atPath(href)+` && `+hasText("main h1", "#"+room+": older messages"))
	got := a.texts("#messages li.message .text")
	want := []string{text, seedText(1), seedText(2), seedText(3), seedText(4), seedText(5)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the older page shows %q, want %q", got, want)
	}
	if n := a.count("#messages .room-start"); n != 1 {
		t.Errorf("the older page does not show the start of the room")
	}
	a.screenshot("older-page")
	a.click(`main a[href="/rooms/` + room + `#latest"]`)
	a.waitRoomPage(room)

	// Bob joins from All rooms and leaves again, with plain forms.
	o := b.newTab("bob", withoutJS)
	o.signUp(bob)
	o.click(`.sidebar a[href="/rooms"]`)
	o.waitJS("All rooms", atPath("/rooms")+` && document.querySelector("#rooms")`)
	o.findRoomRow(room)
	o.click("#room-" + room + " button")
	o.waitRoomPage(room)
	if got := o.sidebarRooms(); !contains(got, "#"+room) {
		t.Errorf("bob's sidebar after joining = %v", got)
	}
	if n := eval[int](o, messagesWith(seedText(55))+`.length`); n != 1 {
		t.Errorf("bob sees ada's latest message %d times, want once", n)
	}
	o.waitJS("bob's join message", hasText("#messages li.message.system", bob.name()+" joins the room"))
	o.click("#room .room-menu > summary") // a <details>: opens without scripts
	o.click(`#room .room-actions form[action$="/leave"] button`)
	o.waitJS("All rooms after leaving", atPath("/rooms?notice=room-left")+` && `+hasText("#flash .notice", "You left the room."))
	if got := o.sidebarRooms(); contains(got, "#"+room) {
		t.Errorf("bob's sidebar after leaving = %v", got)
	}

	// Ada deletes the room: <details> opens without scripts.
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.click("#room .room-menu > summary")
	a.click("#room details.confirm-delete summary")
	a.waitJS("the delete confirmation", `document.querySelector("#room details.confirm-delete").open`)
	a.click("#room details.confirm-delete form button")
	a.waitJS("home after deleting", atPath("/?notice=you-deleted")+` && `+hasText("#flash .notice", "You deleted the room"))
	if got := a.sidebarRooms(); contains(got, "#"+room) {
		t.Errorf("ada's sidebar after deleting = %v", got)
	}
	a.screenshot("deleted")

	// A wrong password is a page with the message.
	q := b.newTab("intruder", withoutJS)
	q.open("/login")
	q.fill("login", ada.login, "password", "wrong password")
	q.click("#login-page button[type=submit]")
	q.waitJS("the wrong-password page", hasText("#login-page .form-error", "Wrong login or password."))
}

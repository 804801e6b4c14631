package browser

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// pressKey presses and releases a key with no text (Escape, arrows) in
// the focused element, with modifiers.
func (p *tab) pressKey(key, code string, vk, mods int64) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	for _, e := range []input.DispatchKeyEventParams{
		{Type: input.DispatchKeyEventTypeRawKeyDown, Key: key, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk, Modifiers: mods},
		{Type: input.DispatchKeyEventTypeKeyUp, Key: key, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk, Modifiers: mods},
	} {
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, e); err != nil {
			p.fail("press %s: %v", key, err)
		}
	}
}

// unreadIn is the data-unread of the sidebar entry of room.
func (p *tab) unreadIn(room string) string {
	p.t.Helper()
	return eval[string](p, `(document.querySelector('#my-rooms a[data-conversation=`+js(room)+`]') || {getAttribute: () => "missing"}).getAttribute("data-unread")`)
}

// TestCatchUp (issue 39, day one, item 2): Escape marks the open
// conversation read; "Jump to first unread" goes to the divider; "Mark
// all as read" in the sidebar clears every conversation, with and
// without JavaScript; the controls pass the accessibility check.
func TestCatchUp(t *testing.T) {
	b := begin(t)
	ada, bob := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage")
	room, other := unique("catchup"), unique("elsewhere")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Lots to read")
	a.createRoom(other, "And more")
	o := b.newTab("bob")
	o.signUp(bob)
	o.joinFromRoomPage(other)
	o.joinFromRoomPage(room)
	o.waitStream()

	// Messages written behind the page's back (no live event): the open
	// room has news its page does not show.
	seedMessages(t, room, ada, 3)
	home := o.sibling("bob's other tab")
	home.open("/")
	home.waitJS("bob's home", `document.querySelector("#my-rooms")`)
	if got := home.unreadIn(room); got != "3" {
		t.Fatalf("before Escape the room has %s unread, want 3", got)
	}
	eval[bool](o, `document.addEventListener("killrchat:sidebar-stale", () => { window.__caughtUp = true; }) || true`)
	o.run("focus the messages", chromedp.Focus(chromedp.CSS("#messages")))
	o.pressKey("Escape", "Escape", 27, 0)
	o.waitJS("the room marked read", `window.__caughtUp === true`)
	home.open("/")
	home.waitJS("bob's home", `document.querySelector("#my-rooms")`)
	if got := home.unreadIn(room); got != "0" {
		t.Errorf("after Escape in the room the home page says %s unread, want 0", got)
	}

	// Jump to first unread.
	seedMessages(t, room, ada, 2)
	o.open("/rooms/" + room)
	o.waitRoomPage(room)
	o.waitJS("the catch-up bar", `document.querySelector('#catch-up a[href="#unread-since"]')`)
	o.checkAccessibility("the room with its catch-up bar")
	o.click(`#catch-up a[href="#unread-since"]`)
	o.waitJS("the first unread message in view", `location.hash === "#unread-since" && (() => {
		const r = document.getElementById("unread-since").getBoundingClientRect(), m = document.getElementById("messages").getBoundingClientRect();
		return r.top >= m.top - 1 && r.bottom <= m.bottom + 1; })()`)

	// Mark all as read, everywhere, with JavaScript.
	seedMessages(t, room, ada, 1)
	seedMessages(t, other, ada, 1)
	home.open("/")
	home.waitJS("the sidebar's Mark all as read", `document.querySelector(".sidebar .mark-all-read button")`)
	home.checkAccessibility("home with Mark all as read")
	home.click(".sidebar .mark-all-read button")
	home.waitJS("every conversation read", atPath("/")+` && !document.querySelector(".sidebar .mark-all-read") && `+
		`![...document.querySelectorAll("#sidebar-lists a[data-unread]")].some(a => a.getAttribute("data-unread") !== "0")`)

	// And without.
	n := b.newTab("bob without js", withoutJS)
	n.open("/login")
	n.fill("login", bob.login, "password", bob.password)
	n.click("#login-page button[type=submit]")
	n.waitJS("signed in", `document.querySelector(".sidebar .me-name")`)
	seedMessages(t, other, ada, 2)
	n.open("/rooms")
	n.waitJS("the sidebar's Mark all as read", `document.querySelector(".sidebar .mark-all-read button")`)
	if got := n.unreadIn(other); got != "2" {
		t.Fatalf("without JavaScript, %s unread before, want 2", got)
	}
	n.click(".sidebar .mark-all-read button")
	n.waitJS("back on /rooms, all read", atPath("/rooms")+` && !document.querySelector(".sidebar .mark-all-read")`)
	if got := n.unreadIn(other); got != "0" {
		t.Errorf("without JavaScript, %s unread after Mark all as read, want 0", got)
	}
}

// TestDrafts (issue 39, day one, item 4): text typed in a conversation's
// composer and not sent is there again after leaving and coming back,
// for that conversation only. (That sending drops the draft is not
// checked yet.)
func TestDrafts(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room, other := unique("drafty"), unique("clean")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(other, "Elsewhere")
	a.createRoom(room, "Half-written things")
	a.waitStream()
	a.typeInto("#content", "a thought in progress")
	a.open("/rooms/" + other)
	a.waitRoomPage(other)
	if got := eval[string](a, `document.getElementById("content").value`); got != "" {
		t.Errorf("another room's composer holds %q", got)
	}
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitJS("the draft back", `document.getElementById("content").value === "a thought in progress"`)
}

package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// joinFromRoomPage opens the room as a visitor and clicks "Join room".
func (p *tab) joinFromRoomPage(room string) {
	p.t.Helper()
	p.open("/rooms/" + room)
	p.waitJS("the room page for a visitor", hasText("#room h1", "#"+room)+
		` && document.querySelector('#room .room-actions form[action$="/join"] button')`)
	if n := p.count("#composer"); n != 0 {
		p.t.Errorf("%s: a visitor who has not joined sees the composer", p.label)
	}
	p.click(`#room .room-actions form[action$="/join"] button`)
	p.waitRoomPage(room)
}

// recordLive makes the page count what reaches it: the ids of the live
// stream's messages (window.__sse), the resume point of the last one
// (window.__cursor) and the htmx swaps of message posts (window.__posts).
func (p *tab) recordLive() {
	p.t.Helper()
	eval[bool](p, `(() => {
		window.__sse = [];
		window.__posts = 0;
		document.addEventListener("live:message", e => { window.__sse.push(e.detail.id); window.__cursor = e.detail.cursor; });
		document.addEventListener("htmx:after:swap", e => {
			const r = e.detail && e.detail.ctx && e.detail.ctx.request;
			if (r && String(r.method).toUpperCase() === "POST" && /\/messages$/.test(String(r.action))) window.__posts++;
		});
		return true; })()`)
}

// messagesWith is a JavaScript expression: the #messages items whose text
// is exactly text.
func messagesWith(text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll("#messages li.message")].filter(e => {
		const t = e.querySelector(".text"); return t && t.textContent.trim() === %s; })`, js(text))
}

// send types a message in the composer and sends it, then waits until the
// page shows it exactly once although it arrived twice (the POST response
// and the live stream). It returns the message's element id.
func (p *tab) send(text string) string {
	p.t.Helper()
	p.recordLive()
	p.typeInto("#content", text)
	p.click("#composer button[type=submit]")
	p.waitJS("the sent message in the sender's page", messagesWith(text)+`.length > 0`)
	id := eval[string](p, messagesWith(text)+`[0].id`)
	if !strings.HasPrefix(id, "msg-") {
		p.t.Fatalf("%s: message element id = %q, want msg-<timeuuid>", p.label, id)
	}
	// Both copies have arrived: the POST response was swapped and the
	// stream delivered the same id.
	p.waitJS("the POST response and the stream's copy", fmt.Sprintf(
		`window.__posts >= 1 && window.__sse.includes(%s)`, js(strings.TrimPrefix(id, "msg-"))))
	if n := eval[int](p, messagesWith(text)+`.length`); n != 1 {
		p.t.Errorf("%s: the sender sees %q %d times, want once", p.label, text, n)
	}
	if n := p.count(`[id="` + id + `"]`); n != 1 {
		p.t.Errorf("%s: %d elements have the id %s", p.label, n, id)
	}
	if got := eval[string](p, `document.getElementById("content").value`); got != "" {
		p.t.Errorf("%s: the composer still holds %q after sending", p.label, got)
	}
	return id
}

// TestLiveMessages: two people on one room page; what one sends shows up
// at the other's without a reload within 2 s, and exactly once at the
// sender's. A join shows live as a system message and in the participants.
func TestLiveMessages(t *testing.T) {
	b := begin(t)
	ada, bob := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage")
	room := unique("live")

	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Live talk")
	a.waitStream()
	a.mark()

	o := b.newTab("bob")
	o.signUp(bob)
	o.joinFromRoomPage(room)

	// Ada, still on the page, sees Bob join: a muted system message and the
	// participants list, both live.
	a.waitJSFor(5*time.Second, "bob's join message at ada's", hasText("#messages li.message.system", bob.name()+" joins the room"))
	a.waitJS("bob in ada's participants", hasText("#participants li", bob.name()))
	if got := a.texts("#participants li"); len(got) != 2 {
		t.Errorf("ada's participants = %v, want ada and bob", got)
	}
	if style := eval[string](a, `getComputedStyle(document.querySelector("#messages li.message.system")).fontStyle`); style != "italic" {
		t.Errorf("a system message is not shown muted (font-style %q)", style)
	}
	if !a.marked() {
		t.Fatal("ada's page was reloaded; the join should have come over the live stream")
	}
	o.waitStream()
	o.mark()

	// Ada writes; Bob sees it within 2 s, without a reload.
	text := "Hello Bob, the engine runs " + unique("#")
	a.recordLive()
	a.typeInto("#content", text)
	a.click("#composer button[type=submit]")
	took := o.waitJSFor(2*time.Second, "ada's message at bob's", messagesWith(text)+`.length > 0`)
	t.Logf("bob saw ada's message %v after her click returned", took.Round(time.Millisecond))
	if got := eval[string](o, messagesWith(text)+`[0].querySelector(".author").textContent.trim()`); got != ada.name() {
		t.Errorf("bob sees the author as %q, want %q", got, ada.name())
	}
	if !o.marked() {
		t.Error("bob's page was reloaded to show the message")
	}

	// Ada: composer cleared, message once although it came twice.
	id := eval[string](a, messagesWith(text)+`.length ? `+messagesWith(text)+`[0].id : ""`)
	a.waitJS("ada's own message and both its copies", fmt.Sprintf(`(() => { const m = %s;
		return m.length > 0 && window.__posts >= 1 && window.__sse.includes(m[0].id.replace(/^msg-/, "")); })()`, messagesWith(text)))
	if id == "" {
		id = eval[string](a, messagesWith(text)+`[0].id`)
	}
	if n := eval[int](a, messagesWith(text)+`.length`); n != 1 {
		t.Errorf("ada sees her message %d times, want once", n)
	}
	if n := a.count(`[id="` + id + `"]`); n != 1 {
		t.Errorf("ada's page has %d elements with id %s", n, id)
	}
	if got := eval[string](a, `document.getElementById("content").value`); got != "" {
		t.Errorf("ada's composer still holds %q", got)
	}
	if n := eval[int](o, messagesWith(text)+`.length`); n != 1 {
		t.Errorf("bob sees ada's message %d times, want once", n)
	}

	// Bob answers; the same holds the other way round.
	reply := "Hi Ada " + unique("#")
	o.send(reply)
	a.waitJSFor(2*time.Second, "bob's reply at ada's", messagesWith(reply)+`.length > 0`)

	// Both pages list the same messages, in the same order.
	ta, to := a.texts("#messages li.message"), o.texts("#messages li.message")
	if strings.Join(ta, "\n") != strings.Join(to, "\n") {
		t.Errorf("ada and bob see different messages:\nada: %q\nbob: %q", ta, to)
	}
	if !a.marked() || !o.marked() {
		t.Error("a page was reloaded during the conversation")
	}
	a.screenshot("conversation")
	o.screenshot("conversation")

	// A name in the list opens a small profile card on hover, over the
	// text (the layout does not move), and it goes away with the mouse.
	author := `#` + id + ` .author a.user-link`
	card := `#` + id + ` .hovercard`
	before := eval[float64](a, `document.querySelector("#`+id+` .text").getBoundingClientRect().top`)
	a.hover(author)
	a.waitJS("the hover card", fmt.Sprintf(`(() => { const c = document.querySelector(%s);
		return c && c.textContent.includes(%s) && getComputedStyle(c).visibility === "visible"; })()`, js(card), js("@"+ada.login)))
	if after := eval[float64](a, `document.querySelector("#`+id+` .text").getBoundingClientRect().top`); after != before {
		t.Errorf("the hover card pushed the message text by %.0fpx", after-before)
	}
	a.screenshot("hover-card")
	a.hover("#composer textarea")
	a.waitJS("the hover card to hide", fmt.Sprintf(`getComputedStyle(document.querySelector(%s)).visibility === "hidden"`, js(card)))
}

// TestOlderMessages: a room with more than a page of messages shows the
// newest 50; "Load older messages" inserts the older ones above, with no
// duplicates, and the first message the reader saw does not move.
func TestOlderMessages(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("history")

	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "A long history")
	const total = 62
	seedMessages(t, room, ada, total)

	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	got := a.texts("#messages li.message .text")
	if len(got) != 50 {
		t.Fatalf("the room page shows %d messages, want the newest 50", len(got))
	}
	if got[0] != seedText(total-49) || got[49] != seedText(total) {
		t.Errorf("the room page shows %q … %q, want %q … %q", got[0], got[49], seedText(total-49), seedText(total))
	}
	if n := a.count("#messages .load-older"); n != 1 {
		t.Fatalf("the room page has %d \"Load older messages\" links, want 1", n)
	}
	scrolls := eval[bool](a, `(() => { const l = document.getElementById("messages");
		return getComputedStyle(l).overflowY !== "visible" && l.scrollHeight > l.clientHeight + 10; })()`)
	if scrolls {
		// The list opens on the newest message.
		a.waitJS("the list to show the newest message", `(() => { const l = document.getElementById("messages");
			return l.scrollHeight - l.scrollTop - l.clientHeight <= 5; })()`)
		// Read up to the top, where the link is.
		eval[bool](a, `(document.getElementById("messages").scrollTop = 0, true)`)
	} else {
		t.Log("#messages does not scroll by itself at this size; checking order and count only")
		eval[bool](a, `(document.querySelector("#messages .load-older").scrollIntoView(), true)`)
	}
	a.screenshot("before-older")

	// The first message in view, and where it is.
	ref := eval[string](a, `(() => { const l = document.getElementById("messages"), top = l.getBoundingClientRect().top;
		return [...l.querySelectorAll("li.message")].find(e => e.getBoundingClientRect().bottom > top + 1).id; })()`)
	refTop := eval[float64](a, fmt.Sprintf(`document.getElementById(%s).getBoundingClientRect().top`, js(ref)))

	a.mark()
	if !scrolls {
		a.click("#messages .load-older")
	} // else reaching the top loaded them (TestScrollUpLoadsOlder)
	a.waitJS("the older messages", fmt.Sprintf(`document.querySelectorAll("#messages li.message").length === %d`, total))
	a.waitJS("the start of the room", `document.querySelector("#messages .room-start") && !document.querySelector("#messages .load-older")`)
	if !a.marked() {
		t.Error("loading older messages reloaded the page")
	}
	got = a.texts("#messages li.message .text")
	for i, text := range got {
		if want := seedText(i + 1); text != want {
			t.Fatalf("message %d is %q, want %q (all: %q)", i, text, want, got)
		}
	}
	if n := eval[int](a, `new Set([...document.querySelectorAll("#messages li.message")].map(e => e.id)).size`); n != total {
		t.Errorf("%d distinct message ids, want %d", n, total)
	}
	if first := eval[string](a, `document.querySelector("#messages > li").className`); !strings.Contains(first, "room-start") {
		t.Errorf("the first row of the list is %q, want the room start", first)
	}
	if scrolls {
		after := eval[float64](a, fmt.Sprintf(`document.getElementById(%s).getBoundingClientRect().top`, js(ref)))
		if d := after - refTop; d < -3 || d > 3 {
			t.Errorf("the first message in view (%s) moved by %.1fpx when older messages came in", ref, d)
		}
	}
	a.screenshot("after-older")
}

func seedText(i int) string { return fmt.Sprintf("seed message %03d", i) }

// seedMessages posts n messages by u into room straight through the store.
func seedMessages(t *testing.T, room string, u person, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := db.RoomFor(ctx, room, u.login)
	if err != nil {
		t.Fatalf("read room %s: %v", room, err)
	}
	author := chat.UserRef{Login: u.login, Firstname: u.first, Lastname: u.last}
	for i := 1; i <= n; i++ {
		if _, err := db.PostMessage(ctx, r, author, seedText(i)); err != nil {
			t.Fatalf("seed message %d: %v", i, err)
		}
	}
	// No wait: the store counts each message it stores, and a newest
	// page kept in memory is served only while that count holds. The
	// sidebar states kept (service/cache's Sidebars) hear of a room's
	// messages through the hub: the app's caches are told that the room
	// changed, as an invalidation (which no page's stream carries).
	if err := shared(t).main.Hub().Invalidate(ctx, live.Invalidation{Rooms: []string{r.Name}}); err != nil {
		t.Fatal(err)
	}
}

// TestRoomDeletedWhileOpen: the creator deletes a room that someone else
// has open; that page goes home with a notice, by itself.
func TestRoomDeletedWhileOpen(t *testing.T) {
	b := begin(t)
	ada, bob := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage")
	room := unique("doomed")

	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Not for long")

	o := b.newTab("bob")
	o.signUp(bob)
	o.joinFromRoomPage(room)
	o.waitStream()

	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.click("#room .room-menu > summary")
	a.click("#room details.confirm-delete summary")
	a.click("#room details.confirm-delete form button")
	took := o.waitJSFor(5*time.Second, "bob's page to go home",
		atPath("/?notice=room-deleted")+` && `+hasText("#flash .notice", "The room you were in has been deleted."))
	t.Logf("bob's page left the deleted room within %v", took.Round(time.Millisecond))
	if got := o.sidebarRooms(); contains(got, "#"+room) {
		t.Errorf("bob's sidebar still lists #%s: %v", room, got)
	}
	o.screenshot("room-deleted")
	a.waitJS("ada's home page", atPath("/?notice=you-deleted"))
}

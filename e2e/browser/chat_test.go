package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/killrchat/killrchat/chat"
)

// The tests of this file check the conventions of a chat in the browser
// (issue 10): scrolling, the composer, connection state, the phone layout.

// newestInView is a JavaScript expression: the newest message of #messages
// is wholly inside the list's visible box and the window.
const newestInView = `(() => { const l = document.getElementById("messages");
	const ms = l ? l.querySelectorAll("li.message") : [];
	if (!ms.length) return false;
	const m = ms[ms.length - 1].getBoundingClientRect(), b = l.getBoundingClientRect();
	return m.top >= Math.max(b.top, 0) - 1 && m.bottom <= Math.min(b.bottom, window.innerHeight) + 1; })()`

// newestBelow is how far (px) the newest message's bottom is below what
// the reader sees, for the failure message.
const newestBelow = `(() => { const l = document.getElementById("messages"); const ms = l.querySelectorAll("li.message");
	const m = ms[ms.length - 1].getBoundingClientRect(), b = l.getBoundingClientRect();
	return Math.round(m.bottom - Math.min(b.bottom, window.innerHeight)); })()`

// frames waits for two animation frames, so scroll events and observers
// have run.
func (p *tab) frames() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise)); err != nil {
		p.fail("wait for frames: %v", err)
	}
}

// post puts text in the composer and clicks Send, and waits until the
// sender's page shows it.
func (p *tab) post(text string) string {
	p.t.Helper()
	eval[bool](p, fmt.Sprintf(`(() => { const c = document.getElementById("content"); c.value = %s;
		c.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, js(text)))
	p.click("#composer button[type=submit]")
	p.waitJS("the message in the sender's page", messagesWith(text)+`.length === 1`)
	// The stream may bring the message before the post's answer empties
	// the composer: sent is when both happened, as the sender sees it.
	p.waitJS("the composer emptied", `document.getElementById("content").value === ""`)
	return eval[string](p, messagesWith(text)+`[0].id`)
}

// pair is two people in a room, both on its page with the stream up.
func pair(t *testing.T, b *bt, s size, banner string) (a, o *tab, room string) {
	t.Helper()
	return pairWith(t, b, s, banner)
}

// pairWith is pair with options for Ada's tab.
func pairWith(t *testing.T, b *bt, s size, banner string, adaOpts ...tabOption) (a, o *tab, room string) {
	t.Helper()
	ada, bob := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage")
	room = unique("room")
	a = b.newTab("ada", adaOpts...)
	a.signUp(ada)
	a.createRoom(room, banner)
	o = b.newTab("bob")
	o.signUp(bob)
	o.joinFromRoomPage(room)
	for _, p := range []*tab{a, o} {
		p.resize(s)
		p.open("/rooms/" + room)
		p.waitRoomPage(room)
		p.waitStream()
	}
	return a, o, room
}

// TestListFollowsNewMessages (item 1): a reader at the bottom stays there
// as messages come, whatever their height, sender and receiver alike; a
// reader who scrolled up stays where they are, and a pill counts what
// came and jumps to it.
func TestListFollowsNewMessages(t *testing.T) {
	for _, s := range sizes {
		t.Run(s.name, func(t *testing.T) {
			b := begin(t)
			a, o, _ := pair(t, b, s, "Tall messages")
			for i := 1; i <= 14; i++ {
				text := fmt.Sprintf("four lines %d%s\nline two\nline three\nline four", i, unique(" #"))
				a.post(text)
				o.waitJSFor(2*time.Second, "the message at bob's", messagesWith(text)+`.length === 1`)
				for _, p := range []*tab{a, o} {
					p.frames()
					if !eval[bool](p, newestInView) {
						p.screenshot(fmt.Sprintf("stuck-%d", i))
						t.Fatalf("%s, message %d: the newest message is %dpx below the view", p.label, i, eval[int](p, newestBelow))
					}
				}
			}
			a.screenshot("sender-after-14")
			o.screenshot("receiver-after-14")

			// Bob reads older messages; two arrive: his view does not move, a
			// pill says so.
			eval[bool](o, `(document.getElementById("messages").scrollTop = 0, true)`)
			o.frames()
			ref := eval[string](o, `(() => { const l = document.getElementById("messages"), top = l.getBoundingClientRect().top;
				return [...l.querySelectorAll("li.message")].find(e => e.getBoundingClientRect().bottom > top + 1).id; })()`)
			refTop := eval[float64](o, fmt.Sprintf(`document.getElementById(%s).getBoundingClientRect().top`, js(ref)))
			for i := 0; i < 2; i++ {
				text := "while bob reads " + unique("#")
				a.post(text)
				o.waitJSFor(2*time.Second, "the message at bob's", messagesWith(text)+`.length === 1`)
			}
			o.waitJS("the pill", `(() => { const p = document.getElementById("new-messages"); return p && !p.hidden && p.textContent.trim() === "2 new messages ↓"; })()`)
			if d := eval[float64](o, fmt.Sprintf(`document.getElementById(%s).getBoundingClientRect().top`, js(ref))) - refTop; d < -1 || d > 1 {
				t.Errorf("bob scrolled up, and the view moved by %.0fpx when messages came", d)
			}
			o.screenshot("pill")
			o.click("#new-messages")
			o.waitJS("the newest message after the pill", newestInView+` && document.getElementById("new-messages").hidden`)
		})
	}
}

// TestRoomOpensOnNewest (item 2): every room page load shows the newest
// message: with JavaScript, and without (the room links and the redirect
// after a post point at #latest, the newest message's anchor).
func TestRoomOpensOnNewest(t *testing.T) {
	b := begin(t)
	ada, cy := newPerson("Ada", "Lovelace"), newPerson("Cy", "Plain")
	room := unique("long")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Many messages")
	seedMessages(t, room, ada, 60)

	n := b.newTab("cy", withoutJS)
	n.signUp(cy)
	n.open("/rooms/" + room)
	n.click(`#room .room-actions form[action$="/join"] button`)
	n.waitRoomPage(room)

	for _, s := range sizes {
		a.resize(s)
		a.open("/rooms/" + room)
		a.waitRoomPage(room)
		a.waitJS("the newest message on opening the room ("+s.name+")", newestInView)
		a.screenshot("opened-" + s.name)

		n.resize(s)
		n.open("/")
		n.waitJS("home", atPath("/"))
		n.click(`main .room-list a[href^="/rooms/` + room + `#"]`)
		n.waitRoomPage(room)
		if !eval[bool](n, newestInView) {
			n.screenshot("nojs-not-at-newest-" + s.name)
			t.Errorf("without JavaScript (%s) the room opens %dpx above its newest message", s.name, eval[int](n, newestBelow))
		}
		n.screenshot("nojs-opened-" + s.name)

		text := "posted without scripts " + unique("#")
		n.typeInto("#content", text)
		n.click("#composer button[type=submit]")
		n.waitJS("the posted message", atPath("/rooms/"+room)+` && `+messagesWith(text)+`.length === 1`)
		if got := eval[string](n, `location.hash`); got != "#latest" {
			t.Errorf("after a post without JavaScript the page is at %q, want #latest", got)
		}
		if !eval[bool](n, newestInView) {
			t.Errorf("after a post without JavaScript (%s) the newest message is %dpx below the view", s.name, eval[int](n, newestBelow))
		}
	}
}

// TestJoinOnPhone (items 3 and 11): on a phone, the menu opens the drawer
// (a <details>, also without JavaScript), All rooms lists cards whose Join
// button is on screen, a room that one has not joined is a link, and
// Join works.
func TestJoinOnPhone(t *testing.T) {
	b := begin(t)
	ada, bob := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage")
	room := unique("phone")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Rooms on small screens")

	for _, mode := range []string{"js", "nojs"} {
		var o *tab
		if mode == "js" {
			o = b.newTab("bob")
			o.signUp(bob)
		} else {
			o = b.newTab("cy", withoutJS)
			o.signUp(newPerson("Cy", "Plain"))
		}
		o.resize(phone)
		o.open("/")
		if eval[bool](o, `document.querySelector('.sidebar a[href="/rooms"]').checkVisibility()`) {
			t.Errorf("%s: the phone shows the sidebar's links before the menu is opened", mode)
		}
		o.click(".nav-drawer > summary")
		o.waitJS("the open drawer", `document.querySelector(".nav-drawer").open && document.querySelector('.sidebar a[href="/rooms"]').checkVisibility()`)
		o.screenshot("drawer-" + mode)
		o.click(`.sidebar a[href="/rooms"]`)
		o.waitJS("All rooms", atPath("/rooms")+` && document.querySelector("#rooms")`)
		o.findRoomRow(room)
		card := "#room-" + room
		// The name is a link and the Join button is whole on screen.
		if href := eval[string](o, `document.querySelector("`+card+` a.room-name").getAttribute("href")`); !strings.HasPrefix(href, "/rooms/"+room) {
			t.Errorf("%s: the room's name links to %q", mode, href)
		}
		// All rooms lists every test's rooms: bring the card into view
		// first; what is checked is that the button is not clipped.
		onScreen := eval[bool](o, `(() => { const b = document.querySelector("`+card+` button"); b.scrollIntoView({block: "center"});
			const r = b.getBoundingClientRect();
			return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth && r.top >= 0 && r.bottom <= window.innerHeight; })()`)
		if !onScreen {
			t.Errorf("%s: the Join button of the card is not on the phone's screen", mode)
		}
		if wide := eval[bool](o, `document.documentElement.scrollWidth > window.innerWidth`); wide {
			t.Errorf("%s: All rooms is wider than the phone", mode)
		}
		o.screenshot("all-rooms-" + mode)
		// The name opens the room, which offers Join.
		o.click(card + " a.room-name")
		o.waitJS("the room page for a visitor", hasText("#room h1", "#"+room)+` && document.querySelector('#room .room-actions form[action$="/join"] button')`)
		o.open("/rooms")
		o.findRoomRow(room)
		o.click(card + " button")
		o.waitRoomPage(room)
		o.screenshot("joined-" + mode)
		// The messages take most of the height.
		share := eval[float64](o, `document.getElementById("messages").getBoundingClientRect().height / window.innerHeight`)
		t.Logf("%s: on a phone the messages take %.0f%% of the height", mode, share*100)
		if share < 0.70 {
			t.Errorf("%s: the messages take %.0f%% of the phone's height, want at least 70%%", mode, share*100)
		}
	}
}

// pressEnter presses Enter (with Shift) in the focused element as a
// keyboard does: one keyDown that carries the text, so a handler that
// cancels the keydown also cancels the line break (chromedp.KeyEvent sends
// the text as a separate char event, which no page can cancel).
func (p *tab) pressEnter(shift bool) {
	p.t.Helper()
	var mods int64
	if shift {
		mods = int64(chromedp.ModifierShift)
	}
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	for _, e := range []input.DispatchKeyEventParams{
		{Type: input.DispatchKeyEventTypeKeyDown, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Text: "\r", UnmodifiedText: "\r", Modifiers: mods},
		{Type: input.DispatchKeyEventTypeKeyUp, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Modifiers: mods},
	} {
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, e); err != nil {
			p.fail("press Enter: %v", err)
		}
	}
}

// TestComposerKeys (item 4): Enter sends, Shift+Enter is a new line, Enter
// during an IME composition does not send, and the composer keeps the
// focus after sending (by key or by click) and has it when the room opens.
func TestComposerKeys(t *testing.T) {
	b := begin(t)
	a, _, _ := pair(t, b, desktop, "Keys")
	if got := eval[string](a, `document.activeElement && document.activeElement.id`); got != "content" {
		t.Errorf("the room opened with the focus on %q, want the composer", got)
	}
	first, second := "first line "+unique("#"), "second line"
	a.typeInto("#content", first)
	a.pressEnter(true)
	a.typeInto("#content", second)
	if got := eval[string](a, `document.getElementById("content").value`); got != first+"\n"+second {
		t.Errorf("after Shift+Enter the composer holds %q, want two lines", got)
	}
	// Enter that ends an IME composition is the IME's, not a send.
	prevented := eval[bool](a, `(() => { const e = new KeyboardEvent("keydown", {key: "Enter", isComposing: true, bubbles: true, cancelable: true});
		document.getElementById("content").dispatchEvent(e); return e.defaultPrevented; })()`)
	a.frames()
	if prevented || a.count("#messages li.message:not(.system)") != 0 {
		t.Error("Enter during an IME composition sent the message")
	}
	a.pressEnter(false)
	a.waitJS("the message sent by Enter", messagesWith(first+"\n"+second)+`.length === 1`)
	a.waitJS("the composer emptied", `document.getElementById("content").value === ""`)
	a.frames()
	if got := eval[string](a, `document.activeElement && document.activeElement.id`); got != "content" {
		t.Errorf("after Enter the focus is on %q, want the composer", got)
	}
	// A click on Send: the focus comes back to the composer.
	a.post("clicked " + unique("#"))
	a.waitJS("the focus back in the composer", `document.activeElement && document.activeElement.id === "content"`)
}

// TestSlowSendPostsOnce (item 5): while a post is slow, Send is disabled
// and more clicks and Enter do not send again; the message is stored once.
func TestSlowSendPostsOnce(t *testing.T) {
	b := begin(t)
	a, _, room := pair(t, b, desktop, "Slow network")
	ctx, cancel := context.WithTimeout(a.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{{URLPattern: a.base + "/rooms/*/messages", Latency: 1500, DownloadThroughput: -1, UploadThroughput: -1}},
	}); err != nil {
		t.Fatal(err)
	}
	text := "slow but once " + unique("#")
	a.typeInto("#content", text)
	a.click("#composer button[type=submit]")
	a.waitJS("Send disabled while the post is in flight", `document.querySelector("#composer button[type=submit]").disabled`)
	a.screenshot("in-flight")
	eval[bool](a, `(document.querySelector("#composer button[type=submit]").click(), true)`)
	a.run("focus the composer", chromedp.Focus(chromedp.CSS("#content")))
	a.pressEnter(false)
	a.waitJSFor(5*time.Second, "the message", messagesWith(text)+`.length === 1`)
	a.waitJS("Send enabled again", `!document.querySelector("#composer button[type=submit]").disabled`)
	time.Sleep(2 * time.Second) // a second post, if one went out, would land by now
	if n := eval[int](a, messagesWith(text)+`.length`); n != 1 {
		t.Errorf("the page shows the slow message %d times", n)
	}
	if n := storedCount(t, room, text); n != 1 {
		t.Errorf("the slow message was stored %d times, want once", n)
	}
}

// storedCount is how many stored messages of room have exactly text.
func storedCount(t *testing.T, room, text string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := db.Room(ctx, room)
	if err != nil {
		t.Fatalf("read room: %v", err)
	}
	msgs, _, err := db.MessagesBefore(ctx, r, chat.ID{}, 200)
	if err != nil {
		t.Fatalf("read messages: %v", err)
	}
	n := 0
	for _, m := range msgs {
		if m.Content == text {
			n++
		}
	}
	return n
}

// offline cuts the tab's network (or brings it back) and tells the page,
// as the browser does when a laptop loses its Wi-Fi.
func (p *tab) offline(off bool) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		p.fail("network: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{{Offline: off, DownloadThroughput: -1, UploadThroughput: -1}},
	}); err != nil {
		p.fail("network conditions: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: off, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
		p.fail("network state: %v", err)
	}
}

// TestFailuresShow (item 6): with the network down, the stream shows
// "Reconnecting…" and a send shows "Couldn't send" with Retry, the text
// kept; back online, the stream reconnects at once and Retry sends once.
//
// Ada's browser has a stream per tab (no SharedWorker, no Web Locks): the
// network's emulation reaches a page's own connections only.
func TestFailuresShow(t *testing.T) {
	b := begin(t)
	a, o, room := pairWith(t, b, desktop, "Flaky network", withStreamPerTab)
	if got := eval[string](a, `document.documentElement.getAttribute("data-live-mode")`); got != "tab" {
		t.Fatalf("ada's tab runs its stream as %q, want tab", got)
	}
	a.offline(true)
	// The open stream does not notice a dead network by itself right away;
	// end it as a dropped connection would.
	eval[bool](a, `(() => { const m = window.KillrLive.current; m.es.onerror(); return true; })()`)
	a.waitJSFor(5*time.Second, "the Reconnecting… bar", `!document.getElementById("stream-status").hidden`)
	if got := a.text("#stream-status"); got != "Reconnecting…" {
		t.Errorf("the stream's bar says %q", got)
	}

	text := "sent into the void " + unique("#")
	a.typeInto("#content", text)
	a.click("#composer button[type=submit]")
	a.waitJS("Couldn't send", hasText("#composer-error", "Couldn't send")+` && document.querySelector("#composer-error button.retry")`)
	if got := eval[string](a, `document.getElementById("content").value`); got != text {
		t.Errorf("after a failed send the composer holds %q, want the text kept", got)
	}
	a.screenshot("offline")

	// Bob writes meanwhile; Ada gets it on reconnecting.
	missed := "while ada was away " + unique("#")
	o.post(missed)

	start := time.Now()
	a.offline(false)
	took := a.waitJSFor(8*time.Second, "the stream back", `document.getElementById("stream-status").hidden && `+
		`document.documentElement.getAttribute("data-live") === "up"`)
	t.Logf("the stream was back %v after the network (reconnect at once on the online event)", took.Round(time.Millisecond))
	a.waitJSFor(5*time.Second, "the message missed while offline", messagesWith(missed)+`.length === 1`)
	_ = start

	a.click("#composer-error button.retry")
	a.waitJS("the retried message", messagesWith(text)+`.length === 1`)
	a.waitJS("the composer emptied and the error gone", `document.getElementById("content").value === "" && !document.querySelector("#composer-error .field-error")`)
	time.Sleep(500 * time.Millisecond)
	if n := storedCount(t, room, text); n != 1 {
		t.Errorf("the retried message was stored %d times, want once", n)
	}
	a.screenshot("back-online")
}

// TestLinksInMessages (item 7): web addresses in a message are links that
// open in a new tab without referrer or opener; nothing else is markup.
func TestLinksInMessages(t *testing.T) {
	b := begin(t)
	a, o, _ := pair(t, b, desktop, "Links")
	text := "Docs (see https://example.com/a?b=1&c=2). Not javascript:alert(1) nor <b>bold</b> " + unique("#")
	id := a.post(text)
	o.waitJSFor(2*time.Second, "the message at bob's", messagesWith(text)+`.length === 1`)
	for _, p := range []*tab{a, o} {
		links := eval[[]map[string]string](p, `[...document.querySelectorAll("#`+id+` .text a")].map(a => ({href: a.getAttribute("href"), rel: a.rel, target: a.target, text: a.textContent}))`)
		if len(links) != 1 {
			t.Fatalf("%s: %d links in the message, want 1: %v", p.label, len(links), links)
		}
		l := links[0]
		if l["href"] != "https://example.com/a?b=1&c=2" || l["text"] != "https://example.com/a?b=1&c=2" ||
			l["rel"] != "noopener noreferrer nofollow ugc" || l["target"] != "_blank" {
			t.Errorf("%s: link %v", p.label, l)
		}
		if n := p.count("#" + id + " .text b"); n != 0 {
			t.Errorf("%s: HTML in a message became markup", p.label)
		}
	}
}

// TestGroupingAndTime (item 8): consecutive messages of one author are one
// group (name and time once, each its own element with its time in a
// title), times are in the reader's zone, a day separator says "Today";
// without JavaScript the time is labelled UTC.
func TestGroupingAndTime(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Groups")
	const zone = "Asia/Kolkata" // UTC+5:30: minutes differ from UTC too
	ctx, cancel := context.WithTimeout(o.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone}); err != nil {
		t.Fatal(err)
	}
	o.open("/rooms/" + room)
	o.waitRoomPage(room)
	o.waitStream()

	ids := []string{a.post("first of a group " + unique("#")), a.post("second of the group " + unique("#"))}
	o.waitJS("both at bob's", fmt.Sprintf(`document.getElementById(%s) && document.getElementById(%s)`, js(ids[0]), js(ids[1])))
	bobs := o.post("bob answers " + unique("#"))
	for _, p := range []*tab{a, o} {
		p.waitJS("bob's answer", fmt.Sprintf(`document.getElementById(%s)`, js(bobs)))
		classes := eval[[]string](p, fmt.Sprintf(`[%s, %s, %s].map(id => document.getElementById(id).className)`, js(ids[0]), js(ids[1]), js(bobs)))
		if strings.Contains(classes[0], "cont") || !strings.Contains(classes[1], "cont") || strings.Contains(classes[2], "cont") {
			t.Errorf("%s: classes %q, want only ada's second message grouped", p.label, classes)
		}
		if shown := eval[bool](p, fmt.Sprintf(`getComputedStyle(document.querySelector("#%s .meta")).display !== "none"`, ids[1])); shown {
			t.Errorf("%s: the grouped message shows its name and time again", p.label)
		}
		if title := eval[string](p, fmt.Sprintf(`document.getElementById(%s).title`, js(ids[1]))); title == "" {
			t.Errorf("%s: the grouped message has no full time in a title", p.label)
		}
		if got := p.texts("#messages .day-sep"); len(got) != 1 || got[0] != "Today" {
			t.Errorf("%s: day separators %q, want one Today", p.label, got)
		}
	}
	// Bob's page is in Kolkata: the time shown is the message's time there.
	u, err := chat.ParseID(strings.TrimPrefix(bobs, "msg-"))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	want := u.Time().In(loc).Format("03:04 PM")
	got := strings.ReplaceAll(o.text("#"+bobs+" time"), "\u202f", " ")
	if got != want {
		t.Errorf("bob's page shows %q for a message at %s in %s, want %q", got, u.Time().UTC().Format(time.RFC3339), zone, want)
	}
	o.screenshot("groups")

	n := b.newTab("cy", withoutJS)
	n.signUp(newPerson("Cy", "Plain"))
	n.open("/rooms/" + room)
	n.click(`#room .room-actions form[action$="/join"] button`)
	n.waitRoomPage(room)
	if got := n.text("#" + bobs + " time"); !strings.HasSuffix(got, " UTC") {
		t.Errorf("without JavaScript the time reads %q, want it labelled UTC", got)
	}
	if got := n.count("#messages li.message.cont"); got < 1 {
		t.Errorf("without JavaScript no message is grouped")
	}
}

// TestComposerGrowsAndSaysWhy (item 9): the composer grows with its text up
// to about 40%% of the view; a whitespace-only message gets a small
// message under the box, not the page's banner.
func TestComposerGrowsAndSaysWhy(t *testing.T) {
	for _, s := range sizes {
		t.Run(s.name, func(t *testing.T) {
			b := begin(t)
			a, _, _ := pair(t, b, s, "Long messages")
			h0 := eval[float64](a, `document.getElementById("content").getBoundingClientRect().height`)
			setText := func(text string) float64 {
				eval[bool](a, fmt.Sprintf(`(() => { const c = document.getElementById("content"); c.value = %s;
					c.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, js(text)))
				a.frames()
				return eval[float64](a, `document.getElementById("content").getBoundingClientRect().height`)
			}
			h3 := setText("one\ntwo\nthree")
			if h3 <= h0+20 {
				t.Errorf("three lines: the composer is %.0fpx high, was %.0fpx", h3, h0)
			}
			hMany := setText(strings.Repeat("a line\n", 60))
			limit := eval[float64](a, `window.innerHeight * 0.4`)
			if hMany > limit+2 || hMany < limit*0.8 {
				t.Errorf("sixty lines: the composer is %.0fpx high, want about 40%% of the view (%.0fpx)", hMany, limit)
			}
			if !eval[bool](a, newestInView) {
				t.Errorf("a tall composer pushed the newest message out of view")
			}
			a.screenshot("tall-composer")
			if h := setText(""); h > h0+2 {
				t.Errorf("emptied, the composer stays %.0fpx high (was %.0fpx)", h, h0)
			}

			setText("   \n  ")
			a.click("#composer button[type=submit]")
			a.waitJS("the inline message", hasText("#composer-error .field-error", "Write something first."))
			if got := a.text("#flash"); got != "" {
				t.Errorf("a whitespace-only message put %q in the page's banner", got)
			}
			if got := eval[string](a, `document.getElementById("content").getAttribute("aria-invalid")`); got != "true" {
				t.Errorf("the composer is not marked invalid (%q)", got)
			}
			a.screenshot("whitespace")
		})
	}
}

// TestAccessibility (item 10): axe-core finds no serious or critical
// violation on any page at either width; the message list is a polite
// live log; "Skip to composer" comes first; a name's card opens on
// keyboard focus; after a form error the focus is on the first invalid
// field.
func TestAccessibility(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("a11y")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Everyone can read this")
	seedMessages(t, room, ada, 3)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.post("A link https://example.com/docs and more " + unique("#"))
	v := b.newTab("visitor")

	pages := []struct{ name, path string }{
		{"home", "/"}, {"all-rooms", "/rooms"}, {"room", "/rooms/" + room}, {"new-room", "/rooms/new"},
		{"profile", "/profile"}, {"user", "/users/" + ada.login}, {"error", "/rooms/" + unique("missing")},
		{"search", "/search?q=link+docs"}, {"rooms-filter", "/rooms?name=a11"},
	}
	for _, s := range sizes {
		a.resize(s)
		v.resize(s)
		for _, pg := range []struct{ name, path string }{{"login", "/login"}, {"signup", "/signup"}} {
			v.open(pg.path)
			v.waitJS(pg.name, `document.readyState === "complete" && document.querySelector("main h1")`)
			v.checkAccessibility(pg.name + " at " + s.name)
		}
		for _, pg := range pages {
			a.open(pg.path)
			a.waitJS(pg.name, `document.readyState === "complete" && document.querySelector("main h1")`)
			if pg.name == "room" {
				a.waitStream()
			}
			a.checkAccessibility(pg.name + " at " + s.name)
			if s.phone {
				a.click(".nav-drawer > summary")
				a.checkAccessibility(pg.name + " with the menu open at " + s.name)
			}
		}
	}
	// Dark mode, with the room's menu and the delete confirmation open.
	a.resize(desktop)
	ctx, cancel := context.WithTimeout(a.ctx, waitTimeout)
	defer cancel()
	dark := emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, dark); err != nil {
		t.Fatal(err)
	}
	for _, pg := range pages {
		a.open(pg.path)
		a.waitJS(pg.name, `document.readyState === "complete" && document.querySelector("main h1")`)
		if pg.name == "room" {
			a.click("#room .room-menu > summary")
			a.click("#room details.confirm-delete summary")
			a.screenshot("dark-room-menu")
		}
		a.checkAccessibility(pg.name + " in dark mode")
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}

	// The message list is a log that screen readers follow politely.
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	if got := eval[[]string](a, `(() => { const l = document.getElementById("messages").closest("[role=log]"); return l ? [l.getAttribute("aria-live"), l.getAttribute("aria-label")] : []; })()`); len(got) != 2 || got[0] != "polite" || got[1] == "" {
		t.Errorf("the messages are not in a labelled polite log: %q", got)
	}
	// The first Tab reaches "Skip to composer", which leads to the composer
	// (on a touch screen, where the room does not open with the focus in
	// the composer).
	a.resize(phone)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.run("tab", chromedp.KeyEvent("\t"))
	if got := eval[string](a, `document.activeElement.textContent.trim()`); got != "Skip to composer" {
		t.Errorf("the first Tab reaches %q, want Skip to composer", got)
	}
	a.screenshot("skip-link")
	a.pressEnter(false)
	a.waitJS("the composer focused from the skip link", `document.activeElement && document.activeElement.id === "content"`)
	a.resize(desktop)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)

	// A name's card opens on keyboard focus too.
	a.run("tab", chromedp.KeyEvent("\t")) // keyboard use, so focus rings and :focus-visible apply
	link := "#messages li.message:not(.system) .author a.user-link"
	eval[bool](a, `(document.querySelector("`+link+`").focus(), true)`)
	a.waitJS("the hover card on focus", `(() => { const c = document.querySelector("#messages li.message:not(.system) .hovercard");
		return c && getComputedStyle(c).visibility === "visible"; })()`)
	a.screenshot("card-on-focus")

	// A form error moves the focus to the first invalid field.
	v.resize(desktop)
	v.open("/signup")
	v.fill("login", unique("eve"), "password", "long enough 1", "password_confirm", "not the same 1",
		"firstname", "Eve", "lastname", "Smith")
	v.click("#signup button[type=submit]")
	v.waitJS("the form error", `document.querySelector('#signup [aria-invalid="true"]')`)
	first := eval[string](v, `document.querySelector('#signup [aria-invalid="true"]').id`)
	v.waitJS("the focus on the first invalid field", fmt.Sprintf(`document.activeElement && document.activeElement.id === %s`, js(first)))
}

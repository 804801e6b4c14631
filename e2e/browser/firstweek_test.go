package browser

// Issue 39, "Defects": what a new team hit in its first week. Each test
// below failed before its fix.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/killrchat/killrchat/chat"
)

// viewerOf is the person signed in at p (as seedMessages needs them).
func viewerOf(p *tab, first, last string) person {
	p.t.Helper()
	return person{login: eval[string](p, `document.body.getAttribute("data-viewer")`), first: first, last: last}
}

// sidebarEntryJS is a JavaScript expression: the sidebar's link to room.
func sidebarEntryJS(room string) string {
	return fmt.Sprintf(`document.querySelector('#my-rooms a[href="/rooms/%s#latest"]')`, room)
}

// TestPillMarksRead (defect 2): Bob reads older messages when a mention
// of him arrives; the pill takes him to it, and that is reading it: the
// sidebar's @ badge and the title's count go, in this tab and in another
// tab of his.
func TestPillMarksRead(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Pill")
	seedMessages(t, room, viewerOf(a, "Ada", "Lovelace"), 40)
	o.open("/rooms/" + room)
	o.waitRoomPage(room)
	o.waitStream()
	other := o.sibling("bob-home")
	other.open("/")
	other.waitStream()
	entry := sidebarEntryJS(room)
	for _, p := range []*tab{o, other} {
		p.waitJS("the room read", entry+` && !`+entry+`.querySelector(".badge") && !document.title.startsWith("(")`)
	}

	eval[bool](o, `(document.getElementById("messages").scrollTop = 0, true)`)
	o.frames()
	bob := eval[string](o, `document.body.getAttribute("data-viewer")`)
	a.post("look here @" + bob + " " + unique("#"))
	o.waitJS("the pill", `!document.getElementById("new-messages").hidden`)
	for _, p := range []*tab{o, other} {
		p.waitJS("the @ badge and the title's count", entry+`.querySelector(".badge.mention") && document.title.startsWith("(1) ")`)
	}
	o.click("#new-messages")
	for _, p := range []*tab{o, other} {
		p.waitJS("the @ badge and the title's count gone after the pill",
			`!`+entry+`.querySelector(".badge") && `+entry+`.getAttribute("data-unread") === "0" && !document.title.startsWith("(")`)
	}
	o.open("/")
	o.waitJS("still read after a reload", `document.readyState === "complete" && !`+entry+`.querySelector(".badge")`)
}

// reachable is a JavaScript expression: every element matching sel is
// drawn and is what a click at its middle hits (nothing cuts it off or
// covers it).
func reachable(sel string) string {
	return fmt.Sprintf(`(() => { const all = [...document.querySelectorAll(%s)];
		return all.length > 0 && all.every(e => { const r = e.getBoundingClientRect();
			if (r.width === 0 || r.height === 0) return false;
			const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
			return hit && (hit === e || e.contains(hit)); }); })()`, js(sel))
}

// TestNewestMessageMenuShows (defect 5): the ⋯ menu of the newest
// message, one's own, shows whole with Edit and Delete, on a desktop and
// a phone.
func TestNewestMessageMenuShows(t *testing.T) {
	for _, s := range sizes {
		t.Run(s.name, func(t *testing.T) {
			b := begin(t)
			ada := newPerson("Ada", "Lovelace")
			room := unique("menu")
			a := b.newTab("ada")
			a.signUp(ada)
			a.createRoom(room, "Menus")
			seedMessages(t, room, ada, 20)
			a.resize(s)
			a.open("/rooms/" + room)
			a.waitRoomPage(room)
			a.waitStream()
			id := a.post("the newest " + unique("#"))
			a.click("#" + id + " .message-menu > summary")
			menu := "#" + id + " .message-menu[open] .menu"
			a.waitJS("the menu open", `document.querySelector(`+js(menu)+`)`)
			a.frames()
			for _, item := range []string{"a.copy-link", "a.quote", "a.edit-link", ".delete-message button", ".react-picker button"} {
				if !eval[bool](a, reachable(menu+" "+item)) {
					a.screenshot("cut-off")
					t.Fatalf("%s: the newest message's menu item %s is cut off or covered", s.name, item)
				}
			}
			a.screenshot("menu")
			a.checkAccessibility("an open message menu at " + s.name)
		})
	}
}

// TestMenusClose (defect 6): a room's ⋯, a message's ⋯ and the phone's
// Menu close on a click outside and on Escape, which gives the focus back
// to their button; opening one closes another; a reaction chosen with the
// keyboard leaves the focus on the menu's button.
func TestMenusClose(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("menus")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Menus close")
	// The newest message sits at the bottom, clear of the open room menu.
	seedMessages(t, room, ada, 12)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitStream()
	id := a.post("a message " + unique("#"))
	roomMenu, msgMenu := "#room .room-menu", "#"+id+" .message-menu"
	isOpen := func(sel string) string { return `document.querySelector(` + js(sel) + `).open` }

	a.click(roomMenu + " > summary")
	a.waitJS("the room menu open", isOpen(roomMenu))
	a.checkAccessibility("the open room menu")
	a.click("#messages")
	a.waitJS("the room menu closed by a click outside", `!`+isOpen(roomMenu))

	a.click(roomMenu + " > summary")
	a.waitJS("the room menu open", isOpen(roomMenu))
	a.click(msgMenu + " > summary")
	a.waitJS("the message menu open, the room menu closed", isOpen(msgMenu)+` && !`+isOpen(roomMenu))
	a.run("press Escape", chromedp.KeyEvent(kb.Escape))
	a.waitJS("the message menu closed by Escape, its button focused",
		`!`+isOpen(msgMenu)+` && document.activeElement === document.querySelector(`+js(msgMenu+" > summary")+`)`)

	// A reaction with the keyboard: Enter on the menu's summary, Tab to
	// the first emoji, Enter.
	a.run("open the menu with the keyboard", chromedp.KeyEvent(kb.Enter))
	a.waitJS("the message menu open", isOpen(msgMenu))
	eval[bool](a, `(document.querySelector(`+js(msgMenu+" .react-picker button")+`).focus(), true)`)
	a.run("react with Enter", chromedp.KeyEvent(kb.Enter))
	a.waitJS("the reaction shown", `document.querySelector(`+js("#reactions-"+strings.TrimPrefix(id, "msg-")+" form.reaction")+`)`)
	a.waitJS("the focus back on the menu's button", `!`+isOpen(msgMenu)+` && document.activeElement === document.querySelector(`+js(msgMenu+" > summary")+`)`)

	// The phone's Menu.
	a.resize(phone)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	drawer := "details.nav-drawer"
	a.click(drawer + " > summary")
	a.waitJS("the phone's menu open", isOpen(drawer))
	a.checkAccessibility("the phone's open menu")
	a.run("press Escape", chromedp.KeyEvent(kb.Escape))
	a.waitJS("the phone's menu closed by Escape, its button focused",
		`!`+isOpen(drawer)+` && document.activeElement === document.querySelector(`+js(drawer+" > summary")+`)`)
	a.click(drawer + " > summary")
	a.waitJS("the phone's menu open", isOpen(drawer))
	a.click("#composer")
	a.waitJS("the phone's menu closed by a click outside", `!`+isOpen(drawer))
}

// TestParticipantsHeaderStaysSmall (defect 7): a room of 63 people keeps
// a header of one line of people on a 1280×720 screen, with a link to the
// members page that says how many more there are.
func TestParticipantsHeaderStaysSmall(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("big")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Sixty-three people")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 62; i++ {
		login := unique("member")
		if _, err := db.JoinRoom(ctx, chat.UserRef{Login: login, Firstname: "Member", Lastname: login}, room); err != nil {
			t.Fatal(err)
		}
	}
	// One join through the app: the room's cached header, read before the
	// joins above went straight to the store, is read anew.
	o := b.newTab("bob")
	o.signUp(newPerson("Bob", "Babbage"))
	o.joinFromRoomPage(room)
	a.resize(size{"laptop", 1280, 720, false})
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.screenshot("header")
	h := eval[float64](a, `document.querySelector("#room .room-header").getBoundingClientRect().height`)
	people := eval[float64](a, `document.getElementById("participants").getBoundingClientRect().height`)
	if people > 40 || h > 0.2*720 {
		t.Errorf("the header of a room of 63 is %.0f px high (its people %.0f px), want one line of people", h, people)
	}
	more := a.text("#participants .more-participants a")
	if !strings.Contains(more, "others") {
		t.Errorf("the header's link to the other members reads %q", more)
	}
	href := eval[string](a, `document.querySelector("#participants .more-participants a").getAttribute("href")`)
	if href != "/rooms/"+room+"/members" {
		t.Errorf("the header's link goes to %q, want the members page", href)
	}
	if !eval[bool](a, reachable("#participants .more-participants a")) {
		t.Error("the link to the members page is cut off")
	}
}

// TestNoticesBelowThePhoneTopBar (defect 9): on a phone, a notice
// (welcome, you left the room, logged out) shows whole below the top bar.
func TestNoticesBelowThePhoneTopBar(t *testing.T) {
	b := begin(t)
	a := b.newTab("ada")
	a.resize(phone)
	a.signUp(newPerson("Ada", "Lovelace"))
	for _, path := range []string{"/?notice=welcome", "/rooms?notice=room-left"} {
		a.open(path)
		a.waitJS("the notice", `document.querySelector("#flash .notice")`)
		if !eval[bool](a, reachable("#flash .notice")) {
			a.screenshot("notice-hidden")
			t.Fatalf("%s: the notice is under the top bar", path)
		}
	}
	a.screenshot("notice")
	eval[bool](a, `(document.querySelector('form[action="/logout"]').submit(), true)`)
	a.waitJS("the logged-out notice", atPath("/login?notice=logged-out")+` && document.querySelector("#flash .notice")`)
	if !eval[bool](a, reachable("#flash .notice")) {
		a.screenshot("logged-out-hidden")
		t.Fatal("the logged-out notice is under the top bar")
	}
}

// TestReplyWithQuoteKeepsMarkdown (defect 10): "Reply with quote" puts
// the message's stored Markdown in the composer, quoted line by line
// (lists, quotes, code and strike-through as written), with a short
// attribution link; sent, it shows the author's name as the link, not
// the address, and quoting that quote nests it.
func TestReplyWithQuoteKeepsMarkdown(t *testing.T) {
	b := begin(t)
	a := b.newTab("ada")
	ada := newPerson("Ada", "Lovelace")
	a.signUp(ada)
	room := unique("quote")
	a.createRoom(room, "Quotes")
	a.waitStream()
	content := "Plan " + unique("#") + ":\n\n- one\n- two\n\n> said before\n\n~~dropped~~\n\n```\ncode line\n```"
	// Sent as typed: post waits for the text as written, and this one
	// is rendered.
	eval[bool](a, fmt.Sprintf(`(() => { const c = document.getElementById("content"); c.value = %s;
		c.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, js(content)))
	a.click("#composer button[type=submit]")
	// The stream can show the message before the post's answer empties
	// the composer: wait for both, or the quote's wait sees the sent text.
	a.waitJS("the message sent", `document.querySelectorAll("#messages li.message:not(.system)").length === 1 && document.getElementById("content").value === ""`)
	id := eval[string](a, `document.querySelector("#messages li.message:not(.system)").id`)
	quote := func(id string) string {
		a.click("#" + id + " .message-menu > summary")
		a.click("#" + id + " .message-menu a.quote")
		a.waitJS("the quote in the composer", `document.getElementById("content").value !== ""`)
		return eval[string](a, `document.getElementById("content").value`)
	}
	permalink := eval[string](a, `new URL(document.querySelector(`+js("#"+id+" a.copy-link")+`).getAttribute("href"), location.href).href`)
	want := chat.Quote(content, ada.name(), permalink)
	if got := quote(id); got != want {
		t.Fatalf("the composer holds\n%q\nwant\n%q", got, want)
	}
	a.click("#composer button[type=submit]")
	a.waitJS("the quote sent", `document.getElementById("content").value === "" && document.querySelectorAll("#messages li.message:not(.system)").length === 2`)
	reply := eval[string](a, `[...document.querySelectorAll("#messages li.message")].pop().id`)
	if got := a.text("#" + reply + " .text blockquote del"); got != "dropped" {
		t.Errorf("the quote's strike-through reads %q", got)
	}
	if n := a.count("#" + reply + " .text blockquote li"); n != 2 {
		t.Errorf("the quote's list has %d items, want 2", n)
	}
	if got := a.text("#" + reply + " .text > p:last-child a"); got != ada.name() {
		t.Errorf("the attribution link reads %q, want %q", got, ada.name())
	}
	if strings.Contains(a.text("#"+reply+" .text"), "?at=") {
		t.Errorf("the sent quote shows the address: %q", a.text("#"+reply+" .text"))
	}
	eval[bool](a, `(document.getElementById("content").value = "", true)`)
	nested := quote(reply)
	if !strings.HasPrefix(nested, "> > ") || strings.Contains(nested, ")agreed") {
		t.Errorf("a quote of a quote: %q", nested)
	}
}

// TestInvitationToNewcomer (defect 1): a newcomer opens a closed room's
// invitation link, is told where it leads, signs up from the login page
// it lands on, and is in the room in one flow: with JavaScript and
// without.
func TestInvitationToNewcomer(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("closed")
	a := b.newTab("ada")
	a.signUp(ada)
	a.click(`.sidebar a[href="/rooms/new"]`)
	a.waitJS("the new room form", atPath("/rooms/new")+` && document.querySelector("#new-room #room_name")`)
	a.fill("room_name", room, "banner", "Only us")
	a.click(`#new-room input[name=kind][value=closed]`)
	a.click("#new-room button[type=submit]")
	a.waitRoomPage(room)
	a.open("/rooms/" + room + "/members")
	a.waitJS("the members page", `document.querySelector("#members-page form.new-invite")`)
	a.click("#members-page form.new-invite button[type=submit]")
	a.waitJS("the new link", `document.querySelector("#new-link")`)
	link := eval[string](a, `document.querySelector("#new-link").getAttribute("href")`)

	for _, withJS := range []bool{true, false} {
		label, opts := "newcomer", []tabOption(nil)
		if !withJS {
			label, opts = "newcomer-nojs", []tabOption{withoutJS}
		}
		n := b.newTab(label, opts...)
		u := newPerson("Nell", "Newcomer")
		n.open(link)
		n.waitJS("the login page", `document.readyState === "complete" && location.pathname === "/login" && document.querySelector("#login-page")`)
		if got := n.text("#invited"); !strings.Contains(got, "You're invited to #"+room) {
			t.Errorf("%s: the login page says %q, want where the link leads", label, got)
		}
		n.click(`#login-page a[href^="/signup"]`)
		n.waitJS("the sign-up page", `document.readyState === "complete" && location.pathname === "/signup" && document.querySelector("#signup #login")`)
		if got := n.text("#invited"); !strings.Contains(got, "You're invited to #"+room) {
			t.Errorf("%s: the sign-up page says %q, want where the link leads", label, got)
		}
		if withJS {
			n.checkAccessibility("the sign-up page of an invitation")
		}
		n.fill("login", u.login, "password", u.password, "password_confirm", u.password,
			"firstname", u.first, "lastname", u.last)
		n.click("#signup button[type=submit]")
		n.waitRoomPage(room)
		n.screenshot("in-the-room")
	}
}

// TestMentionSuggestionsWithAccents (issue 39, item 11): "@Émi" suggests
// Émilie, as "@Ada" suggests Ada.
func TestMentionSuggestionsWithAccents(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Accents")
	emilie := person{login: unique("emilie"), first: "Émilie", last: "Zoë", password: "correct horse 1"}
	e := b.newTab("emilie")
	e.signUp(emilie)
	e.joinFromRoomPage(room)
	_ = o
	a.typeInto("#content", "hello @Émi")
	a.waitJS("Émilie suggested", hasText("#mention-suggestions [role=option]", "Émilie Zoë"))
}

// TestOwnPresenceAtOnce (issue 39, item 11): one's own presence dot is
// never drawn offline after a page load.
func TestOwnPresenceAtOnce(t *testing.T) {
	b := begin(t)
	a := b.newTab("ada")
	a.signUp(newPerson("Ada", "Lovelace"))
	room := unique("presence")
	a.createRoom(room, "Presence")
	if _, err := chromedp.Call(a.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.__ownDots = []; document.addEventListener("DOMContentLoaded", () => {
			const me = document.body.getAttribute("data-viewer");
			new MutationObserver(rs => { for (const r of rs) if (r.target.getAttribute("data-presence") === me)
				window.__ownDots.push(r.target.getAttribute("data-online")); })
				.observe(document.body, {attributes: true, attributeFilter: ["data-online"], subtree: true}); });`,
	}); err != nil {
		t.Fatal(err)
	}
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitJS("one's own dot drawn", `window.__ownDots.length > 0`)
	if got := eval[[]string](a, `window.__ownDots`); got[0] != "true" {
		t.Errorf("one's own dot was first drawn %v, want online", got)
	}
}

// TestDeleteAsksOnce (issue 39, item 11): a message's Delete asks
// "Yes, delete it" before it deletes.
func TestDeleteAsksOnce(t *testing.T) {
	b := begin(t)
	a := b.newTab("ada")
	a.signUp(newPerson("Ada", "Lovelace"))
	room := unique("delete")
	a.createRoom(room, "Deleting")
	a.waitStream()
	id := a.post("delete me " + unique("#"))
	a.click("#" + id + " .message-menu > summary")
	a.click("#" + id + " .delete-message button")
	a.waitJS("the question", `document.querySelector(`+js("#"+id+" .delete-message button")+`).textContent === "Yes, delete it"`)
	if a.count("#"+id) != 1 {
		t.Fatal("one click deleted the message")
	}
	a.click("#" + id + " .delete-message button")
	a.waitJS("the message deleted", `!document.getElementById(`+js(id)+`)`)
}

// TestLongPasteKept (issue 39, item 11): a paste over the 4,000
// characters a message may have is kept whole; the composer says by how
// much it is over and does not send it.
func TestLongPasteKept(t *testing.T) {
	b := begin(t)
	a := b.newTab("ada")
	a.signUp(newPerson("Ada", "Lovelace"))
	room := unique("long")
	a.createRoom(room, "Long")
	a.waitStream()
	long := strings.Repeat("lorem ipsum ", 342)[:4100]
	eval[bool](a, `(document.getElementById("content").focus(), true)`)
	if _, err := chromedp.Call(a.ctx, input.InsertText, input.InsertTextParams{Text: long}); err != nil {
		t.Fatalf("paste 4,100 characters: %v", err)
	}
	if n := eval[int](a, `document.getElementById("content").value.length`); n != 4100 {
		t.Fatalf("the composer holds %d characters of the 4,100 pasted", n)
	}
	a.waitJS("the counter", hasText("#composer-error", "4,100 characters, 100 over the limit of 4,000"))
	a.click("#composer button[type=submit]")
	short := "short " + unique("#")
	a.waitJS("the text kept", `document.getElementById("content").value.length === 4100`)
	a.checkAccessibility("the composer over its limit")
	a.post(short)
	if n := storedCount(t, room, long); n != 0 {
		t.Errorf("the text over the limit was stored %d times", n)
	}
}

// TestNewInvitationLinkShownOnce (issue 39, item 11): the token of a new
// invitation link leaves the address bar, and a Copy button copies it.
func TestNewInvitationLinkShownOnce(t *testing.T) {
	b := begin(t)
	a := b.newTab("ada")
	a.signUp(newPerson("Ada", "Lovelace"))
	room := unique("links")
	a.createRoom(room, "Links")
	a.open("/rooms/" + room + "/members")
	a.waitJS("the members page", `document.querySelector("#members-page form.new-invite")`)
	a.click("#members-page form.new-invite button[type=submit]")
	a.waitJS("the new link", `document.readyState === "complete" && document.querySelector("#new-link")`)
	a.waitJS("the token gone from the address", `!location.search.includes("invite=") && !location.href.includes(document.querySelector("#new-link").getAttribute("href").slice(9))`)
	if !eval[bool](a, reachable("#members-page .copy-invite")) {
		t.Error("no Copy button beside the new link")
	}
	a.checkAccessibility("the members page with a new link")
}

// TestPhoneMenuClearOfText (issue 39, item 11): on a phone, where the ⋯
// of a message always shows, it covers no word of the message.
func TestPhoneMenuClearOfText(t *testing.T) {
	b := begin(t)
	a := b.newTab("ada")
	a.signUp(newPerson("Ada", "Lovelace"))
	room := unique("words")
	a.createRoom(room, "Words")
	a.resize(phone)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	for _, text := range []string{"short " + unique("#"), strings.Repeat("many words here ", 12) + unique("#")} {
		id := a.post(text)
		overlap := eval[bool](a, fmt.Sprintf(`(() => { const li = document.getElementById(%s);
			const m = li.querySelector(".message-menu > summary").getBoundingClientRect();
			const r = document.createRange(); r.selectNodeContents(li.querySelector(".text"));
			return [...r.getClientRects()].some(x => x.width > 0 && x.left < m.right && x.right > m.left && x.top < m.bottom && x.bottom > m.top); })()`, js(id)))
		if overlap {
			a.screenshot("overlap")
			t.Errorf("the ⋯ of %q covers its text", text)
		}
	}
}

package browser

// Issue 22, "Browser defects": each test below failed before its fix.

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

// pasteImage puts a w×h PNG named name into the composer's text box as a
// paste from the clipboard.
func (p *tab) pasteImage(name string, w, h int) {
	p.t.Helper()
	eval[bool](p, fmt.Sprintf(`(() => { const c = document.createElement("canvas"); c.width = %d; c.height = %d;
		const g = c.getContext("2d"); g.fillStyle = "#3a7"; g.fillRect(0, 0, c.width, c.height);
		g.fillStyle = "#fff"; g.fillRect(c.width / 4, c.height / 4, c.width / 2, c.height / 2);
		const bin = atob(c.toDataURL("image/png").split(",")[1]);
		const bytes = new Uint8Array(bin.length); for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
		const dt = new DataTransfer(); dt.items.add(new File([bytes], %s, {type: "image/png"}));
		document.getElementById("content").dispatchEvent(new ClipboardEvent("paste", {clipboardData: dt, bubbles: true, cancelable: true}));
		return true; })()`, w, h, js(name)))
}

// dropFile drops a text file of n bytes named name on the composer.
func (p *tab) dropFile(name string, n int) {
	p.t.Helper()
	eval[bool](p, fmt.Sprintf(`(() => { const dt = new DataTransfer();
		dt.items.add(new File(["x".repeat(%d)], %s, {type: "text/plain"}));
		const target = document.getElementById("content");
		target.dispatchEvent(new DragEvent("dragover", {dataTransfer: dt, bubbles: true, cancelable: true}));
		target.dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
		return true; })()`, n, js(name)))
}

// timezone makes the tab's clock read in zone.
func (p *tab) timezone(zone string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone}); err != nil {
		p.t.Fatal(err)
	}
}

// darkMode turns prefers-color-scheme: dark on or off.
func (p *tab) darkMode(on bool) {
	p.t.Helper()
	params := emulation.SetEmulatedMediaParams{}
	if on {
		params.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}
	}
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, params); err != nil {
		p.t.Fatal(err)
	}
}

// TestAttachmentStylesApply (defect 1): the stylesheet's attachment rules
// apply: at 390 px a 480×320 preview keeps its 3:2 shape inside the list,
// and a drag over the composer shows the drop highlight.
func TestAttachmentStylesApply(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("styles")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Previews on a phone")
	a.resize(phone)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.pasteImage("wide.png", 600, 400)
	a.waitJS("the pasted image staged", `document.querySelectorAll("#staged-files .staged-file").length === 1`)
	a.click("#composer button[type=submit]")
	a.waitJS("the preview", `(() => { const i = document.querySelector("#messages .attachment-preview img");
		return i && i.complete && i.naturalWidth > 0; })()`)
	a.frames()
	box := eval[[]float64](a, `(() => { const i = document.querySelector("#messages .attachment-preview img").getBoundingClientRect();
		const l = document.querySelector("#messages li.message:last-child").getBoundingClientRect();
		return [i.width, i.height, l.right - i.right]; })()`)
	a.screenshot("preview-phone")
	if w, h := box[0], box[1]; w > 390 || w < 200 || h/w < 0.66 || h/w > 0.68 {
		t.Errorf("the 480×320 preview shows %.0f×%.0f at 390 px, want it scaled to the column with its 3:2 shape", w, h)
	}
	if box[2] < 0 {
		t.Errorf("the preview overflows its message by %.0f px", -box[2])
	}
	// The drop highlight.
	eval[bool](a, `(() => { const dt = new DataTransfer(); dt.items.add(new File(["x"], "x.txt"));
		document.getElementById("content").dispatchEvent(new DragEvent("dragover", {dataTransfer: dt, bubbles: true, cancelable: true}));
		return true; })()`)
	if got := eval[string](a, `getComputedStyle(document.getElementById("composer")).outlineStyle`); got != "dashed" {
		t.Errorf("composer outline while dragging a file: %q, want dashed", got)
	}
}

// TestHoverCardKeyboard (defect 2): Tab from a name into its card reaches
// the card's Message button, and the card stays open.
func TestHoverCardKeyboard(t *testing.T) {
	b := begin(t)
	a, o, _ := pair(t, b, desktop, "Cards")
	a.post("hello from ada " + unique("#"))
	o.waitJS("ada's message at bob's", `document.querySelector("#messages li.message:not(.system) .author a.user-link")`)
	o.run("tab", chromedp.KeyEvent("\t")) // keyboard use: :focus-visible applies
	link := `#messages li.message:not(.system) .author a.user-link`
	eval[bool](o, `(document.querySelector("`+link+`").focus(), true)`)
	card := `document.querySelector("#messages li.message:not(.system) .hovercard")`
	o.waitJS("the card with its Message button", `(() => { const c = `+card+`;
		return c && getComputedStyle(c).visibility === "visible" && c.querySelector("a.message-button"); })()`)
	o.run("tab into the card", chromedp.KeyEvent("\t"))
	time.Sleep(400 * time.Millisecond) // past the card's 120 ms transition
	o.frames()
	if got := eval[string](o, `document.activeElement ? document.activeElement.className + "|" + document.activeElement.textContent.trim() : ""`); !strings.Contains(got, "message-button") {
		o.screenshot("focus-lost")
		t.Fatalf("after Tab the focus is on %q, want the card's Message button", got)
	}
	if v := eval[string](o, `getComputedStyle(`+card+`).visibility`); v != "visible" {
		t.Errorf("the card is %s while its button has the focus", v)
	}
	o.screenshot("card-button-focused")
	o.pressEnter(false)
	o.waitJS("the DM page", `location.pathname.startsWith("/dm/") && document.querySelector("#composer")`)
}

// TestSidebarOffersDirectMessages (defect 3): a new person's sidebar has
// the "Direct messages" heading and "New message", which starts one.
func TestSidebarOffersDirectMessages(t *testing.T) {
	for _, s := range sizes {
		t.Run(s.name, func(t *testing.T) {
			b := begin(t)
			a := b.newTab("newcomer")
			a.resize(s)
			a.signUp(newPerson("Nia", "Newcomer"))
			if s.phone {
				a.click(".nav-drawer > summary")
			}
			if got := a.text(".sidebar .my-dms h2"); got != "Direct messages" {
				t.Errorf("sidebar DM heading %q", got)
			}
			newDM := `.sidebar a[href="/dm/new"]`
			if got := a.text(newDM); !strings.Contains(got, "New message") {
				t.Fatalf("sidebar New message link: %q", got)
			}
			if !eval[bool](a, `(() => { const r = document.querySelector('`+newDM+`').getBoundingClientRect(); return r.width > 0 && r.height > 0; })()`) {
				t.Error("the New message link is not visible")
			}
			a.screenshot("sidebar")
			a.darkMode(true)
			a.screenshot("sidebar-dark")
			a.darkMode(false)
			a.click(newDM)
			a.waitJS("the new DM form", atPath("/dm/new")+` && document.querySelector("#new-dm #to")`)
		})
	}
}

// TestStartedGroupDMInSendersSidebar (defect 4): the one who starts a group
// DM sees it in their sidebar once their first message is posted, without
// changing page; so does a member who had the DM's page open before its
// first message (the message comes on that page's stream, and no other
// event says the sidebar lacks the conversation).
func TestStartedGroupDMInSendersSidebar(t *testing.T) {
	b := begin(t)
	ada, bob, cy := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage"), newPerson("Cy", "Cray")
	o := b.newTab(bob.first)
	o.signUp(bob)
	b.newTab(cy.first).signUp(cy)
	a := b.newTab("ada")
	a.signUp(ada)
	address, err := chat.DMAddress([]string{ada.login, bob.login, cy.login})
	if err != nil {
		t.Fatal(err)
	}
	o.open("/dm/" + address)
	o.waitStream()
	a.click(`.sidebar a[href="/dm/new"]`)
	a.waitJS("the new DM form", atPath("/dm/new"))
	a.typeInto("#to", bob.login+" "+cy.login)
	a.click("#new-dm form button[type=submit]")
	a.waitJS("the group DM page", atPath("/dm/"+address)+` && document.querySelector("#composer")`)
	a.waitStream()
	a.mark()
	a.post("hello both " + unique("#"))
	a.waitJS("the group DM in ada's sidebar", fmt.Sprintf(`document.querySelector('#my-dms a[href="/dm/%s#latest"]')`, address))
	if !a.marked() {
		t.Error("the page was reloaded")
	}
	o.waitJS("the group DM in bob's sidebar, on the DM's own page", fmt.Sprintf(`document.querySelector('#my-dms a[href="/dm/%s#latest"]')`, address))
	a.screenshot("sidebar-group-dm")
}

// TestTimesAreLocalOutsideRooms (defects 5 and 9): /mentions, /dm and the
// room menu's "Created by" show the reader's local time, not UTC; on
// /mentions the mention is highlighted and the excerpt links to the
// message; "Created by" has single spaces.
func TestTimesAreLocalOutsideRooms(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Times")
	const zone = "Asia/Kathmandu" // UTC+5:45
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	o.timezone(zone)
	bob := eval[string](o, `document.body.getAttribute("data-viewer")`)
	ada := eval[string](a, `document.body.getAttribute("data-viewer")`)
	id := a.post("over to you @" + bob + " now")

	// localTime is how a <time> element's datetime reads in zone, as
	// "3:04" (the page says AM/PM apart).
	localTime := func(sel string) string {
		iso := eval[string](o, fmt.Sprintf(`document.querySelector(%s).getAttribute("datetime")`, js(sel)))
		at, err := time.Parse(time.RFC3339, iso)
		if err != nil {
			t.Fatalf("datetime %q: %v", iso, err)
		}
		return at.In(loc).Format("3:04")
	}
	checkLocal := func(page, sel string) {
		t.Helper()
		got := o.text(sel)
		if strings.Contains(got, "UTC") || !strings.Contains(got, localTime(sel)) {
			t.Errorf("%s: time shows %q, want the local time %s (%s)", page, got, localTime(sel), zone)
		}
	}

	o.open("/mentions")
	o.waitJS("the mention", `document.querySelector("#mentions .mention-item")`)
	checkLocal("/mentions", "#mentions .mention-item time")
	if got := o.text("#mentions .mention-item mark.mention-me"); got != "@"+bob {
		t.Errorf("highlighted mention %q, want @%s", got, bob)
	}
	href := eval[string](o, `(document.querySelector("#mentions .mention-item .text a") || {}).href || ""`)
	if msgID := strings.TrimPrefix(id, "msg-"); !strings.Contains(href, "at="+msgID) {
		t.Errorf("the excerpt links to %q, want the message %s", href, msgID)
	}
	o.screenshot("mentions")
	o.darkMode(true)
	o.screenshot("mentions-dark")
	o.darkMode(false)

	address, err := chat.DMAddress([]string{ada, bob})
	if err != nil {
		t.Fatal(err)
	}
	a.open("/dm/" + address)
	a.waitJS("ada's DM page", atPath("/dm/"+address)+` && document.querySelector("#composer")`)
	a.post("a private word " + unique("#"))
	o.open("/dm")
	o.waitJS("the DM list", `document.querySelector("#dms .dm-row time")`)
	checkLocal("/dm", "#dms .dm-row time")
	o.screenshot("dm-list")

	o.open("/rooms/" + room)
	o.waitRoomPage(room)
	o.click("#room .room-menu > summary")
	checkLocal("room menu", "#room .creator time")
	creator := eval[string](o, `document.querySelector("#room .creator").textContent`)
	if strings.Contains(creator, "  ") || !strings.HasPrefix(creator, "Created by Ada Lovelace on ") {
		t.Errorf("creator line %q, want \"Created by Ada Lovelace on …\" with single spaces", creator)
	}
	o.screenshot("room-menu")
	o.darkMode(true)
	o.hover(`#room .creator a.user-link`)
	o.waitJS("the creator's card", `(() => { const c = document.querySelector("#room .creator .hovercard"); return c && getComputedStyle(c).visibility === "visible"; })()`)
	o.screenshot("room-menu-dark")
	o.darkMode(false)
}

// TestUnreadDividerStartsAuthorGroup (defect 7): the first message after
// "New since your last visit" shows its author's name, also when the same
// author wrote the message just before it.
func TestUnreadDividerStartsAuthorGroup(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Divider")
	a.post("before bob leaves " + unique("#"))
	o.waitJS("the first message at bob's", `document.querySelectorAll("#messages li.message:not(.system)").length === 1`)
	o.open("/")
	o.waitJS("bob's home", atPath("/"))
	id := a.post("while bob is away " + unique("#"))
	o.open("/rooms/" + room)
	o.waitRoomPage(room)
	o.waitJS("the divider before ada's second message", fmt.Sprintf(`(() => { const d = document.getElementById("unread-since");
		return d && d.nextElementSibling && d.nextElementSibling.id === %s; })()`, js(id)))
	o.frames()
	o.screenshot("divider")
	if eval[bool](o, fmt.Sprintf(`document.getElementById(%s).classList.contains("cont")`, js(id))) {
		t.Error("the first message after the divider continues the group above it")
	}
	if v := eval[string](o, fmt.Sprintf(`getComputedStyle(document.querySelector("#%s .author")).display`, id)); v == "none" {
		t.Error("the first message after the divider shows no author")
	}
}

// TestStagedFiles (defect 6): chosen, dropped and pasted files are listed
// (name, size, thumbnail for an image, remove) and go with the next Send;
// an upload shows its name and percentage and can be cancelled, which
// leaves the file staged; the Attach button is a real button.
func TestStagedFiles(t *testing.T) {
	for _, s := range sizes {
		t.Run(s.name, func(t *testing.T) {
			b := begin(t)
			ada := newPerson("Ada", "Lovelace")
			room := unique("staged")
			a := b.newTab("ada")
			a.resize(s)
			a.signUp(ada)
			if s.phone {
				a.click(".nav-drawer > summary")
			}
			a.createRoom(room, "Staging files")
			a.waitStream()

			if got := eval[string](a, `(() => { const b = document.getElementById("attach");
				return b && b.tagName + "|" + b.type + "|" + b.textContent.trim() + "|" + (b.getBoundingClientRect().width > 0); })()`); got != "BUTTON|button|Attach|true" {
				t.Errorf("the Attach button: %q", got)
			}
			if eval[bool](a, `document.getElementById("file").getBoundingClientRect().width > 0`) {
				t.Error("the browser's own file input shows beside the Attach button")
			}

			one, two := tempFile(t, "notes.txt", 2048), tempFile(t, "data.bin", 1_500_000)
			a.run("choose two files", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{one, two}))
			a.waitJS("two staged files", `document.querySelectorAll("#staged-files .staged-file").length === 2`)
			if got := a.texts("#staged-files .staged-name"); strings.Join(got, ",") != "notes.txt,data.bin" {
				t.Errorf("staged names %q", got)
			}
			if got := a.texts("#staged-files .staged-size"); strings.Join(got, ",") != "2 KiB,1.4 MiB" {
				t.Errorf("staged sizes %q", got)
			}
			a.pasteImage("shot.png", 300, 200)
			a.dropFile("dropped.txt", 10)
			a.waitJS("four staged files", `document.querySelectorAll("#staged-files .staged-file").length === 4`)
			a.waitJS("the image's thumbnail", `(() => { const i = document.querySelector("#staged-files img.staged-thumb");
				return i && i.complete && i.naturalWidth === 300; })()`)
			if n := a.count("#messages .attachment"); n != 0 {
				t.Fatalf("%d files were sent before Send", n)
			}
			a.screenshot("staged")
			a.darkMode(true)
			a.screenshot("staged-dark")
			a.darkMode(false)
			a.click(`#staged-files .staged-remove[aria-label="Remove data.bin"]`)
			a.waitJS("data.bin removed", `document.querySelectorAll("#staged-files .staged-file").length === 3`)
			if got := eval[string](a, `document.activeElement.getAttribute("aria-label") || document.activeElement.id`); got != "Remove shot.png" {
				t.Errorf("after a remove the focus is on %q, want the next entry's remove", got)
			}

			// A slow upload: its name and percentage, then Cancel.
			ctx, cancel := context.WithTimeout(a.ctx, waitTimeout)
			defer cancel()
			if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
				// The body goes up at 400 bytes/s: Cancel comes while it is on its way.
				MatchedNetworkConditions: []*network.Conditions{{URLPattern: a.base + "/rooms/*/messages", DownloadThroughput: -1, UploadThroughput: 400}},
			}); err != nil {
				t.Fatal(err)
			}
			a.typeInto("#content", "three files")
			a.click("#composer button[type=submit]")
			a.waitJS("the upload's progress", `!document.getElementById("upload-status").hidden`)
			if got := a.text("#upload-status"); !strings.Contains(got, "notes.txt") || !strings.Contains(got, "%") {
				t.Errorf("upload status %q, want the file's name and a percentage", got)
			}
			a.screenshot("uploading")
			a.click("#upload-cancel")
			a.waitJS("the upload cancelled", `document.getElementById("upload-status").hidden && !document.querySelector("#composer button[type=submit]").disabled`)
			if got := a.texts("#staged-files .staged-name"); strings.Join(got, ",") != "notes.txt,shot.png,dropped.txt" {
				t.Errorf("after Cancel the staged files are %q, want all three", got)
			}
			if got := eval[string](a, `document.getElementById("content").value`); got != "three files" {
				t.Errorf("after Cancel the text is %q", got)
			}
			if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
				MatchedNetworkConditions: []*network.Conditions{},
			}); err != nil {
				t.Fatal(err)
			}

			a.click("#composer button[type=submit]")
			a.waitJS("three file messages", `document.querySelectorAll("#messages .attachment").length === 3`)
			a.waitJS("the staged list emptied", `document.getElementById("staged-files").hidden`)
			if got := a.texts("#messages .attachment-name"); strings.Join(got, ",") != "notes.txt,shot.png,dropped.txt" {
				t.Errorf("sent files %q", got)
			}
			if got := a.text("#messages li.message:has(.attachment) .text"); got != "three files" {
				t.Errorf("the text went as %q", got)
			}
			a.screenshot("sent")
		})
	}
}

// TestScrollUpLoadsOlder (defect 8): reaching the top of the list loads
// the older page with no click, the reading position and the focus kept;
// the link still works from the keyboard, and the focus stays near it.
func TestScrollUpLoadsOlder(t *testing.T) {
	for _, s := range sizes {
		t.Run(s.name, func(t *testing.T) {
			b := begin(t)
			ada := newPerson("Ada", "Lovelace")
			room := unique("scrollup")
			a := b.newTab("ada")
			a.signUp(ada)
			a.createRoom(room, "Scroll up")
			seedMessages(t, room, ada, 160)
			a.resize(s)
			a.open("/rooms/" + room)
			a.waitRoomPage(room)
			a.run("focus the composer", chromedp.Focus(chromedp.CSS("#content")))
			if n := a.count("#messages li.message"); n != 50 {
				t.Fatalf("%d messages on the page, want 50", n)
			}
			// Scroll up to the top as a reader does (the wheel).
			a.waitJS("the newest message in view", newestInViewOrClose)
			ref := eval[string](a, `document.querySelector("#messages li.message").id`)
			xy := eval[[]float64](a, `(() => { const r = document.getElementById("messages").getBoundingClientRect();
				return [r.left + r.width / 2, Math.max(r.top, 0) + 100]; })()`)
			for i := 0; i < 100 && a.count("#messages li.message") == 50; i++ {
				a.run("wheel up", chromedp.MouseEvent(chromedp.MouseWheel, xy[0], xy[1], wheelUp(300)))
				a.frames()
				time.Sleep(50 * time.Millisecond) // a reader's pace; a phone animates each turn
			}
			a.waitJS("the older page, by scrolling", `document.querySelectorAll("#messages li.message").length === 100`)
			a.frames()
			if got := eval[string](a, `document.activeElement.id`); got != "content" {
				t.Errorf("after the older page loaded the focus is on %q, want the composer", got)
			}
			// The message that was first is still on screen, not pushed
			// down by the page above it (no jump to the top of the new page).
			top := eval[float64](a, fmt.Sprintf(`document.getElementById(%s).getBoundingClientRect().top`, js(ref)))
			if top < -1000 || top > 844 {
				t.Errorf("the first message before the load is at %.0f px after it: the view jumped", top)
			}
			a.screenshot("after-scroll-load")

			// The keyboard: focus the link, press Enter.
			want := eval[int](a, `document.querySelectorAll("#messages li.message").length`) + 50
			a.run("focus the link", chromedp.Focus(chromedp.CSS("#messages .load-older")))
			a.pressEnter(false)
			a.waitJS("the next older page", fmt.Sprintf(`document.querySelectorAll("#messages li.message").length >= %d`, want))
			a.frames()
			if got := eval[string](a, `document.activeElement === document.body ? "body" : document.activeElement.className || document.activeElement.id`); got != "load-older" && got != "messages" {
				t.Errorf("after Enter on Load older messages the focus is on %q, want the next link or the list", got)
			}
		})
	}
}

// wheelUp turns a mouse wheel by px towards the top.
func wheelUp(px float64) chromedp.MouseOption {
	return func(p *input.DispatchMouseEventParams) {
		p.DeltaY = -px
		p.DeltaX = 0.01 // DevTools wants both, and drops a zero from the JSON
	}
}

// newestInViewOrClose: the list has scrolled to its newest message.
const newestInViewOrClose = `(() => { const l = document.getElementById("messages"); const ms = l.querySelectorAll("li.message");
	const m = ms[ms.length - 1].getBoundingClientRect(); return m.bottom <= window.innerHeight + 5; })()`

// TestSidebarNamesFit (defect 9): a name with its badge is not cut off
// when the entry has room for it (one pill, the mentions, where there were
// two), and its full name is in a title.
func TestSidebarNamesFit(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Badges")
	there := fmt.Sprintf("design-rev%04d", seq.Add(1)) // 15 characters with its "#", always
	a.createRoom(there, "Where Ada writes")
	o.joinFromRoomPage(there)
	o.open("/rooms/" + room) // a page with a live stream, which refreshes the sidebar
	o.waitRoomPage(room)
	o.waitStream()
	a.open("/rooms/" + there)
	a.waitRoomPage(there)
	bob := eval[string](o, `document.body.getAttribute("data-viewer")`)
	a.post("@" + bob + " a mention " + unique("#"))
	entry := fmt.Sprintf(`document.querySelector('#my-rooms a[href="/rooms/%s#latest"]')`, there)
	o.waitJS("the mention badge", entry+` && `+entry+`.querySelector(".badge.mention")`)
	o.screenshot("badges")
	if got := eval[string](o, entry+`.title`); got != "#"+there {
		t.Errorf("entry title %q, want #%s", got, there)
	}
	name := entry + `.querySelector(".entry-name")`
	if cut := eval[bool](o, name+`.scrollWidth > `+name+`.clientWidth + 1`); cut {
		t.Errorf("the name %q is cut off beside its badges (%d of %d px shown)", "#"+there,
			eval[int](o, name+`.clientWidth`), eval[int](o, name+`.scrollWidth`))
	}
}

package browser

// Issue 39, "What a team expects on day one", item 4: edit in place (and ↑
// in an empty composer), the quick switcher (Ctrl/Cmd+K) and the emoji
// picker, all loaded on first use (static/tools.js); and a message's
// Delete without JavaScript, which asks on a page of its own.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// loaded is a JavaScript expression: the page fetched a file whose
// address holds name.
func loaded(name string) string {
	return fmt.Sprintf(`performance.getEntriesByType("resource").some(e => e.name.includes(%s))`, js(name))
}

// press sends one key to the focused element, with modifiers, as a
// keyboard does: a keyDown that carries the key's text (so a handler that
// prevents its default also stops the text, as in a real browser; a
// separate "char" event, as chromedp.KeyEvent sends, would type it into
// whatever has the focus after the handler) and a keyUp.
func (p *tab) press(key string, mods ...chromedp.Modifier) {
	p.t.Helper()
	var m int64
	for _, x := range mods {
		m |= int64(x)
	}
	var events []*input.DispatchKeyEventParams
	for _, r := range key {
		for _, ev := range kb.Encode(r) {
			if ev.Type == input.DispatchKeyEventTypeChar {
				if m&int64(chromedp.ModifierCtrl|chromedp.ModifierMeta) == 0 {
					events[len(events)-1].Text, events[len(events)-1].UnmodifiedText = ev.Text, ev.UnmodifiedText
				}
				continue
			}
			ev.Modifiers |= m
			events = append(events, ev)
		}
	}
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	for _, ev := range events {
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, *ev); err != nil {
			p.fail("press %q: %v", key, err)
		}
	}
}

// TestEditInPlace: Edit in a message's menu turns its text into a text
// box with its Markdown, where it stands; Enter saves (and the other
// member sees the edit live), Escape cancels; ↑ in an empty composer
// edits one's newest message. The editor passes the accessibility check
// on a desktop and a phone. Without JavaScript, Edit is still the
// message's page.
func TestEditInPlace(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Edits")
	first := "first draft " + unique("#")
	id := a.post(first)
	o.waitJSFor(5*time.Second, "ada's message at bob's", `document.getElementById(`+js(id)+`)`)
	if eval[bool](a, loaded("/static/tools.js")) {
		t.Error("a cold room page loaded tools.js before anyone asked")
	}
	editor := "#" + id + " form.edit-in-place textarea"

	a.menuOf(id)
	a.click("#" + id + " .message-menu .edit-link")
	a.waitJS("the editor in place", `document.querySelector(`+js(editor)+`) === document.activeElement`)
	if got := eval[string](a, `document.querySelector(`+js(editor)+`).value`); got != first {
		t.Errorf("the editor holds %q, want the stored Markdown %q", got, first)
	}
	if !atPathNow(a, "/rooms/"+room) {
		t.Errorf("Edit left the room page for %s", a.path())
	}
	if !eval[bool](a, `getComputedStyle(document.querySelector(`+js("#"+id+" .text")+`)).display === "none"`) {
		t.Error("the old text shows beside the editor")
	}
	a.screenshot("editor-desktop")
	a.checkAccessibility("the editor in place at desktop")

	fixed := "second *draft* " + unique("#")
	eval[bool](a, `(() => { const e = document.querySelector(`+js(editor)+`); e.value = `+js(fixed)+`; return true; })()`)
	a.press(kb.Enter)
	o.waitJSFor(5*time.Second, "the edit at bob's", bodyOf(id)+` === `+js(strings.ReplaceAll(fixed, "*", "")))
	a.waitJS("the edit in place, the editor gone", bodyOf(id)+` === `+js(strings.ReplaceAll(fixed, "*", ""))+
		` && !document.querySelector(`+js(editor)+`)`)
	if got := o.text("#" + id + " .edited"); got != "(edited)" {
		t.Errorf("bob's page marks the edit %q", got)
	}

	// Escape cancels: nothing is sent, the text is back.
	a.menuOf(id)
	a.click("#" + id + " .message-menu .edit-link")
	a.waitJS("the editor again", `document.querySelector(`+js(editor)+`) === document.activeElement`)
	if got := eval[string](a, `document.querySelector(`+js(editor)+`).value`); got != fixed {
		t.Errorf("the editor holds %q, want the stored Markdown %q", got, fixed)
	}
	eval[bool](a, `(() => { document.querySelector(`+js(editor)+`).value = "not this"; return true; })()`)
	a.press(kb.Escape)
	a.waitJS("the editor gone, the text back", `!document.querySelector(`+js(editor)+`) && getComputedStyle(document.querySelector(`+js("#"+id+" .text")+`)).display !== "none"`)
	if got := eval[string](a, bodyOf(id)); got != strings.ReplaceAll(fixed, "*", "") {
		t.Errorf("after Escape the message reads %q", got)
	}

	// ↑ in the empty composer edits one's newest message; Escape gives
	// the focus back to the composer.
	newest := a.post("the newest " + unique("#"))
	eval[bool](a, `(document.getElementById("content").focus(), true)`)
	a.press(kb.ArrowUp)
	a.waitJS("↑ edits the newest", `document.querySelector(`+js("#"+newest+" form.edit-in-place textarea")+`) === document.activeElement`)
	a.press(kb.Escape)
	a.waitJS("the focus back in the composer", `document.activeElement === document.getElementById("content")`)

	// On a phone.
	a.resize(phone)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	eval[bool](a, `(document.getElementById("content").focus(), true)`)
	a.press(kb.ArrowUp)
	a.waitJS("↑ edits the newest on a phone", `document.querySelector(`+js("#"+newest+" form.edit-in-place textarea")+`) === document.activeElement`)
	a.screenshot("editor-phone")
	a.checkAccessibility("the editor in place at phone")

	// Without JavaScript, Edit is the message's page.
	n := b.newTab("ada-nojs", withoutJS)
	n.signUp(newPerson("Nora", "Noscript"))
	n.joinFromRoomPage(room)
	n.open("/rooms/" + room)
	nojs := "typed without scripts " + unique("#")
	n.fill("content", nojs)
	n.click("#composer button[type=submit]")
	n.waitJS("the message posted", messagesWith(nojs)+`.length === 1`)
	mine := eval[string](n, messagesWith(nojs)+`[0].id`)
	n.click("#" + mine + " .message-menu > summary")
	n.click("#" + mine + " .message-menu .edit-link")
	n.waitJS("the edit page", `document.readyState === "complete" && document.querySelector("form.edit-form textarea")`)
	eval[bool](n, `(document.getElementById("edit-content").value = "", true)`)
	n.fill("edit-content", nojs+" edited")
	n.click("form.edit-form button[type=submit]")
	n.waitJS("the edit shown", `document.readyState === "complete" && `+bodyOf(mine)+` === `+js(nojs+" edited"))
}

// atPathNow reports whether the tab shows path now.
func atPathNow(p *tab, path string) bool { return p.path() == path }

// TestQuickSwitcher: Ctrl+K opens a dialog whose combobox lists one's
// rooms, DMs and people as one types (from GET /switch); arrows choose,
// Enter goes, Escape closes and gives the focus back. It passes the
// accessibility check open, with results, on a desktop and a phone.
func TestQuickSwitcher(t *testing.T) {
	for _, s := range sizes {
		t.Run(s.name, func(t *testing.T) {
			b := begin(t)
			a, o, room := pair(t, b, desktop, "Switching")
			other := unique("other")
			a.createRoom(other, "Another")
			bob := viewerOf(o, "Bob", "Babbage").login
			a.resize(s)
			a.open("/rooms/" + room)
			a.waitRoomPage(room)
			eval[bool](a, `(document.getElementById("content").focus(), true)`)

			a.press("k", chromedp.ModifierCtrl)
			a.waitJS("the switcher open, its box focused", `document.querySelector("dialog#switcher[open]") && document.activeElement === document.getElementById("switcher-q")`)
			a.waitJS("places listed before typing", `document.querySelectorAll("#switcher-list [role=option]").length > 0`)
			a.typeInto("#switcher-q", other)
			a.waitJS("the room found", `document.querySelectorAll("#switcher-list [role=option]").length === 1 && `+hasText("#switcher-list [role=option]", "#"+other))
			combo := eval[map[string]string](a, `(() => { const i = document.getElementById("switcher-q");
				return {role: i.getAttribute("role"), expanded: i.getAttribute("aria-expanded"), active: i.getAttribute("aria-activedescendant") || "",
					selected: (document.querySelector("#switcher-list [aria-selected=true]") || {}).id || ""}; })()`)
			if combo["role"] != "combobox" || combo["expanded"] != "true" || combo["active"] == "" || combo["active"] != combo["selected"] {
				t.Errorf("the combobox: %v", combo)
			}
			a.screenshot("switcher")
			a.checkAccessibility("the open quick switcher at " + s.name)
			a.press(kb.Enter)
			a.waitRoomPage(other)

			// People and DMs: Bob by his login; arrows move the choice.
			// (A phone does not focus the composer on its own.)
			eval[bool](a, `(document.getElementById("content").focus(), true)`)
			a.press("k", chromedp.ModifierCtrl)
			a.waitJS("the switcher open", `document.activeElement === document.getElementById("switcher-q")`)
			a.typeInto("#switcher-q", bob)
			a.waitJS("bob found", hasText("#switcher-list [role=option]", "@"+bob))
			a.press(kb.ArrowDown)
			a.press(kb.ArrowUp)
			a.press(kb.ArrowUp)
			last := eval[int](a, `document.querySelectorAll("#switcher-list [role=option]").length - 1`)
			if got := eval[string](a, `document.getElementById("switcher-q").getAttribute("aria-activedescendant")`); got != fmt.Sprintf("switcher-opt-%d", last) {
				t.Errorf("↓ ↑ ↑ from the first chose %s, want the last (switcher-opt-%d)", got, last)
			}
			a.press(kb.Escape)
			a.waitJS("closed by Escape, the focus back", `!document.querySelector("dialog#switcher[open]") && document.activeElement === document.getElementById("content")`)
			if !atPathNow(a, "/rooms/"+other) {
				t.Errorf("Escape went to %s", a.path())
			}
		})
	}
}

// TestEmojiPicker: the composer's emoji button opens a picker of every
// emoji (from static/emoji.txt, loaded then and not before) with a search
// by name; Enter on the search takes the first found into the composer.
// A message menu's "More reactions" opens it to react. It passes the
// accessibility check open on a desktop and a phone.
func TestEmojiPicker(t *testing.T) {
	for _, s := range sizes {
		t.Run(s.name, func(t *testing.T) {
			b := begin(t)
			a := b.newTab("ada")
			a.signUp(newPerson("Ada", "Lovelace"))
			room := unique("emoji")
			a.createRoom(room, "Emoji")
			a.resize(s)
			a.open("/rooms/" + room)
			a.waitRoomPage(room)
			a.waitStream()
			if eval[bool](a, loaded("/static/emoji.txt")) {
				t.Error("the room page loaded the emoji data before the picker opened")
			}
			a.typeInto("#content", "party ")
			a.click("#emoji-button")
			a.waitJS("the picker open", `document.querySelector("dialog#emoji-picker[open]") && document.activeElement === document.getElementById("emoji-search")`)
			if n := a.count("#emoji-picker button.emoji-choice"); n < 1900 {
				t.Errorf("the picker offers %d emoji, want the full set", n)
			}
			a.screenshot("picker")
			a.checkAccessibility("the open emoji picker at " + s.name)
			a.typeInto("#emoji-search", "party popper")
			a.waitJS("one found", `[...document.querySelectorAll("#emoji-picker button.emoji-choice")].filter(b => !b.hidden).map(b => b.textContent).join() === "🎉"`)
			a.press(kb.Enter)
			a.waitJS("🎉 in the composer, the focus back there", `!document.querySelector("dialog#emoji-picker[open]") && document.getElementById("content").value === "party 🎉" && document.activeElement === document.getElementById("content")`)

			id := a.post("launch day " + unique("#"))
			a.menuOf(id)
			a.click("#" + id + " .react-picker button.more-emoji")
			a.waitJS("the picker open to react", `document.querySelector("dialog#emoji-picker[open]") && `+hasText("#emoji-picker-title", "React"))
			a.typeInto("#emoji-search", "rocket")
			a.waitJS("the rocket found", `[...document.querySelectorAll("#emoji-picker button.emoji-choice")].some(b => !b.hidden && b.textContent === "🚀")`)
			a.press(kb.ArrowDown)
			a.waitJS("the focus on the first found", `document.activeElement.textContent === "🚀"`)
			a.press(kb.Enter)
			a.waitJS("the reaction shown", reactionCount(id, "🚀")+` === "1"`)
		})
	}
}

// TestDeleteAsksWithoutScripts (issue 39, item 11): without JavaScript, a
// message's Delete opens a page that asks (a GET: a reload asks again and
// deletes nothing); Cancel keeps the message, and "Yes, delete it"
// deletes it.
func TestDeleteAsksWithoutScripts(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("nojsdel")
	s := b.newTab("ada")
	s.signUp(ada)
	s.createRoom(room, "Deleting without scripts")
	n := b.newTab("ada-nojs", withoutJS)
	n.run("log in", chromedp.Navigate(n.base+"/login"))
	n.fill("login", ada.login, "password", ada.password)
	n.click("#login-page button[type=submit]")
	n.waitJS("home", `document.readyState === "complete" && location.pathname === "/"`)
	n.open("/rooms/" + room)
	text := "delete me " + unique("#")
	n.fill("content", text)
	n.click("#composer button[type=submit]")
	n.waitJS("the message posted", messagesWith(text)+`.length === 1`)
	id := eval[string](n, messagesWith(text)+`[0].id`)
	ask := func() {
		n.click("#" + id + " .message-menu > summary")
		n.click("#" + id + " .delete-message button")
		n.waitJS("the question", `document.readyState === "complete" && document.querySelector("#confirm-delete-message")`)
	}
	ask()
	if got := n.text("main h1"); got != "Delete this message?" {
		t.Errorf("the page asks %q", got)
	}
	// The question is a page of its own (POST, 303, GET): reloading it
	// posts nothing again, and the message stays.
	question := "/rooms/" + room + "/messages/" + strings.TrimPrefix(id, "msg-") + "/delete"
	if got := eval[string](n, `location.pathname`); got != question {
		t.Errorf("the question is at %q, want %q", got, question)
	}
	n.run("reload the question", chromedp.Reload())
	n.waitJS("the question again", `document.readyState === "complete" && document.querySelector("#confirm-delete-message")`)
	if stored := storedCount(t, room, text); stored != 1 {
		t.Fatalf("asking (and reloading the question) left %d of the message, want 1", stored)
	}
	n.screenshot("ask")
	n.click("#confirm-delete-message form.confirm-delete-message a.btn")
	n.waitJS("back at the message, kept", `document.readyState === "complete" && `+messagesWith(text)+`.length === 1`)
	ask()
	n.click("#confirm-delete-message form.confirm-delete-message button")
	n.waitJS("the room without it", `document.readyState === "complete" && location.pathname === "/rooms/`+room+`" && `+messagesWith(text)+`.length === 0`)
	s.open("/rooms/" + room)
	s.waitRoomPage(room)
	if n := s.count("#" + id); n != 0 {
		t.Error("the message is still there")
	}
}

// TestNewPagesAccessible: the pages issue 39's tools added (the
// switcher's page and Delete's question without JavaScript) pass the
// accessibility check on a desktop and a phone.
func TestNewPagesAccessible(t *testing.T) {
	for _, s := range sizes {
		t.Run(s.name, func(t *testing.T) {
			b := begin(t)
			a := b.newTab("ada")
			a.signUp(newPerson("Ada", "Lovelace"))
			room := unique("pages")
			a.createRoom(room, "Pages")
			a.waitStream()
			id := a.post("ask me " + unique("#"))
			a.resize(s)
			a.open("/switch?q=" + room)
			a.waitJS("the switcher's page", `document.querySelector("#switch-page a[href='/rooms/`+room+`']")`)
			a.checkAccessibility("the switcher's page at " + s.name)
			// The question as a page without scripts gets it: the form's
			// own post, without app.js's confirm field.
			eval[bool](a, `(() => { const f = document.createElement("form"); f.method = "post";
				f.action = "/rooms/`+room+`/messages/`+strings.TrimPrefix(id, "msg-")+`/delete";
				const c = document.createElement("input"); c.type = "hidden"; c.name = "_csrf";
				c.value = document.querySelector('meta[name="csrf-token"]').content; f.append(c);
				document.body.append(f); f.submit(); return true; })()`)
			a.waitJS("the question", `document.readyState === "complete" && document.querySelector("#confirm-delete-message")`)
			a.checkAccessibility("Delete's question at " + s.name)
		})
	}
}

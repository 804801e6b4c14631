package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// menuOf opens the message menu of the message element id.
func (p *tab) menuOf(id string) {
	p.t.Helper()
	p.click("#" + id + " .message-menu > summary")
	p.waitJS("the message menu", fmt.Sprintf(`document.querySelector("#%s .message-menu").open`, id))
}

// bodyOf is the text of the message element id, as a person reads it.
func bodyOf(id string) string {
	return fmt.Sprintf(`((document.querySelector("#%s .text") || {}).textContent || "").trim()`, id)
}

// reactionCount is how many people the page says reacted with emoji to
// the message id ("" when nobody did).
func reactionCount(id, emoji string) string {
	return fmt.Sprintf(`(() => { const f = [...document.querySelectorAll("#reactions-%s form.reaction")].find(f => f.dataset.emoji === %s);
		return f ? f.querySelector(".count").textContent : ""; })()`, strings.TrimPrefix(id, "msg-"), js(emoji))
}

// TestMessageChangesLive (issue 18): an edit, a reaction and a delete made
// in Ada's tab show in Bob's without a reload; the same on a page that was
// offline while they happened, once it reconnects; "Copy link" puts the
// permalink on the clipboard, and opening it highlights the message; a
// code block keeps its spaces and line breaks; and the page passes the
// accessibility check with reactions and the menu and edit form open.
func TestMessageChangesLive(t *testing.T) {
	b := begin(t)
	// Ada's browser has a stream per tab: the network's emulation reaches
	// a page's own connections only (see TestFailuresShow).
	a, o, room := pairWith(t, b, desktop, "Typos happen", withStreamPerTab)

	typo := "teh typo " + unique("#")
	id := a.send(typo)
	o.waitJSFor(5*time.Second, "ada's message at bob's", messagesWith(typo)+`.length === 1`)
	if o.count("#"+id+" .message-menu .edit-link") != 1 {
		t.Error("ada's message has no edit link")
	}
	if got := eval[string](o, fmt.Sprintf(`(() => { const e = document.querySelector("#%s .edit-link");
		return getComputedStyle(e).display + " " + e.closest("li").className; })()`, id)); !strings.HasPrefix(got, "none ") {
		t.Errorf("bob is offered to edit ada's message: %s", got)
	}

	t.Run("Edit", func(t *testing.T) {
		// The message's own page (Edit in the menu edits in place: see
		// TestEditInPlace).
		a.open(eval[string](a, `document.querySelector("#`+id+` .message-menu .edit-link").getAttribute("href")`))
		a.waitJS("the edit page", `document.querySelector("form.edit-form textarea")`)
		a.checkAccessibility("the message page with its edit form")
		fixed := "the typo, fixed " + unique("#")
		eval[bool](a, `(() => { document.getElementById("edit-content").value = ""; return true; })()`)
		a.fill("edit-content", fixed)
		a.click("form.edit-form button[type=submit]")
		a.waitJS("back in the room, at the message", atPath("/rooms/"+room+"?at="+strings.TrimPrefix(id, "msg-"))+
			fmt.Sprintf(` && document.querySelector("#%s.highlight")`, id))
		o.waitJSFor(5*time.Second, "the edit at bob's", bodyOf(id)+` === `+js(fixed))
		if got := o.text("#" + id + " .edited"); got != "(edited)" {
			t.Errorf("bob's page marks the edit %q", got)
		}
		a.waitStream()
	})

	t.Run("React", func(t *testing.T) {
		o.menuOf(id)
		o.click(`#` + id + ` .react-picker button[value="👍"]`)
		a.waitJSFor(5*time.Second, "bob's 👍 at ada's", reactionCount(id, "👍")+` === "1"`)
		o.waitJSFor(5*time.Second, "bob's own 👍", reactionCount(id, "👍")+` === "1"`)
		if !eval[bool](o, fmt.Sprintf(`document.querySelector("#reactions-%s form.reaction").classList.contains("mine")`, strings.TrimPrefix(id, "msg-"))) {
			t.Error("bob's own reaction is not highlighted at bob's")
		}
		if eval[bool](a, fmt.Sprintf(`document.querySelector("#reactions-%s form.reaction").classList.contains("mine")`, strings.TrimPrefix(id, "msg-"))) {
			t.Error("bob's reaction is highlighted as ada's own")
		}
		if title := eval[string](a, fmt.Sprintf(`document.querySelector("#reactions-%s .reaction-btn").title`, strings.TrimPrefix(id, "msg-"))); title != "Bob Babbage" {
			t.Errorf("who reacted, at ada's: %q", title)
		}
		// Ada adds hers with the group's button; Bob takes his back.
		a.click(fmt.Sprintf(`#reactions-%s .reaction-btn`, strings.TrimPrefix(id, "msg-")))
		o.waitJSFor(5*time.Second, "ada's 👍 at bob's", reactionCount(id, "👍")+` === "2"`)
		o.click(fmt.Sprintf(`#reactions-%s .reaction-btn`, strings.TrimPrefix(id, "msg-")))
		a.waitJSFor(5*time.Second, "bob's 👍 taken back at ada's", reactionCount(id, "👍")+` === "1"`)
		o.menuOf(id)
		o.checkAccessibility("the room page with reactions and a message menu open")
		o.click("#" + id + " .message-menu > summary")
	})

	t.Run("Delete", func(t *testing.T) {
		oops := "my password is hunter2 " + unique("#")
		del := a.send(oops)
		o.waitJSFor(5*time.Second, "the message at bob's", messagesWith(oops)+`.length === 1`)
		a.menuOf(del)
		a.click("#" + del + " .delete-message button")
		// Delete asks once before it deletes (issue 39).
		a.waitJS("the question", `document.querySelector(`+js("#"+del+" .delete-message button")+`).textContent === "Yes, delete it"`)
		a.click("#" + del + " .delete-message button")
		o.waitJSFor(5*time.Second, "the message gone at bob's", messagesWith(oops)+`.length === 0`)
		a.waitJSFor(5*time.Second, "the message gone at ada's", messagesWith(oops)+`.length === 0`)
	})

	t.Run("WhileOffline", func(t *testing.T) {
		// Bob posts two messages; Ada's page goes offline; Bob edits one,
		// reacts to it and deletes the other; Ada's page reconnects.
		first, second := "offline one "+unique("#"), "offline two "+unique("#")
		one, two := o.send(first), o.send(second)
		a.waitJSFor(5*time.Second, "both at ada's", messagesWith(second)+`.length === 1`)
		a.mark()
		a.offline(true)
		eval[bool](a, `(() => { const m = window.KillrLive.current; m.es.onerror(); return true; })()`)
		a.waitJSFor(5*time.Second, "the Reconnecting… bar", `!document.getElementById("stream-status").hidden`)

		edited := "offline one, edited " + unique("#")
		for i, req := range []struct{ path, body string }{
			{one + "/edit", "content=" + edited},
			{one + "/reactions", "emoji=🎉"},
			{two + "/delete", ""},
		} {
			path := "/rooms/" + room + "/messages/" + strings.TrimPrefix(req.path, "msg-")
			eval[bool](o, fmt.Sprintf(`(() => { window.__change%d = 0; fetch(%s, {method: "POST",
				headers: {"Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": document.querySelector('meta[name="csrf-token"]').content, "HX-Request": "true"},
				body: %s}).then(r => { window.__change%d = r.status; }); return true; })()`, i, js(path), js(req.body), i))
			o.waitJS("POST "+path, fmt.Sprintf(`window.__change%d !== 0`, i))
			if status := eval[int](o, fmt.Sprintf(`window.__change%d`, i)); status != 204 {
				t.Fatalf("POST %s: %v", path, status)
			}
		}
		a.offline(false)
		a.waitJSFor(10*time.Second, "the edit made while ada was away", bodyOf(one)+` === `+js(edited))
		a.waitJSFor(5*time.Second, "the reaction made while ada was away", reactionCount(one, "🎉")+` === "1"`)
		a.waitJSFor(5*time.Second, "the delete made while ada was away", messagesWith(second)+`.length === 0`)
		if !a.marked() {
			t.Error("ada's page was reloaded to catch up")
		}
	})

	t.Run("CopyLink", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(o.ctx, waitTimeout)
		defer cancel()
		origin := eval[string](o, `location.origin`)
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			if _, err := chromedp.Call(ctx, browser.SetPermission, browser.SetPermissionParams{
				Permission: &browser.PermissionDescriptor{Name: name}, Setting: browser.PermissionSettingGranted,
				Origin: origin, BrowserContextID: chromedp.FromContext(o.ctx).BrowserContextID,
			}); err != nil {
				t.Fatalf("clipboard permission: %v", err)
			}
		}
		o.menuOf(id)
		o.click("#" + id + " a.copy-link")
		o.waitJS("Link copied", hasText("#"+id+" a.copy-link", "Link copied"))
		eval[bool](o, `(() => { window.__clip = null; navigator.clipboard.readText().then(t => { window.__clip = t; }); return true; })()`)
		o.waitJS("the clipboard read", `window.__clip !== null`)
		got := eval[string](o, `window.__clip`)
		want := origin + "/rooms/" + room + "?at=" + strings.TrimPrefix(id, "msg-") + "#" + id
		if got != want {
			t.Fatalf("the clipboard holds %q, want %q", got, want)
		}
		o.open(strings.TrimPrefix(got, origin))
		o.waitJS("the message highlighted", fmt.Sprintf(`document.querySelector("#%s.highlight")`, id))
	})

	t.Run("CodeBlock", func(t *testing.T) {
		code := "func main() {\n\tif x  {\n\t\treturn   1\n\t}\n}"
		text := "look " + unique("#") + ":\n```go\n" + code + "\n```"
		eval[bool](a, fmt.Sprintf(`(() => { const c = document.getElementById("content"); c.value = %s;
			c.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, js(text)))
		a.click("#composer button[type=submit]")
		a.waitJS("the code block at ada's", `[...document.querySelectorAll("#messages .text pre code")].some(c => c.textContent === `+js(code+"\n")+`)`)
		o.open("/rooms/" + room)
		o.waitRoomPage(room)
		o.waitJSFor(5*time.Second, "the code block at bob's", `[...document.querySelectorAll("#messages .text pre code")].some(c => c.textContent === `+js(code+"\n")+`)`)
		if ws := eval[string](o, `getComputedStyle(document.querySelector("#messages .text pre")).whiteSpace`); ws != "pre" {
			t.Errorf("a code block's white-space is %q", ws)
		}
		if eval[int](o, `document.querySelectorAll("#messages .text .code-block button.copy-code").length`) == 0 {
			t.Error("a code block has no copy button")
		}
		o.screenshot("markdown-and-reactions")
	})
}

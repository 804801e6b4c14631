package browser

// Issue 39, item 11: the smaller defects that a test can see.

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/killrchat/killrchat/chat"
)

// pictureFile writes a 400×300 PNG and returns its path.
func pictureFile(t *testing.T) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 400, 300))
	for y := range 300 {
		for x := range 400 {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x / 2), uint8(y), 160, 255})
		}
	}
	path := filepath.Join(t.TempDir(), "picture.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	return path
}

// TestPictureAvatarsAlign (issue 39, item 11): a picture avatar sits
// where initials sit: beside a message and in the sidebar, its middle is
// level with the initials' middle (within 2 px), not above it.
func TestPictureAvatarsAlign(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Pictures")
	a.post("with initials " + unique("#"))
	a.open("/profile")
	a.waitJS("the picture form", `document.getElementById("picture")`)
	a.run("pick a picture", chromedp.SetUploadFiles(chromedp.CSS("#picture"), []string{pictureFile(t)}))
	a.click(`form[action="/profile/avatar"] button[type=submit]`)
	a.waitJS("the profile saved", `location.search.includes("saved=1") && document.readyState === "complete"`)
	// Bob keeps his initials: his rows are the measure.
	o.post("bob's initials " + unique("#"))
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.post("with a picture " + unique("#"))
	a.waitJS("the pictures loaded", `[...document.querySelectorAll("img.avatar-picture")].every(i => i.complete && i.naturalWidth > 0)`)
	for _, where := range []struct{ name, picture, initials string }{
		{"a message", `#messages li.message:not(.cont) img.avatar-picture`, `#messages li.message:not(.cont) span.avatar`},
	} {
		off := eval[[]float64](a, fmt.Sprintf(`(() => { const mid = e => { const li = e.closest("li"), r = e.getBoundingClientRect(), l = li.getBoundingClientRect(); return r.top + r.height / 2 - l.top; };
			const p = document.querySelector(%s), i = document.querySelector(%s); return [mid(p), mid(i)]; })()`, js(where.picture), js(where.initials)))
		if d := off[0] - off[1]; d > 2 || d < -2 {
			a.screenshot("avatars")
			t.Errorf("beside %s a picture's middle is %.0f px from where initials' is", where.name, d)
		}
	}
	me := eval[[]float64](a, `(() => { const mid = e => { const r = e.getBoundingClientRect(); return r.top + r.height / 2; };
		return [mid(document.querySelector(".sidebar .me img.avatar-picture, .sidebar .me .avatar")), mid(document.querySelector(".sidebar .me .me-name"))]; })()`)
	if d := me[0] - me[1]; d > 2 || d < -2 {
		a.screenshot("sidebar")
		t.Errorf("in the sidebar the picture's middle is %.0f px from the name's", d)
	}
}

// TestWideCodeCopyShows (issue 39, item 11): on a phone, a code block
// wider than the screen keeps its Copy button whole and in view.
func TestWideCodeCopyShows(t *testing.T) {
	b := begin(t)
	a := b.newTab("ada")
	a.signUp(newPerson("Ada", "Lovelace"))
	room := unique("code")
	a.createRoom(room, "Code")
	a.resize(phone)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitStream()
	code := "```\n" + strings.Repeat("wide_code_line(", 12) + "\n```"
	eval[bool](a, fmt.Sprintf(`(() => { const c = document.getElementById("content"); c.value = %s;
		c.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, js(code)))
	a.click("#composer button[type=submit]")
	a.waitJS("the code block", `document.querySelector("#messages li.message .code-block button.copy-code")`)
	a.frames()
	inView := eval[bool](a, `(() => { const b = document.querySelector("#messages .code-block button.copy-code").getBoundingClientRect();
		return b.width > 0 && b.left >= 0 && b.right <= window.innerWidth; })()`)
	if !inView || !eval[bool](a, reachable("#messages .code-block button.copy-code")) {
		a.screenshot("copy-clipped")
		t.Error("the Copy button of a wide code block is clipped on a phone")
	}
}

// TestWhoReactedOnTouch (issue 39, item 11): on a touch screen, where no
// button's title shows, a message's menu says who reacted with what.
func TestWhoReactedOnTouch(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Reactions")
	id := a.post("react to this " + unique("#"))
	o.waitJS("ada's message at bob's", `document.getElementById(`+js(id)+`)`)
	o.menuOf(id)
	o.click("#" + id + ` .react-picker button[value="👍"]`)
	o.waitJS("bob's reaction", reactionCount(id, "👍")+` === "1"`)
	a.resize(phone)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitJS("the reaction", reactionCount(id, "👍")+` === "1"`)
	a.menuOf(id)
	a.waitJS("who reacted, in the menu", hasText("#"+id+" .message-menu[open] .who-reacted li", "👍 Bob Babbage"))
	if !eval[bool](a, reachable("#"+id+" .message-menu[open] .who-reacted")) {
		a.screenshot("who-reacted")
		t.Error("the list of who reacted is cut off")
	}
	a.checkAccessibility("a message menu with who reacted, on a phone")
}

// TestBannerLive (issue 39, item 11): a room's new banner shows on the
// pages open on the room at once, without a reload.
func TestBannerLive(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "The first banner")
	o.waitStream()
	eval[bool](o, `(window.__notReloaded = true)`)
	a.open("/rooms/" + room + "/members")
	a.waitJS("the banner form", `document.querySelector("form.banner-form #banner")`)
	eval[bool](a, `(document.getElementById("banner").value = "", true)`)
	banner := "A new banner " + unique("#")
	a.fill("banner", banner)
	a.click("form.banner-form button[type=submit]")
	o.waitJS("the new banner at bob's", `document.getElementById("room-banner").textContent === `+js(banner)+
		` && !document.getElementById("room-banner").hidden && window.__notReloaded === true`)
}

// TestJoinsFold (issue 39, item 11): 30 joins in a row are one line that
// names the first and counts the rest, not 30 rows; a message after
// them still shows.
func TestJoinsFold(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("joins")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Thirty joins")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < 30; i++ {
		who := chat.UserRef{Login: unique("joiner"), Firstname: "Joiner", Lastname: fmt.Sprint(i)}
		r, err := db.JoinRoom(ctx, who, room)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.SaveMessage(ctx, r, db.DraftSystemMessage(r, who, who.Name()+" joins the room")); err != nil {
			t.Fatal(err)
		}
	}
	seedMessages(t, room, ada, 1)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitJS("the joins folded", `document.querySelectorAll("#messages li.message.system:not([hidden])").length > 0`)
	shown := a.texts(`#messages li.message.system:not([hidden]) .text`)
	var joins []string
	for _, s := range shown {
		if strings.Contains(s, "join") {
			joins = append(joins, s)
		}
	}
	if len(joins) != 1 || joins[0] != "Joiner 0, Joiner 1, Joiner 2 and 27 others joined the room" {
		t.Errorf("the joins show as %q", joins)
	}
	if !eval[bool](a, reachable(`#messages li.message:not(.system):last-child .text`)) {
		t.Error("the message after the joins does not show")
	}
	a.screenshot("joins")
}

// TestPDFOpens (issue 39, item 11: PDFs downloaded instead of opening):
// a PDF's link in the conversation opens it in a new tab rather than
// downloading it, and Chromium shows it in its viewer, at the file's own
// address, with no Content Security Policy complaint in the console
// (checkConsole fails the test on one). The headers that make it so,
// and that only a real PDF gets them, are TestPDFOpensInBrowser's
// (handlers).
func TestPDFOpens(t *testing.T) {
	b := begin(t)
	a := b.newTab("ada")
	a.signUp(newPerson("Ada", "Lovelace"))
	room := unique("pdf")
	a.createRoom(room, "PDFs")
	a.waitStream()
	pdf, err := filepath.Abs("testdata/one-page.pdf")
	if err != nil {
		t.Fatal(err)
	}
	a.run("pick a PDF", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{pdf}))
	a.click("#composer button[type=submit]")
	link := "#messages li.message:last-child .attachment-name"
	a.waitJSFor(2*waitTimeout, "the PDF's message", `document.querySelector(`+js(link)+`)`)
	if eval[bool](a, `document.querySelector(`+js(link)+`).hasAttribute("download")`) ||
		eval[string](a, `document.querySelector(`+js(link)+`).target`) != "_blank" {
		t.Errorf("the PDF's link downloads it, or opens it in place of the conversation: %s",
			eval[string](a, `document.querySelector(`+js(link)+`).outerHTML`))
	}
	href := eval[string](a, `document.querySelector(`+js(link)+`).getAttribute("href")`)
	a.open(href)
	a.waitJS("the PDF shown at its address", `location.pathname === `+js(href)+` && document.contentType === "application/pdf"`)
	a.screenshot("pdf")
}

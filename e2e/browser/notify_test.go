package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/killrchat/killrchat/chat"
)

// notificationProbe runs before a page's scripts: every page of the tab
// reads as hidden, and each Notification the page makes is recorded in
// window.__notes instead of shown (the permission stays the browser's
// own, which the test grants through the DevTools protocol).
const notificationProbe = `(() => {
  const Real = window.Notification;
  window.__notes = [];
  Object.defineProperty(document, "visibilityState", {get: () => "hidden", configurable: true});
  function Probe(title, opts) {
    window.__notes.push({title: title, body: (opts && opts.body) || "", tag: (opts && opts.tag) || ""});
    this.close = function () {};
  }
  Object.defineProperty(Probe, "permission", {get: () => Real ? Real.permission : "denied"});
  Probe.requestPermission = function () { return Real.requestPermission(); };
  window.Notification = Probe;
})();`

// probeNotifications installs notificationProbe in p's later pages.
func probeNotifications(t *testing.T, p *tab) {
	t.Helper()
	if _, err := chromedp.Call(p.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: notificationProbe}); err != nil {
		t.Fatalf("%s: install the notification probe: %v", p.label, err)
	}
}

// grantNotifications grants p's origin the notification permission,
// through the DevTools protocol (as a person's click would).
func grantNotifications(t *testing.T, p *tab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	origin := eval[string](p, `location.origin`)
	if _, err := chromedp.Call(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted,
		Origin: origin, BrowserContextID: chromedp.FromContext(p.ctx).BrowserContextID,
	}); err != nil {
		t.Fatalf("notification permission: %v", err)
	}
}

// settleNotes waits until the tabs' probes hold want notifications, and a
// second more, and returns them ("title | body"); any other count fails.
func settleNotes(t *testing.T, want int, what string, tabs ...*tab) []string {
	t.Helper()
	notes := func() []string {
		var out []string
		for _, p := range tabs {
			out = append(out, eval[[]string](p, `window.__notes.map(n => n.title + " | " + n.body)`)...)
		}
		return out
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(notes()) < want && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // a second notification would come by now
	got := notes()
	if len(got) != want {
		t.Fatalf("%s: %d notifications %q, want %d", what, len(got), got, want)
	}
	return got
}

// TestInPageNotifications (issue 19, item 2): with notifications allowed
// and no tab in view, a DM shows one notification (sender, conversation,
// text), however many tabs the browser has open; a room message at the
// room's default level (mentions) shows none, and one that mentions the
// person shows one.
func TestInPageNotifications(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Notifications")
	bob := eval[string](o, `document.body.getAttribute("data-viewer")`)
	ada := eval[string](a, `document.body.getAttribute("data-viewer")`)

	grantNotifications(t, o)
	o.open("/profile/notifications")
	o.waitJS("the permission's state", `document.getElementById("notification-settings").getAttribute("data-permission") === "granted"`)
	if got := o.text("#notification-state"); !strings.HasPrefix(got, "On") {
		t.Errorf("the settings page says %q", got)
	}
	o.checkAccessibility("the notification settings")
	o.open("/rooms/" + room)
	o.waitRoomPage(room)
	o.click(".room-menu summary")
	o.waitJS("the level form", `document.querySelector(".room-menu[open] form.level-form input[value=mentions]:checked") !== null`)
	o.checkAccessibility("the room menu with its notification levels")

	probeNotifications(t, o)
	o.open("/")
	other := o.sibling("bob's second tab")
	probeNotifications(t, other)
	other.open("/dm")
	for _, p := range []*tab{o, other} {
		p.waitJS("the live connection", `document.documentElement.getAttribute("data-live") === "up"`)
	}
	settle := func(want int, what string) []string { return settleNotes(t, want, what, o, other) }

	a.post("nothing for bob here " + unique("#"))
	settle(0, "a room message at the mentions level")

	text := "a word for @" + bob + " " + unique("#")
	a.post(text)
	got := settle(1, "a room message that mentions bob")
	if !strings.Contains(got[0], "Ada Lovelace in #") || !strings.HasSuffix(got[0], text) {
		t.Errorf("the mention's notification: %q", got[0])
	}

	address, err := chat.DMAddress([]string{ada, bob})
	if err != nil {
		t.Fatal(err)
	}
	a.open("/dm/" + address)
	a.waitStream()
	dm := "psst " + unique("#")
	a.post(dm)
	got = settle(2, "a DM")
	// A DM with Ada alone is titled with her name alone (issue 39): not
	// "Ada Lovelace in Ada Lovelace".
	if got[1] != "Ada Lovelace | "+dm {
		t.Errorf("the DM's notification: %q", got[1])
	}
}

package browser

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/killrchat/killrchat/chat"
)

// TestPresenceDots (issue 19, item 4): the room's participants show a
// dot for each person, online while a page of theirs is open and offline
// once they have none; the dot says which to a screen reader.
func TestPresenceDots(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Presence")
	bob := eval[string](o, `document.body.getAttribute("data-viewer")`)
	dot := `document.querySelector('#participants [data-presence="` + bob + `"]')`
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitJS("bob online", dot+` && `+dot+`.getAttribute("data-online") === "true" && `+dot+`.getAttribute("aria-label") === "online"`)
	a.checkAccessibility("the participants with presence dots")

	// A DM between the two: the sidebar's entry has the other's dot.
	ada := eval[string](a, `document.body.getAttribute("data-viewer")`)
	address, err := chat.DMAddress([]string{ada, bob})
	if err != nil {
		t.Fatal(err)
	}
	a.open("/dm/" + address)
	a.waitStream()
	a.post("are you there? " + unique("#"))
	entry := `document.querySelector('#my-dms [data-presence="` + bob + `"]')`
	a.waitJS("bob online in the sidebar's DM entry", entry+` && `+entry+`.getAttribute("data-online") === "true"`)

	o.run("bob leaves for a blank page", chromedp.Navigate("about:blank"))
	waitOffline(t, a, bob)
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitJS("bob offline", dot+` && `+dot+`.getAttribute("data-online") === "false" && `+dot+`.getAttribute("aria-label") === "offline"`)
	a.waitJS("bob offline in the sidebar's DM entry", entry+` && `+entry+`.getAttribute("data-online") === "false"`)
}

// waitOffline asks the server of p's page until it says login is offline:
// a browser's live connection closes a moment after its last page goes.
func waitOffline(t *testing.T, p *tab, login string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		eval[bool](p, `(() => { window.__presence = undefined; fetch("/presence?l=`+login+`").then(r => r.json()).then(j => { window.__presence = j.online.length; }); return true; })()`)
		p.waitJS("the server's answer", `window.__presence !== undefined`)
		if eval[int](p, `window.__presence`) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still says %s is online 30 s after their last page went", login)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

package browser

import (
	"testing"

	"github.com/chromedp/chromedp"
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

	o.run("bob leaves for a blank page", chromedp.Navigate("about:blank"))
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitJS("bob offline", dot+` && `+dot+`.getAttribute("data-online") === "false" && `+dot+`.getAttribute("aria-label") === "offline"`)
}

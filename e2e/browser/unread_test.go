package browser

import (
	"fmt"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// TestUnreadBadgesAndMentions (issue 11, items 3, 4, 7): Bob, in one room,
// sees a badge and the title's count appear for another room when Ada
// writes there; opening that room clears both; a mention of Bob is
// highlighted for Bob only, also when it arrives live; a DM from Ada gets
// its own badge and counts in the title, and opening it clears it.
func TestUnreadBadgesAndMentions(t *testing.T) {
	b := begin(t)
	a, o, here := pair(t, b, sizes[0], "Where Bob reads")
	there := unique("there")
	a.createRoom(there, "Where Ada writes")
	o.joinFromRoomPage(there)
	o.open("/rooms/" + here)
	o.waitRoomPage(here)
	o.waitStream()
	if got := eval[string](o, `document.title`); got[0] == '(' {
		t.Fatalf("title %q before anything is unread", got)
	}

	a.open("/rooms/" + there)
	a.waitRoomPage(there)
	a.post("news for bob " + unique("#"))
	entry := fmt.Sprintf(`document.querySelector('#my-rooms a[href="/rooms/%s#latest"]')`, there)
	o.waitJS("a badge for the other room", entry+` && `+entry+`.getAttribute("data-unread") === "1" && `+entry+`.querySelector(".badge.unread")`)
	o.waitJS("the title's count", `document.title.startsWith("(1) ")`)
	o.screenshot("badge")

	// A mention of Bob, live in the room he reads.
	a.open("/rooms/" + here)
	a.waitRoomPage(here)
	a.waitStream()
	bob := eval[string](o, `document.body.getAttribute("data-viewer")`)
	id := a.post("hey @" + bob + " look")
	o.waitJS("the live mention, highlighted for bob", fmt.Sprintf(`(() => { const m = document.querySelector("#%s a.mention");
		return m && m.classList.contains("mention-me") && m.getAttribute("href") === "/users/%s"; })()`, id, bob))
	if eval[bool](a, fmt.Sprintf(`document.querySelector("#%s a.mention-me") !== null`, id)) {
		t.Error("bob's mention is highlighted for ada")
	}
	if bg := eval[string](o, fmt.Sprintf(`getComputedStyle(document.querySelector("#%s a.mention")).backgroundColor`, id)); bg == "rgba(0, 0, 0, 0)" {
		t.Error("the mention has no highlight")
	}
	o.screenshot("mention")

	// A DM from Ada while Bob reads the room: live, a badge on its sidebar
	// entry (the entry itself is new) and a second conversation in the title.
	ada := eval[string](a, `document.body.getAttribute("data-viewer")`)
	address, err := chat.DMAddress([]string{ada, bob})
	if err != nil {
		t.Fatal(err)
	}
	a.open("/dm/" + address)
	a.waitJS("ada's DM page", atPath("/dm/"+address)+` && document.querySelector("#composer")`)
	a.post("a word in private " + unique("#"))
	dm := fmt.Sprintf(`document.querySelector('#my-dms a[href="/dm/%s#latest"]')`, address)
	o.waitJS("a badge for the DM", dm+` && `+dm+`.getAttribute("data-unread") === "1" && `+dm+`.querySelector(".badge.unread")`)
	o.waitJS("the title's count of two", `document.title.startsWith("(2) ")`)
	o.screenshot("dm-badge")
	o.click(fmt.Sprintf(`#my-dms a[href="/dm/%s#latest"]`, address))
	o.waitJS("the DM open", atPath("/dm/"+address)+` && document.querySelector("#composer")`)
	o.waitJS("the DM's badge cleared", dm+`.getAttribute("data-unread") === "0" && !`+dm+`.querySelector(".badge.unread")`)
	o.waitJS("the title's count of one", `document.title.startsWith("(1) ")`)

	// Opening the other room clears its badge and the title's count.
	o.click(fmt.Sprintf(`#my-rooms a[href="/rooms/%s#latest"]`, there))
	o.waitRoomPage(there)
	o.waitJS("the badge cleared", entry+`.getAttribute("data-unread") === "0" && !`+entry+`.querySelector(".badge.unread")`)
	o.waitJS("the title without a count", `!document.title.startsWith("(")`)
	o.checkConsole()
}

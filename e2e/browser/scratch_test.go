package browser

import "testing"

func TestScratch(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("look")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "A banner that is fairly long to see how it truncates on a phone screen")
	seedMessages(t, room, ada, 60)
	for _, s := range sizes {
		a.resize(s)
		a.open("/rooms/" + room)
		a.waitRoomPage(room)
		a.screenshot("room-" + s.name)
		a.open("/rooms")
		a.screenshot("rooms-" + s.name)
		if s.phone {
			a.click(".nav-drawer summary")
			a.screenshot("drawer-" + s.name)
		}
	}
}

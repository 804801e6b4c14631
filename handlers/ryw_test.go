package handlers_test

import (
	"fmt"
	"testing"
)

// TestReadYourWritesAcrossInstances (issue 37, item 9): the room's page
// read right after a post answers shows the post, on the instance that
// took it and on another one. The instance that took it used to wait for
// the other instances' next watermark (a heartbeat, every 100 ms, later
// under load) before its pages showed its own message.
func TestReadYourWritesAcrossInstances(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	for i := range 5 {
		text := fmt.Sprintf("post %d of %s", i, room)
		postMessage(t, ada, room, text)
		for name, c := range map[string]*client{"the same instance": ada, "another instance": ada.on(b)} {
			if p := c.get("/rooms/" + room); p.doc.Find(".message .text:contains('"+text+"')").Length() != 1 {
				t.Errorf("the page on %s right after post %d lacks it", name, i)
			}
		}
	}
}

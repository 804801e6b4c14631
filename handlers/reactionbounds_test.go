package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// TestReactionsBoundedOnWrite (issue 37, fault 8): reactions that look
// alike (👍, 👍 + U+200B, U+2060 + 👍) are one reaction; one made only of
// invisible characters is refused; a message takes at most 20 different
// reactions, refused on write (422) rather than hidden when shown; and a
// reaction to an id that names no message is 404 and stores nothing.
func TestReactionsBoundedOnWrite(t *testing.T) {
	a := newApp(t, nil, nil)
	ada, bob, cy := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("cy"))
	room := roomWith(t, ada, bob, cy)
	postMessage(t, ada, room, "look alike")
	id := latestID(t, room, "look alike")
	path := "/rooms/" + room + "/messages/" + id + "/reactions"
	for i, c := range []*client{ada, bob, cy} {
		emoji := []string{"👍", "👍\u200b", "\u2060👍"}[i]
		if p := c.post(path, url.Values{"emoji": {emoji}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("react %q: %d %s", emoji, p.StatusCode, text(p, "main"))
		}
	}
	for _, invisible := range []string{"\u200b", "\u2060\ufeff", "\u200d", "\u202e"} {
		if p := bob.post(path, url.Values{"emoji": {invisible}}); p.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("reaction %q: %d, want 422", invisible, p.StatusCode)
		}
	}
	groups := func() []chat.ReactionGroup {
		msgs, _, err := db.MessagesBefore(ctxT(t), roomPlace(t, room), chat.ID{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.ID.String() == id {
				var all []chat.Reaction
				all = append(all, m.Reactions...)
				return chat.GroupReactions(all)
			}
		}
		t.Fatal("the message is gone")
		return nil
	}
	if g := groups(); len(g) != 1 || g[0].Emoji != "👍" || len(g[0].People) != 3 {
		t.Errorf("groups %+v, want one 👍 of 3 people", g)
	}

	refused := 0
	for i := range 25 {
		emoji := fmt.Sprintf("r%d", i)
		switch p := bob.post(path, url.Values{"emoji": {emoji}}); p.StatusCode {
		case http.StatusSeeOther:
		case http.StatusUnprocessableEntity:
			refused++
		default:
			t.Fatalf("reaction %d: %d", i, p.StatusCode)
		}
	}
	if refused != 6 {
		t.Errorf("%d of 25 new reactions refused, want 6 (20 in all with 👍)", refused)
	}
	if p := cy.post(path, url.Values{"emoji": {"r3"}}); p.StatusCode != http.StatusSeeOther {
		t.Errorf("joining a reaction that exists, at the bound: %d", p.StatusCode)
	}
	var stored int
	msgs, _, _ := db.MessagesBefore(ctxT(t), roomPlace(t, room), chat.ID{}, 10)
	for _, m := range msgs {
		if m.ID.String() == id {
			seen := map[string]bool{}
			for _, r := range m.Reactions {
				seen[r.Emoji] = true
			}
			stored = len(seen)
		}
	}
	if stored != chat.MaxReactions {
		t.Errorf("%d different reactions stored, want %d", stored, chat.MaxReactions)
	}

	nowhere := db.NewChangeID().String()
	if p := bob.post("/rooms/"+room+"/messages/"+nowhere+"/reactions", url.Values{"emoji": {"👍"}}); p.StatusCode != http.StatusNotFound {
		t.Errorf("a reaction to an id that names no message: %d, want 404", p.StatusCode)
	}
	// Taking back needs no check: nothing is there to take back.
	if p := bob.post("/rooms/"+room+"/messages/"+nowhere+"/reactions", url.Values{"emoji": {"👍"}, "add": {"0"}}); p.StatusCode != http.StatusSeeOther {
		t.Errorf("taking back a reaction to no message: %d", p.StatusCode)
	}
}

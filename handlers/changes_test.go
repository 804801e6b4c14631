package handlers_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/views"
)

// latestID is the id of the newest message of room whose text is content.
func latestID(t *testing.T, room, content string) string {
	t.Helper()
	ids := stored(t, room, content)
	if len(ids) == 0 {
		t.Fatalf("no message %q in %s", content, room)
	}
	return ids[len(ids)-1]
}

// storedMessage reads one message of place, or fails.
func storedMessage(t *testing.T, in chat.Place, id string) (chat.Message, error) {
	t.Helper()
	uid, err := chat.ParseID(id)
	if err != nil {
		t.Fatal(err)
	}
	return db.Message(ctxT(t), in, uid)
}

func roomPlace(t *testing.T, room string) chat.Room {
	t.Helper()
	r, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEditAndDelete is issue 18's HTTP acceptance: the author edits and
// deletes; another member gets 403 for both and nothing changes; the
// room's creator deletes another's message; an outsider gets 404; a
// forged author field has no effect; and all of it works in a DM.
func TestEditAndDelete(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	creator, ada, bob, eve := a.signedUp(t, unique("cre")), a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("eve"))
	room := roomWith(t, creator, ada, bob)
	base := "/rooms/" + room + "/messages/"

	postMessage(t, ada, room, "teh typo")
	id := latestID(t, room, "teh typo")

	t.Run("OtherMemberCannot", func(t *testing.T) {
		if p := bob.post(base+id+"/edit", url.Values{"content": {"bob was here"}}); p.StatusCode != http.StatusForbidden {
			t.Errorf("bob edits ada's message: %d", p.StatusCode)
		}
		if p := bob.post(base+id+"/delete", nil); p.StatusCode != http.StatusForbidden {
			t.Errorf("bob deletes ada's message: %d", p.StatusCode)
		}
		if m, err := storedMessage(t, roomPlace(t, room), id); err != nil || m.Content != "teh typo" || m.Edited != (chat.ID{}) {
			t.Errorf("after bob's tries: %+v %v", m, err)
		}
	})
	t.Run("ForgedAuthor", func(t *testing.T) {
		p := bob.post(base+id+"/edit", url.Values{"content": {"forged"}, "author": {"ada"}, "login": {"ada"}})
		if p.StatusCode != http.StatusForbidden {
			t.Errorf("bob edits with a forged author: %d", p.StatusCode)
		}
	})
	t.Run("Outsider", func(t *testing.T) {
		for _, path := range []string{base + id + "/edit", base + id + "/delete", base + id + "/reactions"} {
			if p := eve.post(path, url.Values{"content": {"x"}, "emoji": {"👍"}}); p.StatusCode != http.StatusNotFound {
				t.Errorf("outsider POST %s: %d", path, p.StatusCode)
			}
		}
		if p := eve.get(base + id); p.StatusCode != http.StatusNotFound {
			t.Errorf("outsider GET message: %d", p.StatusCode)
		}
	})
	t.Run("AuthorEdits", func(t *testing.T) {
		p := ada.get(base + id)
		if p.StatusCode != http.StatusOK || p.doc.Find(`form.edit-form textarea[name="content"]`).Text() != "teh typo" {
			t.Fatalf("edit page: %d %s", p.StatusCode, text(p, "main"))
		}
		if p := ada.post(base+id+"/edit", url.Values{"content": {"the typo, fixed"}}); p.StatusCode != http.StatusSeeOther ||
			!strings.Contains(p.Header.Get("Location"), "?at="+id) {
			t.Fatalf("edit: %d %q %s", p.StatusCode, p.Header.Get("Location"), text(p, "main"))
		}
		m, err := storedMessage(t, roomPlace(t, room), id)
		if err != nil || m.Content != "the typo, fixed" || m.Author.Login != ada.login || m.Edited == (chat.ID{}) {
			t.Fatalf("stored after the edit: %+v %v", m, err)
		}
		page := bob.get("/rooms/" + room)
		li := page.doc.Find("#msg-" + id)
		if got := strings.TrimSpace(li.Find(".text").Text()); got != "the typo, fixed" {
			t.Errorf("page shows %q", got)
		}
		if mark := li.Find(".edited"); mark.Text() != "(edited)" || !strings.HasPrefix(mark.AttrOr("title", ""), "Edited ") {
			t.Errorf("edited mark: %q title %q", mark.Text(), mark.AttrOr("title", ""))
		}
	})
	t.Run("InvalidEdit", func(t *testing.T) {
		p := ada.post(base+id+"/edit", url.Values{"content": {"   "}})
		if p.StatusCode != http.StatusUnprocessableEntity || text(p, ".field-error") == "" {
			t.Errorf("empty edit: %d %s", p.StatusCode, text(p, ".field-error"))
		}
		if m, _ := storedMessage(t, roomPlace(t, room), id); m.Content != "the typo, fixed" {
			t.Errorf("after an empty edit: %q", m.Content)
		}
	})
	t.Run("AuthorDeletes", func(t *testing.T) {
		postMessage(t, ada, room, "my password is hunter2")
		mine := latestID(t, room, "my password is hunter2")
		if p := ada.post(base+mine+"/delete", confirmed()); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete: %d", p.StatusCode)
		}
		if _, err := storedMessage(t, roomPlace(t, room), mine); err == nil {
			t.Error("the message is still stored")
		}
		if p := bob.get("/rooms/" + room); p.doc.Find("#msg-"+mine).Length() != 0 {
			t.Error("the page still shows the deleted message")
		}
		if p := ada.post(base+mine+"/delete", confirmed()); p.StatusCode != http.StatusNotFound {
			t.Errorf("delete again: %d", p.StatusCode)
		}
	})
	t.Run("CreatorDeletesAnyone", func(t *testing.T) {
		postMessage(t, bob, room, "spam spam spam")
		spam := latestID(t, room, "spam spam spam")
		if p := creator.post(base+spam+"/edit", url.Values{"content": {"moderated"}}); p.StatusCode != http.StatusForbidden {
			t.Errorf("the creator edits bob's message: %d", p.StatusCode)
		}
		if p := creator.post(base+spam+"/delete", confirmed()); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("the creator deletes bob's message: %d", p.StatusCode)
		}
		if _, err := storedMessage(t, roomPlace(t, room), spam); err == nil {
			t.Error("bob's message is still stored")
		}
	})
	t.Run("AdminDeletesAnyone", func(t *testing.T) {
		// Issue 21: an admin moderates as the creator does; a member
		// who is not one still cannot.
		if p := creator.post("/rooms/"+room+"/members/"+ada.login+"/admin", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("make ada an admin: %d", p.StatusCode)
		}
		postMessage(t, bob, room, "more spam")
		spam := latestID(t, room, "more spam")
		if p := ada.post(base+spam+"/edit", url.Values{"content": {"moderated"}}); p.StatusCode != http.StatusForbidden {
			t.Errorf("an admin edits bob's message: %d", p.StatusCode)
		}
		if p := ada.post(base+spam+"/delete", confirmed()); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("an admin deletes bob's message: %d", p.StatusCode)
		}
		if _, err := storedMessage(t, roomPlace(t, room), spam); err == nil {
			t.Error("bob's message is still stored")
		}
		postMessage(t, ada, room, "from the admin")
		adas := latestID(t, room, "from the admin")
		if p := bob.post(base+adas+"/delete", nil); p.StatusCode != http.StatusForbidden {
			t.Errorf("a member who is no admin deletes the admin's message: %d", p.StatusCode)
		}
	})
	t.Run("DM", func(t *testing.T) {
		address := dmAddress(t, ada.login, bob.login)
		postDM(t, ada, address, "dm typo")
		msgs := dmMessages(t, address)
		id := msgs[len(msgs)-1].ID.String()
		dm := "/dm/" + address + "/messages/" + id
		if p := bob.post(dm+"/edit", url.Values{"content": {"bob"}}); p.StatusCode != http.StatusForbidden {
			t.Errorf("bob edits ada's DM: %d", p.StatusCode)
		}
		if p := eve.post(dm+"/edit", url.Values{"content": {"eve"}}); p.StatusCode != http.StatusNotFound {
			t.Errorf("eve edits a DM she is not in: %d", p.StatusCode)
		}
		if p := ada.post(dm+"/edit", url.Values{"content": {"dm fixed"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("ada edits her DM: %d", p.StatusCode)
		}
		if got := dmMessages(t, address); got[len(got)-1].Content != "dm fixed" {
			t.Errorf("DM after the edit: %q", got[len(got)-1].Content)
		}
		if p := bob.post(dm+"/delete", nil); p.StatusCode != http.StatusForbidden {
			t.Errorf("bob deletes ada's DM message: %d", p.StatusCode)
		}
		if p := ada.post(dm+"/delete", confirmed()); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("ada deletes her DM message: %d", p.StatusCode)
		}
		if got := dmMessages(t, address); len(got) != 0 {
			t.Errorf("DM after the delete: %d messages", len(got))
		}
	})
}

// TestReactionsOverHTTP: a reaction shows under its message with its
// count and who reacted, the reader's own pressed; taking it back removes
// it; a bad reaction is refused with nothing stored.
func TestReactionsOverHTTP(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)
	postMessage(t, ada, room, "react to me")
	id := latestID(t, room, "react to me")
	path := "/rooms/" + room + "/messages/" + id + "/reactions"

	for _, c := range []*client{ada, bob} {
		if p := c.post(path, url.Values{"emoji": {"👍"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("react: %d %s", p.StatusCode, text(p, "main"))
		}
	}
	if p := bob.post(path, url.Values{"emoji": {"ship it"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("react with text: %d", p.StatusCode)
	}
	p := bob.get("/rooms/" + room)
	group := p.doc.Find("#reactions-" + id + ` form.reaction[data-emoji="👍"]`)
	if got := text(p, "#reactions-"+id+` form.reaction[data-emoji="👍"] .count`); got != "2" {
		t.Errorf("count of 👍: %q", got)
	}
	if title := group.Find("button").AttrOr("title", ""); title != "Ada Lovelace, Ada Lovelace" {
		t.Errorf("who reacted: %q", title)
	}
	if group.Find("button").AttrOr("aria-pressed", "") != "true" || !group.HasClass("mine") ||
		group.Find(`input[name="add"]`).AttrOr("value", "") != "0" {
		t.Error("bob's own reaction is not shown as his")
	}
	if p.doc.Find("#reactions-"+id+` form.reaction[data-emoji="ship it"]`).Length() != 1 {
		t.Error("the text reaction is missing")
	}

	if p := bob.post(path, url.Values{"emoji": {"👍"}, "add": {"0"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("take back: %d", p.StatusCode)
	}
	if got := text(bob.get("/rooms/"+room), "#reactions-"+id+` form.reaction[data-emoji="👍"] .count`); got != "1" {
		t.Errorf("count after bob took his back: %q", got)
	}

	for _, bad := range []string{"", "   ", "this is far too long a reaction", "a\nb"} {
		if p := bob.post(path, url.Values{"emoji": {bad}}); p.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("reaction %q: %d", bad, p.StatusCode)
		}
	}
	if p := bob.post("/rooms/"+room+"/messages/not-an-id/reactions", url.Values{"emoji": {"👍"}}); p.StatusCode != http.StatusNotFound {
		t.Errorf("reaction to a malformed id: %d", p.StatusCode)
	}
	r := roomPlace(t, room)
	msgs, _, err := db.MessagesBefore(ctxT(t), r, chat.ID{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, m := range msgs {
		n += len(m.Reactions)
	}
	if n != 2 {
		t.Errorf("stored reactions: %d, want 2 (ada's 👍, bob's text)", n)
	}
}

// TestChangesLive: an edit, a reaction and a delete reach an open stream
// as their own events, each with an id of its own; a stream that resumes
// from before them gets them again, in order, after the messages.
func TestChangesLive(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)
	postMessage(t, ada, room, "first")
	s := bob.subscribe(t, room, "")
	postMessage(t, ada, room, "second")
	last, _ := s.nextMessage(t, 5*time.Second)
	first := latestID(t, room, "first")
	base := "/rooms/" + room + "/messages/" + first

	ada.post(base+"/edit", url.Values{"content": {"first, edited"}})
	bob.post(base+"/reactions", url.Values{"emoji": {"🎉"}})
	ada.post("/rooms/"+room+"/messages/"+last+"/delete", confirmed())

	want := []struct{ name, has string }{
		{"edit", `id="body-` + first + `"`},
		{"reaction", `"emoji":"🎉"`},
		{"delete", "msg-" + last},
	}
	var got []sseEvent
	for len(got) < len(want) {
		select {
		case ev := <-s.events:
			if ev.name != "" {
				got = append(got, ev)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("live changes: got %d of %d", len(got), len(want))
		}
	}
	for i, w := range want {
		if got[i].name != w.name || !strings.Contains(got[i].data, w.has) || got[i].id == "" {
			t.Errorf("live change %d: %+v, want %s with %s", i, got[i], w.name, w.has)
		}
		if i > 0 && !mustUUID(t, got[i].id).After(mustUUID(t, got[i-1].id)) {
			t.Errorf("change %d's id is not after the one before", i)
		}
	}
	if !strings.Contains(got[0].data, "first, edited") || !strings.Contains(got[0].data, "(edited)") {
		t.Errorf("edit event: %s", got[0].data)
	}
	s.close()

	// Resumed from the second message: the three changes come back, with
	// the same ids.
	r := bob.subscribe(t, room, last)
	for i, w := range want {
		select {
		case ev := <-r.events:
			if ev.name != w.name || ev.id != got[i].id || ev.data != got[i].data {
				t.Errorf("replayed change %d: %+v, want %+v", i, ev, got[i])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("replay: change %d missing", i)
		}
	}
}

func mustUUID(t *testing.T, s string) chat.ID {
	t.Helper()
	id, err := chat.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestEditMentionsAndDeleteFiles: mentions an edit adds are recorded, and
// those it takes away stop counting; deleting a message with a file
// deletes the file, its chunks and its mentions.
func TestEditMentionsAndDeleteFiles(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	bobLogin := loginOf(t, bob)
	room := roomWith(t, ada, bob)
	postMessage(t, ada, room, "hello there")
	id := latestID(t, room, "hello there")
	base := "/rooms/" + room + "/messages/" + id

	mentions := func() int { return bob.get("/mentions").doc.Find(".mention-item").Length() }
	if p := ada.post(base+"/edit", url.Values{"content": {"hello there @" + bobLogin}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d", p.StatusCode)
	}
	if n := mentions(); n != 1 {
		t.Errorf("after an edit that mentions bob: %d mentions, want 1", n)
	}
	if p := ada.post(base+"/edit", url.Values{"content": {"hello there, nobody"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d", p.StatusCode)
	}
	if n := mentions(); n != 0 {
		t.Errorf("after an edit that takes the mention away: %d mentions, want 0", n)
	}

	// A file, with a mention in its text, then deleted.
	ada.htmx = true
	resp, err := ada.upload("/rooms/"+room+"/messages", upload{csrf: ada.ensureCSRF(), content: "a file for @" + bobLogin,
		files: map[string]io.Reader{"f.txt": bytesFile([]byte("the file's bytes"))}, order: []string{"f.txt"}})
	ada.htmx = false
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %v %v", resp, err)
	}
	resp.Body.Close()
	fileMsg := latestID(t, room, "a file for @"+bobLogin)
	m, err := storedMessage(t, roomPlace(t, room), fileMsg)
	if err != nil || m.Attachment == nil {
		t.Fatalf("the file's message: %+v %v", m, err)
	}
	if n := mentions(); n != 1 {
		t.Fatalf("the file's mention: %d", n)
	}
	if _, err := db.Chunk(ctxT(t), m.Attachment.ID, 0); err != nil {
		t.Fatalf("the file's chunk: %v", err)
	}
	if p := ada.post("/rooms/"+room+"/messages/"+fileMsg+"/delete", confirmed()); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d", p.StatusCode)
	}
	if _, err := db.Attachment(ctxT(t), m.Attachment.ID); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("the deleted message's file: %v", err)
	}
	if _, err := db.Chunk(ctxT(t), m.Attachment.ID, 0); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("the deleted message's chunk: %v", err)
	}
	if p := bob.get(views.FileURL(m.Attachment.ID.String(), m.Attachment.Name)); p.StatusCode != http.StatusNotFound {
		t.Errorf("GET the deleted file: %d", p.StatusCode)
	}
	if n := mentions(); n != 0 {
		t.Errorf("the deleted message still mentions bob: %d", n)
	}
}

// TestDeletedMessageLeavesUnread: a message deleted before its reader saw
// it stops counting as unread.
func TestDeletedMessageLeavesUnread(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)
	bob.get("/rooms/" + room) // bob has read everything
	postMessage(t, ada, room, "oops, wrong room")
	id := latestID(t, room, "oops, wrong room")
	unread := func() string {
		return bob.get("/").doc.Find(fmt.Sprintf("#my-rooms a[href='/rooms/%s#latest']", room)).AttrOr("data-unread", "?")
	}
	if got := unread(); got != "1" {
		t.Fatalf("before the delete bob has %q unread, want 1", got)
	}
	if p := ada.post("/rooms/"+room+"/messages/"+id+"/delete", confirmed()); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d", p.StatusCode)
	}
	if got := unread(); got != "0" {
		t.Errorf("after the delete bob has %q unread, want 0", got)
	}
}

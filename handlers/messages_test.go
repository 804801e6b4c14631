package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// stored are the texts of the room's stored messages that equal content.
func stored(t *testing.T, room, content string) []string {
	t.Helper()
	r, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatalf("read room: %v", err)
	}
	msgs, _, err := db.MessagesBefore(ctxT(t), r, chat.ID{}, 200)
	if err != nil {
		t.Fatalf("read messages: %v", err)
	}
	var ids []string
	for _, m := range msgs {
		if m.Content == content {
			ids = append(ids, m.ID.String())
		}
	}
	return ids
}

// composerClientID is the one-time client_id the room page's composer carries.
func composerClientID(t *testing.T, c *client, room string) string {
	t.Helper()
	p := c.get("/rooms/" + room)
	id, _ := p.doc.Find(`#composer input[name="client_id"]`).Attr("value")
	if id == "" {
		t.Fatalf("the composer of %s carries no client_id", room)
	}
	return id
}

// TestPostIsIdempotent: a send repeated with the same client_id (a double
// click, a retry after a lost answer) stores one message and answers with
// that message each time; a new client_id, or another author, is a new
// message.
func TestPostIsIdempotent(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)

	t.Run("RetryWithoutJavaScript", func(t *testing.T) {
		id := composerClientID(t, ada, room)
		text := "once only " + unique("#")
		for i := 0; i < 2; i++ {
			p := ada.post("/rooms/"+room+"/messages", url.Values{"content": {text}, "client_id": {id}})
			if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/rooms/"+room+"#latest" {
				t.Fatalf("post %d: %d %q", i+1, p.StatusCode, p.Header.Get("Location"))
			}
		}
		if got := stored(t, room, text); len(got) != 1 {
			t.Errorf("two posts with one client_id stored %d messages, want 1", len(got))
		}
		// The page opens on the newest message: it carries the #latest anchor.
		p := ada.get("/rooms/" + room)
		if got := p.doc.Find("#messages li.message").Last().Find("#latest").Length(); got != 1 {
			t.Errorf("the newest message has %d #latest anchors, want 1", got)
		}
	})

	t.Run("RetryWithHTMX", func(t *testing.T) {
		ada.htmx = true
		defer func() { ada.htmx = false }()
		id := composerClientID(t, ada, room)
		text := "htmx once " + unique("#")
		var answered []string
		for i := 0; i < 2; i++ {
			p := ada.post("/rooms/"+room+"/messages", url.Values{"content": {text}, "client_id": {id}})
			if p.StatusCode != http.StatusOK {
				t.Fatalf("post %d: %d %s", i+1, p.StatusCode, p.body)
			}
			msg := p.doc.Find(`[hx-swap-oob="beforeend:#messages"] li.message`)
			answered = append(answered, msg.AttrOr("id", ""))
			next := p.doc.Find(`input#client_id[hx-swap-oob]`).AttrOr("value", "")
			if next == "" || next == id {
				t.Errorf("post %d: the answer's next client_id is %q (sent %q)", i+1, next, id)
			}
		}
		ids := stored(t, room, text)
		if len(ids) != 1 {
			t.Fatalf("two htmx posts with one client_id stored %d messages, want 1", len(ids))
		}
		for i, got := range answered {
			if got != "msg-"+ids[0] {
				t.Errorf("answer %d shows %q, want the stored msg-%s", i+1, got, ids[0])
			}
		}
	})

	t.Run("ConcurrentRepeats", func(t *testing.T) {
		id := composerClientID(t, ada, room)
		text := "clicked five times " + unique("#")
		csrf := ada.ensureCSRF()
		var wg sync.WaitGroup
		codes := make([]int, 5)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = ada.postRaw("/rooms/"+room+"/messages", url.Values{"content": {text}, "client_id": {id}, "_csrf": {csrf}}).StatusCode
			}()
		}
		wg.Wait()
		for i, code := range codes {
			if code != http.StatusSeeOther {
				t.Errorf("post %d answered %d", i+1, code)
			}
		}
		if got := stored(t, room, text); len(got) != 1 {
			t.Errorf("five concurrent posts with one client_id stored %d messages, want 1", len(got))
		}
	})

	t.Run("NewClientIDIsNewMessage", func(t *testing.T) {
		text := "said twice " + unique("#")
		for i := 0; i < 2; i++ {
			id := composerClientID(t, ada, room)
			ada.post("/rooms/"+room+"/messages", url.Values{"content": {text}, "client_id": {id}})
		}
		if got := stored(t, room, text); len(got) != 2 {
			t.Errorf("two sends with fresh client_ids stored %d messages, want 2", len(got))
		}
	})

	t.Run("OtherAuthorSameClientID", func(t *testing.T) {
		id := composerClientID(t, ada, room)
		text := "same words " + unique("#")
		ada.post("/rooms/"+room+"/messages", url.Values{"content": {text}, "client_id": {id}})
		bob.post("/rooms/"+room+"/messages", url.Values{"content": {text}, "client_id": {id}})
		if got := stored(t, room, text); len(got) != 2 {
			t.Errorf("two authors with one client_id stored %d messages, want 2", len(got))
		}
	})

	t.Run("RejectedThenFixed", func(t *testing.T) {
		// A rejected send stores nothing and is not remembered: the same
		// client_id with real text then posts.
		id := composerClientID(t, ada, room)
		ada.htmx = true
		p := ada.post("/rooms/"+room+"/messages", url.Values{"content": {"  \n "}, "client_id": {id}})
		ada.htmx = false
		if p.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("whitespace-only: %d", p.StatusCode)
		}
		if got := text(p, `#composer-error[hx-swap-oob] .field-error`); got != "Write something first." {
			t.Errorf("whitespace-only answers %q in the composer's slot; body %s", got, p.body)
		}
		if p.Header.Get("HX-Retarget") != "" {
			t.Errorf("a rejected message was sent to the page banner (HX-Retarget %q)", p.Header.Get("HX-Retarget"))
		}
		words := "now with words " + unique("#")
		ada.post("/rooms/"+room+"/messages", url.Values{"content": {words}, "client_id": {id}})
		if got := stored(t, room, words); len(got) != 1 {
			t.Errorf("after a rejected send, the same client_id stored %d messages, want 1", len(got))
		}
	})

	t.Run("MalformedClientID", func(t *testing.T) {
		body := "bad id " + unique("#")
		p := ada.post("/rooms/"+room+"/messages", url.Values{"content": {body}, "client_id": {"<script>"}})
		if p.StatusCode != http.StatusBadRequest || !strings.Contains(text(p, "main"), "Reload the page") {
			t.Errorf("malformed client_id: %d %q", p.StatusCode, text(p, "main"))
		}
		if got := stored(t, room, body); len(got) != 0 {
			t.Errorf("a malformed client_id stored %d messages", len(got))
		}
	})
}

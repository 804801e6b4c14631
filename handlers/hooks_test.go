package handlers_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/web/limit"
)

// newHook has admin, an administrator of room, make a webhook named
// name there, and returns its address (with the secret) read from the
// page that shows it once.
func newHook(t *testing.T, admin *client, room, name string) string {
	t.Helper()
	p := admin.post("/rooms/"+room+"/hooks", url.Values{"name": {name}})
	if p.StatusCode != http.StatusOK {
		t.Fatalf("create hook: %d %s", p.StatusCode, text(p, "main"))
	}
	addr, _ := p.doc.Find("#new-hook-url").Attr("value")
	if !strings.Contains(addr, "/hooks/") {
		t.Fatalf("the page shows no hook address: %q", addr)
	}
	return addr
}

// hookPost posts body with content type to addr, with extra headers.
func hookPost(t *testing.T, addr, contentType, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, addr, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// storedCount is how many messages room holds.
func storedCount(t *testing.T, room string) int {
	t.Helper()
	r, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := db.MessagesBefore(ctxT(t), r, chat.ID{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return len(msgs)
}

// TestIncomingWebhook posts Slack's documented incoming-webhook
// examples (plain text, mrkdwn with a link and bold, the payload= form)
// and a text/plain body, and finds each on the room page and in its
// live stream under the hook's name with the bot mark.
func TestIncomingWebhook(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner := a.signedUp(t, unique("own"))
	room := createRoom(t, owner)
	addr := newHook(t, owner, room, "CI")
	live := owner.subscribe(t, room, "")
	defer live.close()

	for _, tc := range []struct {
		name, contentType, body string
		header                  []string
		author, selector, want  string
	}{
		{"SlackPlain", "application/json", `{"text": "Hello, world."}`, nil, "CI", ".text", "Hello, world."},
		{"SlackMrkdwn", "application/json",
			`{"text": "*Build 42* passed: <https://ci.example.com/runs/42|see the run>", "username": "Jenkins", "icon_url": "https://ci.example.com/i.png"}`,
			nil, "Jenkins via CI", `.text strong`, "Build 42"},
		{"PayloadForm", "application/x-www-form-urlencoded", url.Values{"payload": {`{"text": "This is posted to #general and comes from a bot named webhookbot.", "username": "webhookbot"}`}}.Encode(),
			nil, "webhookbot via CI", ".text", "comes from a bot named webhookbot"},
		{"TextPlain", "text/plain; charset=utf-8", "Deploy of _v1.2_ done", nil, "CI", ".text em", "v1.2"},
		{"SecretInHeader", "application/json", `{"text": "by header"}`, []string{"X-KillrChat-Hook-Secret", addr[strings.LastIndex(addr, "/")+1:]}, "CI", ".text", "by header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := addr
			if tc.header != nil {
				target = addr[:strings.LastIndex(addr, "/")]
			}
			status, body := hookPost(t, target, tc.contentType, tc.body, tc.header...)
			if status != http.StatusOK || body != "ok" {
				t.Fatalf("post: %d %q", status, body)
			}
			_, ev := live.messageWith(t, "msg-", 10*time.Second)
			for _, doc := range []string{ev.data, owner.get("/rooms/" + room).body} {
				d, _ := goquery.NewDocumentFromReader(strings.NewReader(doc))
				item := d.Find("li.message").Last()
				if got := strings.TrimSpace(item.Find(".author .user-link").Text()); got != tc.author {
					t.Errorf("author %q, want %q", got, tc.author)
				}
				if got := strings.TrimSpace(item.Find(".author .bot-mark").Text()); got != "bot" {
					t.Errorf("no bot mark beside the author: %q", got)
				}
				if got := item.Find(tc.selector).Text(); !strings.Contains(got, tc.want) {
					t.Errorf("%s: %q lacks %q", tc.selector, got, tc.want)
				}
			}
			if tc.name == "SlackMrkdwn" {
				d, _ := goquery.NewDocumentFromReader(strings.NewReader(ev.data))
				if href, _ := d.Find(".text a").Attr("href"); href != "https://ci.example.com/runs/42" || d.Find(".text a").Text() != "see the run" {
					t.Errorf("the link is %q %q", href, d.Find(".text a").Text())
				}
			}
		})
	}

	t.Run("RefusedStoreNothing", func(t *testing.T) {
		before := storedCount(t, room)
		id := addr[strings.Index(addr, "/hooks/")+len("/hooks/"):]
		id = id[:strings.Index(id, "/")]
		long := strings.Repeat("x", chat.MaxContent+1)
		for _, tc := range []struct {
			name, addr, contentType, body string
			want                          int
		}{
			{"WrongSecret", a.URL + "/hooks/" + id + "/" + strings.Repeat("A", 43), "application/json", `{"text":"x"}`, http.StatusNotFound},
			{"NoSecret", a.URL + "/hooks/" + id, "application/json", `{"text":"x"}`, http.StatusNotFound},
			{"UnknownHook", a.URL + "/hooks/" + strings.Repeat("0", 24) + "/x", "application/json", `{"text":"x"}`, http.StatusNotFound},
			{"InvalidJSON", addr, "application/json", `{"text": "x"`, http.StatusBadRequest},
			{"UnknownField", addr, "application/json", `{"text": "x", "blocks": []}`, http.StatusBadRequest},
			{"NoText", addr, "application/json", `{"username": "x"}`, http.StatusBadRequest},
			{"EmptyText", addr, "text/plain", "   ", http.StatusBadRequest},
			{"FormWithoutPayload", addr, "application/x-www-form-urlencoded", "text=x", http.StatusBadRequest},
			{"WrongContentType", addr, "application/xml", `<text>x</text>`, http.StatusUnsupportedMediaType},
			{"NoContentType", addr, "", `{"text":"x"}`, http.StatusUnsupportedMediaType},
			{"OverMessageLimit", addr, "application/json", fmt.Sprintf(`{"text": %q}`, long), http.StatusBadRequest},
			{"OverBodyLimit", addr, "text/plain", strings.Repeat("y", 70<<10), http.StatusRequestEntityTooLarge},
			{"BadUsername", addr, "application/json", `{"text": "x", "username": "a\nb"}`, http.StatusBadRequest},
		} {
			if status, body := hookPost(t, tc.addr, tc.contentType, tc.body); status != tc.want || strings.TrimSpace(body) == "" {
				t.Errorf("%s: %d %q, want %d and a sentence", tc.name, status, body, tc.want)
			}
		}
		if after := storedCount(t, room); after != before {
			t.Fatalf("refused posts stored %d messages", after-before)
		}
	})

	t.Run("OnlyRoomAdmins", func(t *testing.T) {
		member := a.signedUp(t, unique("mem"))
		if p := member.post("/rooms/"+room+"/join", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("join: %d", p.StatusCode)
		}
		if p := member.post("/rooms/"+room+"/hooks", url.Values{"name": {"Mine"}}); p.StatusCode != http.StatusForbidden {
			t.Fatalf("a member who is no admin made a hook: %d", p.StatusCode)
		}
		if p := member.get("/rooms/" + room + "/hooks"); p.StatusCode != http.StatusForbidden {
			t.Fatalf("a member who is no admin sees the hooks: %d", p.StatusCode)
		}
	})

	t.Run("DeletedRoom", func(t *testing.T) {
		other := createRoom(t, owner)
		gone := newHook(t, owner, other, "Gone")
		if p := owner.post("/rooms/"+other+"/delete", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete room: %d %s", p.StatusCode, text(p, "main"))
		}
		if status, body := hookPost(t, gone, "text/plain", "into the void"); status != http.StatusNotFound {
			t.Fatalf("a hook posted into a deleted room: %d %q", status, body)
		}
	})

	t.Run("DeletedHook", func(t *testing.T) {
		h := newHook(t, owner, room, "Short-lived")
		id := h[strings.Index(h, "/hooks/")+len("/hooks/"):]
		id = id[:strings.Index(id, "/")]
		if p := owner.post("/rooms/"+room+"/hooks/"+id+"/delete", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete hook: %d", p.StatusCode)
		}
		if status, _ := hookPost(t, h, "text/plain", "after delete"); status != http.StatusNotFound {
			t.Fatalf("a deleted hook posted: %d", status)
		}
	})
}

// TestIncomingWebhookRateLimit: past its burst, a hook is refused with
// 429 and Retry-After, and the refused post is not stored.
func TestIncomingWebhookRateLimit(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil, func(c *handlers.Config) {
		c.Limits.Hooks = limit.Rate{Burst: 2, Per: time.Hour}
	})
	owner := a.signedUp(t, unique("own"))
	room := createRoom(t, owner)
	addr := newHook(t, owner, room, "Noisy")
	for i := 0; i < 2; i++ {
		if status, _ := hookPost(t, addr, "text/plain", fmt.Sprint("post ", i)); status != http.StatusOK {
			t.Fatalf("post %d: %d", i, status)
		}
	}
	before := storedCount(t, room)
	req, _ := http.NewRequest(http.MethodPost, addr, strings.NewReader("one too many"))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third post: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if storedCount(t, room) != before {
		t.Fatal("the refused post was stored")
	}
}

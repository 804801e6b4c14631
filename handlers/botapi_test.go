package handlers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
)

// apiMessages is a page of the API's messages and its next link.
func apiMessages(t *testing.T, a *app, token, path string) ([]map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	next := ""
	if l := resp.Header.Get("Link"); l != "" {
		if !strings.HasSuffix(l, `>; rel="next"`) || !strings.HasPrefix(l, "<") {
			t.Fatalf("Link: %q", l)
		}
		next = strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
	}
	return body.Messages, next
}

func apiPost(t *testing.T, a *app, token, conv, text string) map[string]any {
	t.Helper()
	resp, body := api(t, a, http.MethodPost, "/api/v1/conversations/"+url.PathEscape(conv)+"/messages", token, "application/json",
		strings.NewReader(fmt.Sprintf(`{"text": %q}`, text)))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("post %q: %d %v", text, resp.StatusCode, body)
	}
	return body
}

// TestBotAPI: list, read pages across a day boundary, post, edit,
// delete, react; another bot's token cannot touch this bot's messages;
// a room the bot is not in is 404; bad bodies are 4xx and store nothing.
func TestBotAPI(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	earlier, err := db.Another()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(earlier.Close)
	earlier.Now = func() time.Time { return time.Now().Add(-48 * time.Hour) }
	past := newApp(t, earlier, nil)

	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	bot, token := newBot(t, admin)
	other, otherToken := newBot(t, admin)
	room := createRoom(t, admin.on(past)) // two days ago
	for _, b := range []string{bot, other} {
		if p := admin.on(past).post("/rooms/"+room+"/members", url.Values{"login": {b}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("add %s: %d %s", b, p.StatusCode, text(p, "main"))
		}
	}
	old1 := apiPost(t, past, token, room, "old 1")
	old2 := apiPost(t, past, token, room, "old 2")
	var news []map[string]any
	for i := 1; i <= 3; i++ {
		news = append(news, apiPost(t, a, token, room, fmt.Sprint("new ", i)))
	}
	if chat.TimeBucket(mustID(t, old2["id"].(string)).Time()) == chat.TimeBucket(mustID(t, news[0]["id"].(string)).Time()) {
		t.Fatal("the old and new messages share a day")
	}

	t.Run("List", func(t *testing.T) {
		resp, body := api(t, a, http.MethodGet, "/api/v1/conversations", token, "", nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(fmt.Sprint(body["conversations"]), "id:"+room) {
			t.Fatalf("conversations: %d %v", resp.StatusCode, body)
		}
		for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if resp.Header.Get(h) == "" {
				t.Errorf("no %s", h)
			}
		}
	})
	t.Run("PagesAcrossDays", func(t *testing.T) {
		var texts []string
		var ids []chat.ID
		path := "/api/v1/conversations/" + room + "/messages?limit=2"
		for pages := 0; path != ""; pages++ {
			if pages > 20 {
				t.Fatal("the pages never end")
			}
			var msgs []map[string]any
			msgs, path = apiMessages(t, a, token, path)
			for _, m := range msgs {
				ids = append(ids, mustID(t, m["id"].(string)))
				if m["author"].(map[string]any)["login"] == bot && m["system"] == nil {
					texts = append(texts, m["text"].(string))
				}
			}
		}
		if got := strings.Join(texts, ","); got != "new 3,new 2,new 1,old 2,old 1" {
			t.Fatalf("the bot's messages newest first: %s", got)
		}
		for i := 1; i < len(ids); i++ {
			if !ids[i-1].After(ids[i]) {
				t.Fatalf("not newest first at %d", i)
			}
		}
		// after: the messages that follow old 1, newest first.
		msgs, next := apiMessages(t, a, token, "/api/v1/conversations/"+room+"/messages?limit=2&after="+old1["id"].(string))
		if len(msgs) != 2 || msgs[1]["text"] != "old 2" || next == "" || !strings.Contains(next, "after=") {
			t.Fatalf("after old 1: %v, next %q", msgs, next)
		}
	})
	t.Run("OtherBotCannotTouch", func(t *testing.T) {
		path := "/api/v1/conversations/" + room + "/messages/" + news[0]["id"].(string)
		if resp, body := api(t, a, http.MethodPatch, path, otherToken, "application/json", strings.NewReader(`{"text": "hijacked"}`)); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("another bot edited: %d %v", resp.StatusCode, body)
		}
		if resp, body := api(t, a, http.MethodDelete, path, otherToken, "", nil); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("another bot deleted: %d %v", resp.StatusCode, body)
		}
		msgs, _ := apiMessages(t, a, token, "/api/v1/conversations/"+room+"/messages?limit=3")
		if msgs[2]["text"] != "new 1" {
			t.Fatalf("the message changed: %v", msgs[2])
		}
		_ = other
	})
	t.Run("EditDeleteReact", func(t *testing.T) {
		path := "/api/v1/conversations/" + room + "/messages/" + news[1]["id"].(string)
		if resp, body := api(t, a, http.MethodPatch, path, token, "application/json", strings.NewReader(`{"text": "new 2, edited"}`)); resp.StatusCode != http.StatusOK || body["text"] != "new 2, edited" || body["edited"] != true {
			t.Fatalf("edit: %d %v", resp.StatusCode, body)
		}
		if resp, body := api(t, a, http.MethodPut, path+"/reactions/"+url.PathEscape("👍"), otherToken, "", nil); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("react: %d %v", resp.StatusCode, body)
		}
		msgs, _ := apiMessages(t, a, token, "/api/v1/conversations/"+room+"/messages?limit=3")
		if fmt.Sprint(msgs[1]["reactions"]) != fmt.Sprintf("[map[emoji:👍 login:%s]]", other) {
			t.Fatalf("reactions: %v", msgs[1]["reactions"])
		}
		if resp, _ := api(t, a, http.MethodDelete, path+"/reactions/"+url.PathEscape("👍"), otherToken, "", nil); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("take back: %d", resp.StatusCode)
		}
		if resp, _ := api(t, a, http.MethodDelete, "/api/v1/conversations/"+room+"/messages/"+news[2]["id"].(string), token, "", nil); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("delete: %d", resp.StatusCode)
		}
		msgs, _ = apiMessages(t, a, token, "/api/v1/conversations/"+room+"/messages?limit=2")
		if msgs[0]["text"] != "new 2, edited" || msgs[0]["reactions"] != nil {
			t.Fatalf("after edit, reaction taken back and delete: %v", msgs)
		}
		// The room page shows the edit.
		if p := admin.get("/rooms/" + room); !strings.Contains(p.body, "new 2, edited") {
			t.Fatal("the room page lacks the edit")
		}
	})
	t.Run("OutsiderRoom", func(t *testing.T) {
		open := createRoom(t, admin)
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			var body io.Reader
			if method == http.MethodPost {
				body = strings.NewReader(`{"text": "intruding"}`)
			}
			if resp, b := api(t, a, method, "/api/v1/conversations/"+open+"/messages", token, "application/json", body); resp.StatusCode != http.StatusNotFound || b["error"] == "" {
				t.Fatalf("%s in a room the bot is not in: %d %v", method, resp.StatusCode, b)
			}
		}
		if resp, _ := api(t, a, http.MethodGet, "/api/v1/conversations/no-such-room/messages", token, "", nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("an unknown room: %d", resp.StatusCode)
		}
	})
	t.Run("BadInput", func(t *testing.T) {
		before := storedCount(t, room)
		path := "/api/v1/conversations/" + room + "/messages"
		for _, tc := range []struct {
			name, contentType, body string
			want                    int
		}{
			{"TextPlain", "text/plain", "hello", http.StatusUnsupportedMediaType},
			{"InvalidJSON", "application/json", `{"text": `, http.StatusBadRequest},
			{"UnknownField", "application/json", `{"text": "x", "channel": "y"}`, http.StatusBadRequest},
			{"NoText", "application/json", `{}`, http.StatusBadRequest},
			{"BadFormat", "application/json", `{"text": "x", "format": "html"}`, http.StatusBadRequest},
			{"TooLong", "application/json", fmt.Sprintf(`{"text": %q}`, strings.Repeat("x", chat.MaxContent+1)), http.StatusBadRequest},
			{"OverBodyLimit", "application/json", fmt.Sprintf(`{"text": %q}`, strings.Repeat("x", 70<<10)), http.StatusRequestEntityTooLarge},
		} {
			resp, b := api(t, a, http.MethodPost, path, token, tc.contentType, strings.NewReader(tc.body))
			if resp.StatusCode != tc.want || b["error"] == "" {
				t.Errorf("%s: %d %v, want %d with an error", tc.name, resp.StatusCode, b, tc.want)
			}
		}
		if after := storedCount(t, room); after != before {
			t.Fatalf("refused posts stored %d messages", after-before)
		}
	})
}

// apiUpload posts a multipart form of the fields (name, value pairs)
// then the file to the bot API's upload of conv; chunked leaves the
// length unknown.
func apiUpload(t *testing.T, a *app, token, conv string, fields []string, name string, file []byte, chunked bool) (*http.Response, map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	if name != "" {
		fw, _ := mw.CreateFormFile("file", name)
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	var body io.Reader = &buf
	if chunked {
		body = io.MultiReader(&buf)
	}
	return api(t, a, http.MethodPost, "/api/v1/conversations/"+url.PathEscape(conv)+"/files", token, mw.FormDataContentType(), body)
}

// TestBotAPIUpload: a bot uploads a file into its room through the API;
// the room page shows it and a member downloads it; into a DM too, whose
// file only its members read; a room the bot is
// not in is 404; a file over the limit, a form without a file and a body
// that is not a form are refused clearly and store nothing.
func TestBotAPIUpload(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.MaxUpload = 1 << 20 })
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	bot, token := newBot(t, admin)
	room := createRoom(t, admin)
	if p := admin.post("/rooms/"+room+"/members", url.Values{"login": {bot}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("add %s: %d %s", bot, p.StatusCode, text(p, "main"))
	}
	member := a.signedUp(t, unique("bea"))
	if p := admin.post("/rooms/"+room+"/members", url.Values{"login": {member.login}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("add %s: %d %s", member.login, p.StatusCode, text(p, "main"))
	}

	t.Run("OK", func(t *testing.T) {
		want, _ := io.ReadAll(randomBytes(300_000, 7))
		resp, body := apiUpload(t, a, token, room, []string{"text", "The *nightly* report"}, "report.bin", want, false)
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Location") == "" {
			t.Fatalf("upload: %d %v", resp.StatusCode, body)
		}
		if f, _ := body["file"].(map[string]any); f["name"] != "report.bin" || f["size"] != float64(len(want)) ||
			body["text"] != "The *nightly* report" || body["author"].(map[string]any)["login"] != bot {
			t.Fatalf("the message: %v", body)
		}
		msgs, _ := apiMessages(t, a, token, "/api/v1/conversations/"+room+"/messages?limit=1")
		if len(msgs) != 1 || msgs[0]["id"] != body["id"] || msgs[0]["file"] == nil {
			t.Fatalf("the newest message: %v", msgs)
		}
		p := member.get("/rooms/" + room)
		item := p.doc.Find("#msg-" + body["id"].(string))
		link := item.Find("a.attachment-name")
		href, _ := link.Attr("href")
		if link.Length() != 1 || strings.TrimSpace(link.Text()) != "report.bin" || !strings.Contains(item.Text(), "nightly") {
			t.Fatalf("the room page's message: %q", item.Text())
		}
		if item.Find(".bot-mark").Length() == 0 {
			t.Errorf("the bot's upload has no bot mark: %s", item.Text())
		}
		dl, err := member.http.Get(member.base + href)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(dl.Body)
		dl.Body.Close()
		if dl.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
			t.Fatalf("download: %d, %d bytes, equal %v", dl.StatusCode, len(got), bytes.Equal(got, want))
		}
	})
	t.Run("InDM", func(t *testing.T) {
		dm := dmAddress(t, member.login, bot)
		if p := member.post("/dm/"+dm+"/messages", url.Values{"content": {"hello bot"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("start the DM: %d %s", p.StatusCode, text(p, "main"))
		}
		resp, body := apiUpload(t, a, token, chat.DMPrefix+dm, nil, "dm.txt", []byte("for your eyes"), false)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("upload into the DM: %d %v", resp.StatusCode, body)
		}
		link := member.get("/dm/" + dm).doc.Find("#msg-" + body["id"].(string) + " a.attachment-name")
		href, _ := link.Attr("href")
		if link.Length() != 1 {
			t.Fatal("the DM shows no file")
		}
		for _, c := range []struct {
			who  *client
			want int
		}{{member, http.StatusOK}, {admin, http.StatusNotFound}} {
			dl, err := c.who.http.Get(c.who.base + href)
			if err != nil {
				t.Fatal(err)
			}
			dl.Body.Close()
			if dl.StatusCode != c.want {
				t.Errorf("%s downloads the DM's file: %d, want %d", c.who.login, dl.StatusCode, c.want)
			}
		}
	})
	t.Run("OutsiderRoom", func(t *testing.T) {
		other := createRoom(t, admin)
		resp, body := apiUpload(t, a, token, other, nil, "x.txt", []byte("intruding"), false)
		if resp.StatusCode != http.StatusNotFound || body["error"] == "" {
			t.Fatalf("upload into a room the bot is not in: %d %v", resp.StatusCode, body)
		}
		if n := listed(t, other); n != 0 {
			t.Fatalf("%d files stored", n)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		before := storedCount(t, room)
		files := listed(t, room)
		big, _ := io.ReadAll(randomBytes(2<<20, 8))
		for _, tc := range []struct {
			name    string
			send    func() (*http.Response, map[string]any)
			want    int
			message string
		}{
			{"TooLarge", func() (*http.Response, map[string]any) {
				return apiUpload(t, a, token, room, nil, "big.bin", big, false)
			}, http.StatusRequestEntityTooLarge, "larger than the 1 MiB limit"},
			{"TooLargeChunked", func() (*http.Response, map[string]any) {
				return apiUpload(t, a, token, room, nil, "big.bin", big, true)
			}, http.StatusRequestEntityTooLarge, "larger than the 1 MiB limit"},
			{"NoFile", func() (*http.Response, map[string]any) {
				return apiUpload(t, a, token, room, []string{"text", "no file"}, "", nil, false)
			}, http.StatusBadRequest, "no file"},
			{"UnknownPart", func() (*http.Response, map[string]any) {
				return apiUpload(t, a, token, room, []string{"channel", "x"}, "a.txt", []byte("a"), false)
			}, http.StatusBadRequest, `"channel"`},
			{"NotAForm", func() (*http.Response, map[string]any) {
				return api(t, a, http.MethodPost, "/api/v1/conversations/"+room+"/files", token, "application/octet-stream", strings.NewReader("bytes"))
			}, http.StatusUnsupportedMediaType, "multipart/form-data"},
			{"NoToken", func() (*http.Response, map[string]any) {
				return apiUpload(t, a, "", room, nil, "a.txt", []byte("a"), false)
			}, http.StatusUnauthorized, "token"},
		} {
			resp, body := tc.send()
			if msg, _ := body["error"].(string); resp.StatusCode != tc.want || !strings.Contains(msg, tc.message) {
				t.Errorf("%s: %d %v, want %d saying %q", tc.name, resp.StatusCode, body, tc.want, tc.message)
			}
		}
		if n := listed(t, room); n != files {
			t.Errorf("refused uploads stored %d files", n-files)
		}
		if after := storedCount(t, room); after != before {
			t.Errorf("refused uploads posted %d messages", after-before)
		}
	})
}

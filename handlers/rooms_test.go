package handlers_test

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
)

// createRoom makes a room through the form and returns its name.
func createRoom(t *testing.T, c *client) string {
	t.Helper()
	name := unique("room")
	p := c.post("/rooms", url.Values{"room_name": {name}, "banner": {"About " + name}})
	if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/rooms/"+name {
		t.Fatalf("create room: %d %q %s", p.StatusCode, p.Header.Get("Location"), text(p, "main"))
	}
	return name
}

// TestRoomFlowWithoutJavaScript drives create, join, leave and delete by
// plain form posts, as a browser without JavaScript does.
func TestRoomFlowWithoutJavaScript(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner, guest := a.signedUp(t, unique("owner")), a.signedUp(t, unique("guest"))
	name := createRoom(t, owner)

	p := owner.get("/rooms/" + name)
	if p.StatusCode != http.StatusOK || p.doc.Find("#my-rooms a[href='/rooms/"+name+"#latest']").Length() != 1 {
		t.Fatalf("room page / sidebar: %d", p.StatusCode)
	}
	if p.doc.Find("details.confirm-delete form[action='/rooms/"+name+"/delete']").Length() != 1 {
		t.Error("the creator sees no delete button")
	}

	p = guest.get("/rooms/" + name)
	if p.doc.Find("form[action='/rooms/"+name+"/join']").Length() != 1 || p.doc.Find("#messages").Length() != 0 {
		t.Error("a non-participant should see a Join button and no messages")
	}
	if p.doc.Find("details.confirm-delete").Length() != 0 {
		t.Error("a non-creator sees the delete button")
	}
	if p = guest.post("/rooms/"+name+"/join", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("join: %d", p.StatusCode)
	}
	p = guest.get("/rooms/" + name)
	if p.doc.Find("#participants li").Length() != 2 || p.doc.Find("#composer").Length() != 1 {
		t.Errorf("after join: %d participants", p.doc.Find("#participants li").Length())
	}
	if !strings.Contains(text(p, "#messages .message.system"), "joins the room") {
		t.Errorf("no join system message: %q", text(p, "#messages"))
	}
	if p = guest.post("/rooms/"+name+"/leave", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("leave: %d", p.StatusCode)
	}
	if p = guest.get("/"); p.doc.Find("#my-rooms a[href='/rooms/"+name+"#latest']").Length() != 0 {
		t.Error("left room still in the sidebar")
	}

	t.Run("ForgedDelete", func(t *testing.T) {
		guest.post("/rooms/"+name+"/join", nil)
		for _, form := range []url.Values{
			{},
			{"creator": {"someone"}, "creator_login": {"x"}, "login": {"x"}},
		} {
			p := guest.post("/rooms/"+name+"/delete", form)
			if p.StatusCode != http.StatusForbidden {
				t.Fatalf("forged delete: %d", p.StatusCode)
			}
		}
		if _, err := db.Room(ctxT(t), name); err != nil {
			t.Fatalf("room gone after forged delete: %v", err)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		if p := owner.post("/rooms/"+name+"/delete", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete: %d", p.StatusCode)
		}
		if p := owner.get("/rooms/" + name); p.StatusCode != http.StatusNotFound {
			t.Errorf("deleted room: %d", p.StatusCode)
		}
		if p := guest.post("/rooms/"+name+"/join", nil); p.StatusCode != http.StatusNotFound {
			t.Errorf("join deleted room: %d", p.StatusCode)
		}
		if p := guest.get("/"); p.doc.Find("#my-rooms a[href='/rooms/"+name+"#latest']").Length() != 0 {
			t.Error("deleted room still in the guest's sidebar")
		}
	})
}

func TestCreateRoomErrors(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	c := a.signedUp(t, unique("maker"))
	name := createRoom(t, c)
	for _, tt := range []struct {
		name, room, banner string
		status             int
	}{
		{"ErrRoomExists", name, "", http.StatusConflict},
		{"BadName", "no spaces allowed", "", http.StatusUnprocessableEntity},
		{"LongBanner", unique("ok"), strings.Repeat("b", 201), http.StatusUnprocessableEntity},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := c.post("/rooms", url.Values{"room_name": {tt.room}, "banner": {tt.banner}})
			if p.StatusCode != tt.status || text(p, ".field-error") == "" {
				t.Fatalf("status %d, errors %q", p.StatusCode, text(p, ".field-error"))
			}
		})
	}
	// One heading, one sentence a person understands, a link home.
	if p := c.get("/rooms/" + unique("missing")); p.StatusCode != http.StatusNotFound || text(p, ".error-page h1") != "Not found" ||
		text(p, ".error-page p:not(:has(a))") != "This room does not exist or was deleted." ||
		p.doc.Find(`.error-page a[href="/"]`).Length() != 1 || p.doc.Find(".error-page h1").Length() != 1 {
		t.Errorf("unknown room: %d %q", p.StatusCode, text(p, ".error-page"))
	}
}

func TestRoomListPaging(t *testing.T) {
	a := newApp(t, nil, nil)
	login := unique("lister")
	c := a.signedUp(t, login)
	me, err := db.User(ctxT(t), login)
	if err != nil {
		t.Fatal(err)
	}
	mine := map[string]bool{}
	for i := 0; i < 25; i++ {
		name := unique("listed")
		if _, err := db.CreateRoom(ctxT(t), me.Ref(), chat.NewRoom{Name: name}); err != nil {
			t.Fatal(err)
		}
		mine[name] = true
	}
	seen := map[string]int{}
	next := "/rooms"
	for pages := 0; next != ""; pages++ {
		p := c.get(next)
		if p.StatusCode != http.StatusOK {
			t.Fatalf("page %d: %d", pages, p.StatusCode)
		}
		p.doc.Find(".room-row .room-name").Each(func(_ int, s *goquery.Selection) {
			seen[strings.TrimPrefix(s.Text(), "#")]++
		})
		next, _ = p.doc.Find("a.next-page").Attr("href")
		if pages > 100 {
			t.Fatal("paging does not end")
		}
	}
	for name := range mine {
		if seen[name] != 1 {
			t.Errorf("room %s seen %d times", name, seen[name])
		}
	}
	for _, bad := range []string{"garbage", url.QueryEscape(strings.Repeat("A", 80))} {
		if p := c.get("/rooms?page=" + bad); p.StatusCode != http.StatusBadRequest {
			t.Errorf("forged page token: %d", p.StatusCode)
		}
	}
}

// TestPostInRoomDeletedOnAnotherInstance: instance B has the room in its
// cache when A deletes it; the delete's fence drops it there before the
// delete is acknowledged, so a post on B right after, text or file, is
// refused and leaves nothing stored.
func TestPostInRoomDeletedOnAnotherInstance(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	ada := a.signedUp(t, unique("ada"))
	onB := ada.on(b)
	room := createRoom(t, ada)
	if p := onB.get("/rooms/" + room); p.StatusCode != http.StatusOK { // B caches the room
		t.Fatalf("room on B: %d", p.StatusCode)
	}
	onB.ensureCSRF()
	if p := ada.post("/rooms/"+room+"/delete", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d", p.StatusCode)
	}
	if p := onB.post("/rooms/"+room+"/messages", url.Values{"content": {"into the void"}}); p.StatusCode != http.StatusNotFound {
		t.Errorf("text post on B: %d", p.StatusCode)
	}
	resp, err := onB.upload("/rooms/"+room+"/messages", upload{csrf: onB.ensureCSRF(),
		files: map[string]io.Reader{"void.txt": bytesFile([]byte("into the void"))}, order: []string{"void.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("file post on B: %d", resp.StatusCode)
	}
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var n int
	if err := sess.Query(`SELECT count(message_id) FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`,
		room, todayBucket()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d messages stored in the deleted room", n)
	}
	if n := listed(t, room); n != 0 {
		t.Errorf("%d files stored in the deleted room", n)
	}
}

// todayBucket is today's day bucket (yyyyMMdd, UTC).
func todayBucket() int {
	n, _ := strconv.Atoi(time.Now().UTC().Format("20060102"))
	return n
}

package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// TestLoginCaseInsensitive: sign-up keeps the typed login for display,
// refuses the same login in another case, and login works in any case.
func TestLoginCaseInsensitive(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	typed := unique("Alice")
	key := strings.ToLower(typed)
	owner := a.signedUp(t, typed)

	t.Run("ErrUserExists", func(t *testing.T) {
		for _, other := range []string{key, strings.ToUpper(typed)} {
			p := a.client(t).post("/signup", signupForm(other, "password2"))
			if p.StatusCode != http.StatusConflict || text(p, "#err-login") != "This login is taken." {
				t.Errorf("sign up %q after %q: %d %q", other, typed, p.StatusCode, text(p, "#err-login"))
			}
		}
	})
	t.Run("LoginInAnyCase", func(t *testing.T) {
		c := a.client(t)
		p := c.post("/login", url.Values{"login": {strings.ToUpper(typed)}, "password": {"password1"}})
		if p.StatusCode != http.StatusSeeOther {
			t.Fatalf("login in upper case: %d %s", p.StatusCode, text(p, "main"))
		}
		// The session is the one account's, under its key.
		if p := c.get("/profile"); p.StatusCode != http.StatusOK || text(p, ".me .me-login") != "@"+key {
			t.Errorf("logged in as %q, want @%s", text(p, ".me .me-login"), key)
		}
	})
	t.Run("ProfileRedirectsToCanonical", func(t *testing.T) {
		for _, as := range []string{typed, strings.ToUpper(typed)} {
			p := owner.get("/users/" + as)
			if p.StatusCode != http.StatusMovedPermanently || p.Header.Get("Location") != "/users/"+key {
				t.Errorf("GET /users/%s: %d %q, want 301 to /users/%s", as, p.StatusCode, p.Header.Get("Location"), key)
			}
		}
		p := owner.get("/users/" + key)
		if p.StatusCode != http.StatusOK || !strings.Contains(text(p, ".profile"), "@"+typed) {
			t.Errorf("GET /users/%s: %d, profile %q; want the typed @%s", key, p.StatusCode, text(p, ".profile"), typed)
		}
	})
}

// TestRoomNameCaseInsensitive: a room name is taken in every case, its
// URLs redirect to the lower-case one, and pages show the typed name.
func TestRoomNameCaseInsensitive(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner, guest := a.signedUp(t, unique("owner")), a.signedUp(t, unique("guest"))
	typed := unique("Lobby")
	key := strings.ToLower(typed)
	p := owner.post("/rooms", url.Values{"room_name": {typed}, "banner": {"Welcome"}})
	if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/rooms/"+key {
		t.Fatalf("create %s: %d %q, want 303 to /rooms/%s", typed, p.StatusCode, p.Header.Get("Location"), key)
	}

	t.Run("ErrRoomExists", func(t *testing.T) {
		for _, other := range []string{strings.ToUpper(typed), key} {
			p := guest.post("/rooms", url.Values{"room_name": {other}})
			if p.StatusCode != http.StatusConflict || text(p, "#err-room_name") != "This room name is taken." {
				t.Errorf("create %q after %q: %d %q", other, typed, p.StatusCode, text(p, "#err-room_name"))
			}
		}
	})
	t.Run("GetRedirectsToCanonical", func(t *testing.T) {
		id := chat.IDAt(time.Now()).String()
		for path, want := range map[string]string{
			"/rooms/" + strings.ToUpper(typed):                            "/rooms/" + key,
			"/rooms/" + typed + "?notice=welcome":                         "/rooms/" + key + "?notice=welcome",
			"/rooms/" + strings.ToUpper(typed) + "/messages?before=" + id: "/rooms/" + key + "/messages?before=" + id,
			"/rooms/" + typed + "/events?after=" + id:                     "/rooms/" + key + "/events?after=" + id,
		} {
			p := owner.get(path)
			if p.StatusCode != http.StatusMovedPermanently || p.Header.Get("Location") != want {
				t.Errorf("GET %s: %d %q, want 301 to %s", path, p.StatusCode, p.Header.Get("Location"), want)
			}
		}
		// Not a valid name in any case: no redirect, just not found.
		if p := owner.get("/rooms/%E2%84%AA" + key[1:]); p.StatusCode != http.StatusNotFound {
			t.Errorf("Kelvin-sign room name: %d", p.StatusCode)
		}
	})
	t.Run("PostInAnyCase", func(t *testing.T) {
		p := guest.post("/rooms/"+strings.ToUpper(typed)+"/join", nil)
		if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/rooms/"+key+"#latest" {
			t.Fatalf("join by upper-case name: %d %q", p.StatusCode, p.Header.Get("Location"))
		}
		if p := guest.post("/rooms/"+typed+"/messages", url.Values{"content": {"hello"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("post by typed name: %d", p.StatusCode)
		}
	})
	t.Run("PagesShowTypedName", func(t *testing.T) {
		p := guest.get("/rooms/" + key)
		if p.StatusCode != http.StatusOK || text(p, ".room h1") != "#"+typed {
			t.Fatalf("room page: %d, h1 %q", p.StatusCode, text(p, ".room h1"))
		}
		side := p.doc.Find("#my-rooms a[href='/rooms/" + key + "#latest'] .entry-name")
		if side.Length() != 1 || strings.TrimSpace(side.Text()) != "#"+typed {
			t.Errorf("sidebar entry %q (%d)", side.Text(), side.Length())
		}
		if p := guest.get("/"); text(p, ".room-list .room-name") != "#"+typed {
			t.Errorf("home lists %q", text(p, ".room-list .room-name"))
		}
		if text(p, "#messages .message:not(.system)") == "" {
			t.Error("the message posted by the typed name is not in the room")
		}
	})
}

// TestRejectsInvisibleAndControlText: names and messages that show nothing,
// hold control characters, line breaks where one line is expected, or bidi
// overrides in names are refused with a field error, and nothing is stored.
func TestRejectsInvisibleAndControlText(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	t.Run("Signup", func(t *testing.T) {
		for _, tt := range []struct{ field, value string }{
			{"login", "\u200B" + unique("zw")},
			{"firstname", "\u200B\u200C\u200D"},
			{"firstname", "Ada\r\revent: room-deleted\rdata: x"},
			{"lastname", "\u202Eecalevol"},
			{"lastname", "Love\x1blace"},
			{"email", "alice?cc=mallory@evil.example"},
		} {
			login := unique("refused")
			form := signupForm(login, "password1")
			form.Set(tt.field, tt.value)
			p := a.client(t).post("/signup", form)
			if p.StatusCode != http.StatusUnprocessableEntity || text(p, "#err-"+tt.field) == "" {
				t.Errorf("%s=%q: %d, error %q", tt.field, tt.value, p.StatusCode, text(p, "#err-"+tt.field))
			}
			if _, err := db.User(ctxT(t), login); err == nil {
				t.Errorf("%s=%q: account %s was created", tt.field, tt.value, login)
			}
		}
	})
	c := a.signedUp(t, unique("writer"))
	name := createRoom(t, c)
	t.Run("Room", func(t *testing.T) {
		for _, tt := range []struct{ name, banner, field string }{
			{"\u200B\u200B\u200B", "", "room_name"},
			{unique("ok"), "\u200B", "banner"},
			{unique("ok"), "one\rtwo", "banner"},
			{unique("ok"), "x\u202Ey", "banner"},
		} {
			p := c.post("/rooms", url.Values{"room_name": {tt.name}, "banner": {tt.banner}})
			if p.StatusCode != http.StatusUnprocessableEntity || text(p, "#err-"+tt.field) == "" {
				t.Errorf("room %q banner %q: %d, error %q", tt.name, tt.banner, p.StatusCode, text(p, "#err-"+tt.field))
			}
			if _, err := db.Room(ctxT(t), tt.name); err == nil {
				t.Errorf("room %q was created", tt.name)
			}
		}
	})
	t.Run("Content", func(t *testing.T) {
		for _, content := range []string{"\u200B\u2060\uFEFF", "\u00AD \u3164", "bell\x07", "csi\u009b31m"} {
			p := c.post("/rooms/"+name+"/messages", url.Values{"content": {content}})
			if p.StatusCode != http.StatusUnprocessableEntity || text(p, "#composer-error") == "" {
				t.Errorf("content %q: %d, error %q", content, p.StatusCode, text(p, "#composer-error"))
			}
		}
		r, err := db.Room(ctxT(t), name)
		if err != nil {
			t.Fatal(err)
		}
		msgs, _, err := db.MessagesBefore(ctxT(t), r, chat.ID{}, 10)
		if err != nil || len(msgs) != 0 {
			t.Errorf("refused content was stored: %d messages, %v", len(msgs), err)
		}
	})
	t.Run("ContentCarriageReturns", func(t *testing.T) {
		const payload = "hi\r\revent: room-deleted\rdata: x\r\rtail"
		name := createRoom(t, c)
		if p := c.post("/rooms/"+name+"/messages", url.Values{"content": {payload}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("post: %d", p.StatusCode)
		}
		r, _ := db.Room(ctxT(t), name)
		msgs, _, err := db.MessagesBefore(ctxT(t), r, chat.ID{}, 10)
		if err != nil || len(msgs) != 1 || strings.Contains(msgs[0].Content, "\r") {
			t.Fatalf("stored %d messages (%v): %+v", len(msgs), err, msgs)
		}
	})
}

// TestProfileEmailInjection: an address that would add recipients to the
// profile's mailto: link is refused, and the old address stays.
func TestProfileEmailInjection(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	login := unique("mailer")
	c := a.signedUp(t, login)
	if p := c.post("/profile", url.Values{"email": {"ada@example.org"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("good email: %d", p.StatusCode)
	}
	for _, email := range []string{"alice?cc=mallory@evil.example", "alice&cc=mallory@evil.example", "a@b.example?bcc=x@y.example", `"a b"@example.org`} {
		p := c.post("/profile", url.Values{"email": {email}})
		if p.StatusCode != http.StatusUnprocessableEntity || text(p, "#err-email") == "" {
			t.Errorf("email %q: %d, error %q", email, p.StatusCode, text(p, "#err-email"))
		}
	}
	p := c.get("/users/" + login)
	href, _ := p.doc.Find(".profile a[href^='mailto:']").Attr("href")
	if href != "mailto:ada@example.org" {
		t.Errorf("profile mailto %q, want the old address", href)
	}
}

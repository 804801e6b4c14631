package handlers_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/web/limit"
)

// limited is an app option with small per-user limits that do not refill
// during a test.
func limited(l limit.Writes) appOption {
	return func(c *handlers.Config) { c.Limits = l }
}

func slow(burst int) limit.Rate { return limit.Rate{Burst: burst, Per: time.Hour} }

// wantTooMany checks a 429 that says when to come back.
func wantTooMany(t *testing.T, p page, what string) {
	t.Helper()
	if p.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%s: status %d, want 429", what, p.StatusCode)
	}
	if secs, err := strconv.Atoi(p.Header.Get("Retry-After")); err != nil || secs < 1 {
		t.Errorf("%s: Retry-After %q", what, p.Header.Get("Retry-After"))
	}
	if msg := text(p, ".error-page"); msg == "" {
		t.Errorf("%s: no readable message", what)
	}
}

func TestPerUserLimits(t *testing.T) {
	a := newApp(t, nil, nil, limited(limit.Writes{Messages: slow(3), Rooms: slow(2), Membership: slow(2)}))
	aliceLogin := unique("lima")
	alice := a.signedUp(t, aliceLogin)
	bob := a.signedUp(t, unique("limb"))

	t.Run("Rooms", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			if p := alice.post("/rooms", url.Values{"room_name": {unique("limroom")}}); p.StatusCode != http.StatusSeeOther {
				t.Fatalf("room %d: %d", i, p.StatusCode)
			}
		}
		name := unique("limroom")
		wantTooMany(t, alice.post("/rooms", url.Values{"room_name": {name}}), "third room")
		if _, err := db.Room(ctxT(t), name); err == nil {
			t.Fatal("the refused room was created")
		}
	})

	room := unique("limits")
	if p := bob.post("/rooms", url.Values{"room_name": {room}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("bob's room: %d", p.StatusCode)
	}

	t.Run("Messages", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			if p := bob.post("/rooms/"+room+"/messages", url.Values{"content": {"m" + strconv.Itoa(i)}}); p.StatusCode != http.StatusSeeOther {
				t.Fatalf("message %d: %d", i, p.StatusCode)
			}
		}
		wantTooMany(t, bob.post("/rooms/"+room+"/messages", url.Values{"content": {"one too many"}}), "fourth message")
		r, err := db.Room(ctxT(t), room)
		if err != nil {
			t.Fatal(err)
		}
		msgs, _, err := db.MessagesBefore(ctxT(t), r, chat.ID{}, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 3 {
			t.Fatalf("%d messages stored, want 3", len(msgs))
		}
	})

	t.Run("Membership", func(t *testing.T) {
		// Alice's limit is hers: Bob's posting did not use it up.
		for i, action := range []string{"join", "leave"} {
			if p := alice.post("/rooms/"+room+"/"+action, nil); p.StatusCode != http.StatusSeeOther {
				t.Fatalf("%s (%d): %d", action, i, p.StatusCode)
			}
		}
		wantTooMany(t, alice.post("/rooms/"+room+"/join", nil), "third join/leave")
		r, err := db.RoomFor(ctxT(t), room, aliceLogin)
		if err != nil {
			t.Fatal(err)
		}
		if r.IsMember() {
			t.Fatal("the refused join was applied")
		}
	})
}

func TestPasswordChangeRateLimit(t *testing.T) {
	// Three a minute would refill while a loaded machine hashes the guesses.
	a := newApp(t, nil, nil, limited(limit.Writes{Passwords: slow(3)}))
	login := unique("pwlim")
	c := a.signedUp(t, login)
	guess := func(old string) page {
		return c.post("/profile/password", url.Values{"old_password": {old}, "password": {"newpassword1"}, "password_confirm": {"newpassword1"}})
	}
	for i := 0; i < 3; i++ {
		if p := guess("wrong-guess" + strconv.Itoa(i)); p.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("guess %d: %d", i, p.StatusCode)
		}
	}
	// Even the right password is refused while limited, and changes nothing.
	wantTooMany(t, guess("password1"), "fourth guess")
	if _, err := db.Authenticate(ctxT(t), login, "password1"); err != nil {
		t.Fatalf("the password changed while limited: %v", err)
	}
}

// TestPasswordChangeEndsOtherSessions: a new password logs out every other
// session (remember-me ones too) and re-issues the current one.
func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	login := unique("pwend")
	current := a.signedUp(t, login)
	other := a.client(t)
	if p := other.post("/login", url.Values{"login": {login}, "password": {"password1"}, "remember_me": {"1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("second login: %d", p.StatusCode)
	}
	before := sessionID(t, current)
	stolen := a.client(t)
	setCookie(stolen, "killrchat_session", current.cookie("killrchat_session"))

	p := current.post("/profile/password", url.Values{"old_password": {"password1"}, "password": {"newpassword1"}, "password_confirm": {"newpassword1"}})
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("change password: %d %s", p.StatusCode, text(p, "main"))
	}
	for name, c := range map[string]*client{"other session": other, "old id of this session": stolen} {
		if p := c.get("/"); p.StatusCode != http.StatusSeeOther {
			t.Errorf("%s still logged in: %d", name, p.StatusCode)
		}
	}
	after := sessionID(t, current)
	if after == "" || after == before {
		t.Fatal("the current session was not re-issued")
	}
	if p := current.get("/"); p.StatusCode != http.StatusOK {
		t.Fatalf("the current session ended: %d", p.StatusCode)
	}
	ids, err := db.Sessions(ctxT(t), login)
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.srv.SessionIDFromCookie(after)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != id {
		t.Fatalf("sessions of %s: %v, want only %s", login, ids, id)
	}
}

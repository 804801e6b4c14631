package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

func signUp(login string) chat.SignUp {
	return chat.SignUp{Login: login, Password: "password1", PasswordConfirm: "password1", Firstname: "Ada", Lastname: "Lovelace"}
}

// TestLoginCaseInsensitive: logins are keyed by their lower-case form and
// keep the typed form for display.
func TestLoginCaseInsensitive(t *testing.T) {
	ctx := context.Background()
	typed := unique("Alice") // "Alice12"
	key := strings.ToLower(typed)
	u, err := db.CreateUser(ctx, signUp(typed))
	if err != nil {
		t.Fatal(err)
	}
	if u.Login != key || u.DisplayLogin != typed || u.Ref().Login != key {
		t.Fatalf("created login %q display %q ref %q; want %q, %q", u.Login, u.DisplayLogin, u.Ref().Login, key, typed)
	}
	t.Run("ErrUserExists", func(t *testing.T) {
		for _, other := range []string{key, strings.ToUpper(typed), typed} {
			if _, err := db.CreateUser(ctx, signUp(other)); !errors.Is(err, chat.ErrUserExists) {
				t.Errorf("sign up %q after %q: %v, want ErrUserExists", other, typed, err)
			}
		}
	})
	t.Run("LookUpInAnyCase", func(t *testing.T) {
		for _, as := range []string{key, strings.ToUpper(typed), typed} {
			got, err := db.User(ctx, as)
			if err != nil || got.Login != key || got.DisplayLogin != typed {
				t.Errorf("User(%q) = %q/%q, %v; want %q/%q", as, got.Login, got.DisplayLogin, err, key, typed)
			}
		}
	})
	t.Run("AuthenticateInAnyCase", func(t *testing.T) {
		got, err := db.Authenticate(ctx, " "+strings.ToUpper(typed)+" ", "password1")
		if err != nil || got.Login != key {
			t.Fatalf("Authenticate(upper) = %q, %v; want %q", got.Login, err, key)
		}
		if _, err := db.Authenticate(ctx, strings.ToUpper(typed), "wrong-password"); !errors.Is(err, chat.ErrBadCredentials) {
			t.Errorf("wrong password: %v", err)
		}
	})
	t.Run("KelvinSignIsNotK", func(t *testing.T) {
		// "\u212A" lower-cases to "k" in Unicode; it must not reach "kiwi…".
		k := unique("kiwi")
		newUser(t, k)
		if _, err := db.User(ctx, "\u212A"+k[1:]); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("Kelvin-sign login found %q: %v", k, err)
		}
	})
}

// TestCreateUserCaseRace: "Alice" and "alice" (and other cases) signing up
// at once — exactly one account results, owned by the one winner.
func TestCreateUserCaseRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := 0; round < 5; round++ {
		base := unique("Racer")
		variants := []string{base, strings.ToLower(base), strings.ToUpper(base), "r" + strings.ToUpper(base[1:])}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
		)
		for _, v := range variants {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f := signUp(v)
				f.Lastname = v // tells the winner's row apart
				_, err := db.CreateUser(ctx, f)
				switch {
				case err == nil:
					mu.Lock()
					winners = append(winners, v)
					mu.Unlock()
				case !errors.Is(err, chat.ErrUserExists):
					t.Errorf("sign up %q: %v", v, err)
				}
			}()
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d sign-ups applied (%v), want exactly 1", round, len(winners), winners)
		}
		u, err := db.User(ctx, base)
		if err != nil || u.Lastname != winners[0] {
			t.Fatalf("round %d: row by %q (%v), winner %q", round, u.Lastname, err, winners[0])
		}
	}
}

// TestRoomNameCaseInsensitive: rooms are keyed by their lower-case name
// everywhere (row, lists, messages) and show the typed form.
func TestRoomNameCaseInsensitive(t *testing.T) {
	ctx := context.Background()
	creator, guest := newUser(t, unique("owner")), newUser(t, unique("guest"))
	typed := unique("Lobby")
	key := strings.ToLower(typed)
	r, err := db.CreateRoom(ctx, creator.Ref(), chat.NewRoom{Name: typed})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != key || r.DisplayName != typed {
		t.Fatalf("created %q/%q, want %q/%q", r.Name, r.DisplayName, key, typed)
	}
	t.Run("ErrRoomExists", func(t *testing.T) {
		for _, other := range []string{strings.ToUpper(typed), key, typed} {
			if _, err := db.CreateRoom(ctx, guest.Ref(), chat.NewRoom{Name: other}); !errors.Is(err, chat.ErrRoomExists) {
				t.Errorf("create %q after %q: %v, want ErrRoomExists", other, typed, err)
			}
		}
	})
	t.Run("ReadInAnyCase", func(t *testing.T) {
		got, err := db.RoomWithAll(ctx, strings.ToUpper(typed))
		if err != nil || got.Name != key || got.DisplayName != typed || got.CreatorLogin != creator.Login {
			t.Fatalf("Room(upper) = %+v, %v", got, err)
		}
	})
	t.Run("JoinPostLeaveInAnyCase", func(t *testing.T) {
		r, err := db.JoinRoom(ctx, guest.Ref(), strings.ToUpper(typed))
		if err != nil || !r.IsMember() {
			t.Fatalf("join by upper-case name: %v", err)
		}
		u, _ := db.User(ctx, guest.Login)
		if len(u.ChatRooms) != 1 || u.ChatRooms[0] != key || u.RoomTitle(key) != typed {
			t.Fatalf("guest's rooms %v titles %v; want [%s] titled %s", u.ChatRooms, u.RoomTitles, key, typed)
		}
		if _, err := db.PostMessage(ctx, r, guest.Ref(), "hello"); err != nil {
			t.Fatal(err)
		}
		msgs, _, err := db.MessagesBefore(ctx, r, chat.ID{}, 10)
		if err != nil || len(msgs) != 1 || msgs[0].Room != key {
			t.Fatalf("messages under the key: %v, %v", msgs, err)
		}
		if err := db.LeaveRoom(ctx, guest.Ref(), typed); err != nil {
			t.Fatal(err)
		}
		u, _ = db.User(ctx, guest.Login)
		if len(u.ChatRooms) != 0 || len(u.RoomTitles) != 0 {
			t.Errorf("after leave: rooms %v titles %v", u.ChatRooms, u.RoomTitles)
		}
	})
	t.Run("DeleteInAnyCase", func(t *testing.T) {
		if _, err := db.DeleteRoom(ctx, creator.Login, strings.ToUpper(typed)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.RoomWithAll(ctx, key); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
		u, _ := db.User(ctx, creator.Login)
		if len(u.ChatRooms) != 0 || len(u.RoomTitles) != 0 {
			t.Errorf("creator's list after delete: rooms %v titles %v", u.ChatRooms, u.RoomTitles)
		}
	})
}

// TestCreateRoomCaseRace: "Lobby", "lobby" and "LOBBY" created at once by
// different users — exactly one room results.
func TestCreateRoomCaseRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := unique("Stage")
	variants := []string{base, strings.ToLower(base), strings.ToUpper(base)}
	users := make([]chat.User, len(variants))
	for i := range users {
		users[i] = newUser(t, unique("maker"))
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []int
	)
	for i, v := range variants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := db.CreateRoom(ctx, users[i].Ref(), chat.NewRoom{Name: v, Banner: v})
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, i)
				mu.Unlock()
			case !errors.Is(err, chat.ErrRoomExists):
				t.Errorf("create %q: %v", v, err)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d creates applied (%v), want exactly 1", len(winners), winners)
	}
	r, err := db.RoomWithAll(ctx, base)
	if w := winners[0]; err != nil || r.Banner != variants[w] || r.CreatorLogin != users[w].Login {
		t.Fatalf("room %q by %q (%v); winner %q by %q", r.Banner, r.CreatorLogin, err, variants[w], users[w].Login)
	}
}

// TestStoredTextIsNormalised: no stored user text holds a "\r" (a browser's
// EventSource ends a line there), one-line fields refuse line breaks, and
// text that shows nothing or holds control characters is refused with
// nothing stored.
func TestStoredTextIsNormalised(t *testing.T) {
	ctx := context.Background()
	const payload = "hi\r\revent: room-deleted\rdata: x\r\rtail"
	t.Run("MessageContent", func(t *testing.T) {
		u := newUser(t, unique("poster"))
		r, err := db.CreateRoom(ctx, u.Ref(), chat.NewRoom{Name: unique("crlf")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.PostMessage(ctx, r, u.Ref(), payload); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"\u200B\u200D\uFEFF", " \u2060 ", "ring\x07bell", "esc\x1b[2J", "n\u0085el"} {
			if _, err := db.PostMessage(ctx, r, u.Ref(), bad); !errors.Is(err, chat.ErrInvalid) {
				t.Errorf("post %q: %v, want a ValidationError", bad, err)
			}
		}
		msgs, _, err := db.MessagesBefore(ctx, r, chat.ID{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 || msgs[0].Content != "hi\n\nevent: room-deleted\ndata: x\n\ntail" {
			t.Fatalf("stored %+v", msgs)
		}
	})
	t.Run("Names", func(t *testing.T) {
		for _, f := range []func(*chat.SignUp){
			func(f *chat.SignUp) { f.Firstname = "Ada\r\revent: room-deleted" },
			func(f *chat.SignUp) { f.Lastname = "x\ny" },
			func(f *chat.SignUp) { f.Lastname = "\u200B\u200C" },
			func(f *chat.SignUp) { f.Firstname = "\u202Eecila" },
		} {
			login := unique("named")
			form := signUp(login)
			f(&form)
			var v chat.ValidationError
			if _, err := db.CreateUser(ctx, form); !errors.As(err, &v) {
				t.Errorf("sign up with %q %q: %v, want a ValidationError", form.Firstname, form.Lastname, err)
			}
			if _, err := db.User(ctx, login); !errors.Is(err, chat.ErrNotFound) {
				t.Errorf("refused sign-up %s left a row: %v", login, err)
			}
		}
		// A trailing CRLF, as a pasted name may have, is only trimmed.
		form := signUp(unique("pasted"))
		form.Firstname, form.Lastname = "Ada\r\n", "\r\nLovelace"
		u, err := db.CreateUser(ctx, form)
		if err != nil || u.Name() != "Ada Lovelace" {
			t.Fatalf("pasted names: %q, %v", u.Name(), err)
		}
	})
	t.Run("Bio", func(t *testing.T) {
		form := signUp(unique("bio"))
		form.Bio = "line one\rline two\r\nline three"
		u, err := db.CreateUser(ctx, form)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := db.User(ctx, u.Login); got.Bio != "line one\nline two\nline three" {
			t.Errorf("stored bio %q", got.Bio)
		}
		if err := db.UpdateProfile(ctx, u.Login, "", "new\r\rbio"); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.User(ctx, u.Login); got.Bio != "new\n\nbio" {
			t.Errorf("updated bio %q", got.Bio)
		}
	})
	t.Run("Banner", func(t *testing.T) {
		u := newUser(t, unique("banner"))
		for _, banner := range []string{"a\rb", "a\r\nb", "\u200B", "x\u202Ey"} {
			name := unique("banner")
			if _, err := db.CreateRoom(ctx, u.Ref(), chat.NewRoom{Name: name, Banner: banner}); !errors.Is(err, chat.ErrInvalid) {
				t.Errorf("banner %q: %v, want a ValidationError", banner, err)
			}
			if _, err := db.RoomWithAll(ctx, name); !errors.Is(err, chat.ErrNotFound) {
				t.Errorf("refused room %s exists: %v", name, err)
			}
		}
	})
}

// TestUpdateProfileEmail: an address that would add recipients or headers
// to the profile's mailto: link is refused and nothing changes.
func TestUpdateProfileEmail(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, unique("mailer"))
	if err := db.UpdateProfile(ctx, u.Login, "ada@example.com", "bio"); err != nil {
		t.Fatal(err)
	}
	for _, email := range []string{
		"alice?cc=mallory@evil.example", "alice&cc=mallory@evil.example",
		`"a b"@example.com`, "a@example.com?subject=x", "Ada <ada@example.com>",
	} {
		var v chat.ValidationError
		if err := db.UpdateProfile(ctx, u.Login, email, "changed"); !errors.As(err, &v) || v["email"] == "" {
			t.Errorf("email %q: %v, want an email field error", email, err)
		}
	}
	got, _ := db.User(ctx, u.Login)
	if got.Email != "ada@example.com" || got.Bio != "bio" {
		t.Errorf("after refused updates: %q %q", got.Email, got.Bio)
	}
	form := signUp(unique("mailer"))
	form.Email = "alice?cc=mallory@evil.example"
	if _, err := db.CreateUser(ctx, form); !errors.Is(err, chat.ErrInvalid) {
		t.Errorf("sign up with that email: %v", err)
	}
}

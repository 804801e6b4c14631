package handlers_test

// Onboarding over real HTTP (issue 39, day one, item 3): the rooms every
// newcomer joins, and the people directory.

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
)

// TestOnboarding runs alone (no t.Parallel): it changes the site's
// default rooms, which every sign-up of the package reads.
func TestOnboarding(t *testing.T) {
	a := newApp(t, nil, nil)
	ctx := ctxT(t)
	t.Cleanup(func() { _ = db.SetDefaultRooms(ctx, []string{}) })
	inGeneral := func(c *client) bool {
		return c.get("/").doc.Find("#my-rooms a[href='/rooms/general#latest']").Length() == 1
	}

	t.Run("General", func(t *testing.T) {
		if err := db.ForgetDefaultRooms(ctx); err != nil {
			t.Fatal(err)
		}
		first, second := a.signedUp(t, unique("first")), a.signedUp(t, unique("second"))
		if !inGeneral(first) || !inGeneral(second) {
			t.Fatalf("on a site that chose no default rooms, newcomers are in #general: %v, %v", inGeneral(first), inGeneral(second))
		}
		r, err := db.Room(ctx, "general")
		if err != nil {
			t.Fatal(err)
		}
		if r.Closed() {
			t.Error("#general is closed")
		}
	})

	t.Run("Chosen", func(t *testing.T) {
		owner := a.signedUp(t, unique("owner"))
		room := createRoom(t, owner)
		if err := a.srv.App().SetDefaultRooms(ctx, []string{"#" + strings.ToUpper(room), room, " "}); err != nil {
			t.Fatal(err)
		}
		got, err := a.srv.App().DefaultRooms(ctx)
		if err != nil || len(got) != 1 || got[0] != room {
			t.Fatalf("default rooms %v (%v), want [%s] once", got, err, room)
		}
		c := a.signedUp(t, unique("newbie"))
		home := c.get("/")
		if home.doc.Find("#my-rooms a[href='/rooms/"+room+"#latest']").Length() != 1 {
			t.Errorf("a newcomer is not in the default room %s: %q", room, text(home, "#my-rooms"))
		}
		if inGeneral(c) {
			t.Error("a newcomer joined #general, which is not a default room any more")
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		err := a.srv.App().SetDefaultRooms(ctx, []string{"ok-room", "not a name!"})
		var ve chat.ValidationError
		if !errors.As(err, &ve) || ve["rooms"] == "" {
			t.Fatalf("a malformed room name: %v, want a validation error of rooms", err)
		}
	})

	// An administrator chooses them on the administration page, without
	// JavaScript; a bad name is refused with the field kept, and changes
	// nothing.
	t.Run("OnTheAdministrationPage", func(t *testing.T) {
		admin, owner := a.signedUp(t, unique("admin")), a.signedUp(t, unique("owner"))
		makeAdmin(t, db.Store, admin)
		first, second := createRoom(t, owner), createRoom(t, owner)
		p := admin.post("/admin/default-rooms", url.Values{"rooms": {"#" + strings.ToUpper(first) + ", " + second}})
		if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/admin?done=default-rooms#default-rooms" {
			t.Fatalf("save the default rooms: %d %q", p.StatusCode, p.Header.Get("Location"))
		}
		p = admin.get(p.Header.Get("Location"))
		if got := p.doc.Find("#rooms").AttrOr("value", ""); got != first+", "+second {
			t.Errorf("the administration page shows the default rooms as %q", got)
		}
		auditHas(t, admin, admin.login, chat.AuditDefaultRooms, "")
		home := a.signedUp(t, unique("newbie")).get("/")
		for _, room := range []string{first, second} {
			if home.doc.Find("#my-rooms a[href='/rooms/"+room+"#latest']").Length() != 1 {
				t.Errorf("a newcomer is not in the default room %s: %q", room, text(home, "#my-rooms"))
			}
		}

		p = admin.post("/admin/default-rooms", url.Values{"rooms": {first + ", bad!name"}})
		if p.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text(p, "#err-rooms"), `"bad!name" is not a room name`) ||
			p.doc.Find("#rooms[aria-invalid=true]").AttrOr("value", "") != first+", bad!name" {
			t.Errorf("a bad name: %d, error %q, field %q", p.StatusCode, text(p, "#err-rooms"), p.doc.Find("#rooms").AttrOr("value", ""))
		}
		if got, err := a.srv.App().DefaultRooms(ctx); err != nil || strings.Join(got, " ") != first+" "+second {
			t.Errorf("after a refused change the default rooms are %v (%v)", got, err)
		}
		if p := owner.post("/admin/default-rooms", url.Values{"rooms": {first}}); p.StatusCode != http.StatusNotFound {
			t.Errorf("someone who is not an administrator sets the default rooms: %d", p.StatusCode)
		}
	})

	t.Run("None", func(t *testing.T) {
		if err := a.srv.App().SetDefaultRooms(ctx, nil); err != nil {
			t.Fatal(err)
		}
		c := a.signedUp(t, unique("loner"))
		if n := c.get("/").doc.Find("#my-rooms li").Length(); n != 0 {
			t.Errorf("with no default rooms a newcomer is in %d rooms", n)
		}
	})
}

func TestPeopleDirectory(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ctx := ctxT(t)
	viewer := a.signedUp(t, unique("viewer"))
	// 35 people who share a surname no one else has, listed as a sign-up
	// lists them.
	surname := fmt.Sprintf("Zoë%d", seq.Add(1))
	for i := 0; i < 35; i++ {
		if err := db.RecordPerson(ctx, chat.UserRef{Login: unique("zp"), Firstname: "Émilie", Lastname: surname}); err != nil {
			t.Fatal(err)
		}
	}
	// A search without its accent finds them, a page at a time.
	q := strings.ToLower(strings.ReplaceAll(surname, "ë", "e"))
	seen := map[string]bool{}
	next := "/people?q=" + url.QueryEscape(q)
	pages := 0
	for next != "" && pages < 5 {
		p := viewer.get(next)
		if p.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", next, p.StatusCode)
		}
		pages++
		p.doc.Find("#people li.person").Each(func(_ int, s *goquery.Selection) {
			login := s.AttrOr("data-login", "")
			if seen[login] {
				t.Errorf("%s listed twice", login)
			}
			seen[login] = true
			if href := s.Find("a.message-person").AttrOr("href", ""); !strings.HasPrefix(href, "/dm/") || !strings.Contains(href, login) {
				t.Errorf("the Message link of %s is %q", login, href)
			}
			if s.Find(".presence[data-online]").Length() != 1 {
				t.Errorf("%s shows no presence", login)
			}
		})
		next = p.doc.Find("#people a.next-page").AttrOr("href", "")
	}
	if len(seen) != 35 || pages != 2 {
		t.Errorf("the search found %d people on %d pages, want 35 on 2", len(seen), pages)
	}

	// The viewer finds themself by login, with no Message link.
	me := loginOf(t, viewer)
	p := viewer.get("/people?q=" + me)
	row := p.doc.Find("#people li.person[data-login='" + me + "']")
	if row.Length() != 1 || row.Find("a.message-person").Length() != 0 {
		t.Errorf("searching one's own login: %d rows, %d Message links", row.Length(), row.Find("a.message-person").Length())
	}
	// The Message link opens a DM page.
	other := a.signedUp(t, unique("pal"))
	p = viewer.get("/people?q=" + loginOf(t, other))
	href := p.doc.Find("#people a.message-person").AttrOr("href", "")
	if dm := viewer.get(href); dm.StatusCode != http.StatusOK || dm.doc.Find("#composer").Length() != 1 {
		t.Errorf("Message opens %q: %d", href, dm.StatusCode)
	}
	// Everyone, without a search.
	if p := viewer.get("/people"); p.StatusCode != http.StatusOK || p.doc.Find("#people li.person").Length() == 0 {
		t.Errorf("GET /people: %d, %d people", p.StatusCode, p.doc.Find("#people li.person").Length())
	}

	t.Run("BadCursor", func(t *testing.T) {
		if p := viewer.get("/people?q=a&after=forged"); p.StatusCode != http.StatusBadRequest {
			t.Errorf("a forged cursor: %d, want 400", p.StatusCode)
		}
	})
	t.Run("LoggedOut", func(t *testing.T) {
		if p := a.client(t).get("/people"); p.StatusCode != http.StatusSeeOther && p.StatusCode != http.StatusFound && p.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /people logged out: %d", p.StatusCode)
		}
	})
}

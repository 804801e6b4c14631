package handlers_test

import (
	"github.com/PuerkitoBio/goquery"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
)

// closedRoomBy makes a closed room through the form and adds the others
// through the members page; it returns the room's name.
func closedRoomBy(t *testing.T, owner *client, others ...*client) string {
	t.Helper()
	name := unique("closed")
	p := owner.post("/rooms", url.Values{"room_name": {name}, "kind": {"closed"}})
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("create closed room: %d %s", p.StatusCode, text(p, "main"))
	}
	for _, o := range others {
		addMember(t, owner, name, o.login, http.StatusSeeOther)
	}
	return name
}

func addMember(t *testing.T, c *client, room, login string, want int) {
	t.Helper()
	if p := c.post("/rooms/"+room+"/members", url.Values{"login": {login}}); p.StatusCode != want {
		t.Fatalf("add %s to %s: %d, want %d: %s", login, room, p.StatusCode, want, text(p, "main"))
	}
}

func participants(t *testing.T, room string) map[string]chat.UserRef {
	t.Helper()
	r, err := db.Store.Room(ctxT(t), room)
	if err != nil {
		t.Fatal(err)
	}
	people, err := db.Store.RoomMembers(ctxT(t), r, "", 10_000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]chat.UserRef{}
	for _, p := range people {
		out[p.Login] = p
	}
	return out
}

// TestClosedRoomIsNotThereForOutsiders: every route of a closed room
// answers 404 to someone who is not in it, and the room is missing from
// All rooms and from their mentions once they are out.
func TestClosedRoomIsNotThereForOutsiders(t *testing.T) {
	t.Parallel()
	// One page holds every room of the test keyspace, so "missing from All
	// rooms" is not "on another page".
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.RoomsPerPage = 100_000 })
	owner, member, outsider := a.signedUp(t, unique("owner")), a.signedUp(t, unique("member")), a.signedUp(t, unique("out"))
	room := closedRoomBy(t, owner, member)
	postMessage(t, owner, room, "hello @"+member.login)
	file := postFile(t, owner, room, "notes.txt", bytesFile([]byte("secret notes")))
	// The member is removed: from now on they are an outsider too.
	if p := owner.post("/rooms/"+room+"/members/"+member.login+"/remove", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove: %d %s", p.StatusCode, text(p, "main"))
	}
	for _, c := range []*client{outsider, member} {
		for _, path := range []string{"/rooms/" + room, "/rooms/" + room + "/messages?before=" + chat.IDAt(time.Now()).String(),
			"/rooms/" + room + "/members", "/rooms/" + room + "/members?q=o", "/rooms/" + room + "/members/suggestions?login=o", file} {
			if p := c.get(path); p.StatusCode != http.StatusNotFound {
				t.Errorf("%s: GET %s: %d, want 404", c.login, path, p.StatusCode)
			}
		}
		if s := c.subscribe(t, room, ""); s.status != http.StatusNotFound {
			t.Errorf("%s: stream: %d, want 404", c.login, s.status)
		}
		for _, post := range []struct {
			path string
			form url.Values
		}{
			{"/rooms/" + room + "/messages", url.Values{"content": {"let me in"}}},
			{"/rooms/" + room + "/join", nil},
			{"/rooms/" + room + "/leave", nil},
			{"/rooms/" + room + "/delete", nil},
			{"/rooms/" + room + "/read", url.Values{"id": {chat.IDAt(time.Now()).String()}}},
			{"/rooms/" + room + "/kind", url.Values{"kind": {"open"}}},
			{"/rooms/" + room + "/members", url.Values{"login": {c.login}}},
			{"/rooms/" + room + "/members/" + owner.login + "/admin", nil},
			{"/rooms/" + room + "/members/" + owner.login + "/remove", nil},
			{"/rooms/" + room + "/invites", nil},
		} {
			if p := c.post(post.path, post.form); p.StatusCode != http.StatusNotFound {
				t.Errorf("%s: POST %s: %d, want 404", c.login, post.path, p.StatusCode)
			}
		}
		if p := c.get("/rooms"); p.doc.Find("#room-"+room).Length() != 0 {
			t.Errorf("%s: All rooms lists the closed room", c.login)
		}
	}
	if p := member.get("/mentions"); strings.Contains(p.body, "hello @"+member.login) {
		t.Error("a removed member still sees a mention in the closed room")
	}
	if got := participants(t, room); len(got) != 1 {
		t.Errorf("participants after the outsiders tried: %v", got)
	}
	if p := owner.get("/rooms"); p.doc.Find("#room-"+room).Length() != 1 {
		t.Error("All rooms misses the closed room for its member")
	}
	if p := owner.get("/rooms/" + room); p.StatusCode != http.StatusOK || p.doc.Find(".room-kind").Length() != 1 {
		t.Errorf("the owner's page: %d", p.StatusCode)
	}
}

// TestMembersAdminActions: adding, promoting, removing and changing the
// kind, each refused to a non-admin with nothing changed.
func TestMembersAdminActions(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner, bob, carol, dave := a.signedUp(t, unique("owner")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("carol")), a.signedUp(t, unique("dave"))

	t.Run("OpenRoomAnyMemberAdds", func(t *testing.T) {
		room := roomWith(t, owner, bob)
		addMember(t, dave, room, carol.login, http.StatusForbidden)
		addMember(t, bob, room, carol.login, http.StatusSeeOther)
		if p := carol.get("/"); p.doc.Find("#my-rooms a[href='/rooms/"+room+"#latest']").Length() != 1 {
			t.Error("the added person's sidebar misses the room")
		}
		if p := carol.get("/rooms/" + room); !strings.Contains(text(p, "#messages .message.system"), "added") {
			t.Errorf("no system message: %q", text(p, "#messages"))
		}
		addMember(t, bob, room, "nosuchperson", http.StatusUnprocessableEntity)
	})

	room := closedRoomBy(t, owner, bob)
	t.Run("NonAdminRefused", func(t *testing.T) {
		addMember(t, bob, room, carol.login, http.StatusForbidden)
		for _, path := range []string{"/members/" + owner.login + "/remove", "/members/" + bob.login + "/admin", "/kind", "/invites"} {
			if p := bob.post("/rooms/"+room+path, url.Values{"kind": {"open"}}); p.StatusCode != http.StatusForbidden {
				t.Errorf("POST %s by a member: %d, want 403", path, p.StatusCode)
			}
		}
		r, err := db.Store.RoomFor(ctxT(t), room, bob.login)
		if err != nil || r.Members != 2 || !r.IsMember() || r.IsAdmin() || !r.Closed() {
			t.Fatalf("changed by a non-admin: %+v %v", r, err)
		}
		if p := bob.get("/rooms/" + room + "/members"); p.StatusCode != http.StatusOK || p.doc.Find("form.add-member").Length() != 0 ||
			p.doc.Find("#member-list li").Length() != 2 {
			t.Errorf("members page for a member: %d", p.StatusCode)
		}
	})
	t.Run("Promote", func(t *testing.T) {
		if p := owner.post("/rooms/"+room+"/members/"+bob.login+"/admin", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("promote: %d", p.StatusCode)
		}
		addMember(t, bob, room, carol.login, http.StatusSeeOther)
		p := bob.get("/rooms/" + room + "/members")
		if p.doc.Find("form.add-member").Length() != 1 || p.doc.Find("form[action='/rooms/"+room+"/members/"+carol.login+"/remove']").Length() != 1 {
			t.Error("an admin's members page has no add form or remove buttons")
		}
	})
	t.Run("Remove", func(t *testing.T) {
		if p := bob.post("/rooms/"+room+"/members/"+owner.login+"/remove", nil); p.StatusCode != http.StatusForbidden {
			t.Errorf("removing the creator: %d, want 403", p.StatusCode)
		}
		if p := bob.post("/rooms/"+room+"/members/"+carol.login+"/remove", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("remove: %d", p.StatusCode)
		}
		if p := carol.get("/rooms/" + room); p.StatusCode != http.StatusNotFound {
			t.Errorf("a removed member's page: %d, want 404", p.StatusCode)
		}
		if p := carol.get("/"); p.doc.Find("#my-rooms a[href='/rooms/"+room+"#latest']").Length() != 0 {
			t.Error("a removed member's sidebar still lists the room")
		}
	})
	t.Run("Kind", func(t *testing.T) {
		if p := owner.post("/rooms/"+room+"/kind", url.Values{"kind": {"secret"}}); p.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("bad kind: %d", p.StatusCode)
		}
		if p := owner.post("/rooms/"+room+"/kind", url.Values{"kind": {"open"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("open: %d", p.StatusCode)
		}
		if p := dave.get("/rooms/" + room); p.StatusCode != http.StatusOK {
			t.Errorf("an opened room for an outsider: %d", p.StatusCode)
		}
	})
	t.Run("CreatorLeaves", func(t *testing.T) {
		other := closedRoomBy(t, owner, dave)
		if p := owner.post("/rooms/"+other+"/leave", nil); p.StatusCode != http.StatusConflict {
			t.Errorf("the creator leaves with no admin: %d, want 409", p.StatusCode)
		}
		if p := owner.post("/rooms/"+other+"/members/"+dave.login+"/admin", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatal(p.StatusCode)
		}
		if p := owner.post("/rooms/"+other+"/leave", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("leave: %d", p.StatusCode)
		}
		if r, err := db.Store.Room(ctxT(t), other); err != nil || r.CreatorLogin != dave.login {
			t.Errorf("creator after the hand-over: %q %v", r.CreatorLogin, err)
		}
	})
}

// inviteLink makes a link through the members page and returns its path.
func inviteLink(t *testing.T, c *client, room string, form url.Values) string {
	t.Helper()
	p := c.post("/rooms/"+room+"/invites", form)
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("create invite: %d %s", p.StatusCode, text(p, "main"))
	}
	page := c.get(p.Header.Get("Location"))
	link, ok := page.doc.Find("#new-link").Attr("href")
	if !ok || !strings.HasPrefix(link, "/invites/") || len(link) < len("/invites/")+43 {
		t.Fatalf("no new link on the members page: %q", link)
	}
	return link
}

func TestInvitationLinks(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner, guest, late := a.signedUp(t, unique("owner")), a.signedUp(t, unique("guest")), a.signedUp(t, unique("late"))
	room := closedRoomBy(t, owner)
	link := inviteLink(t, owner, room, url.Values{"max_uses": {"1"}})

	t.Run("LoggedOut", func(t *testing.T) {
		p := a.client(t).get(link)
		if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/login?next="+url.QueryEscape(link) {
			t.Errorf("logged out: %d %q", p.StatusCode, p.Header.Get("Location"))
		}
	})
	t.Run("Join", func(t *testing.T) {
		p := guest.get(link)
		if p.StatusCode != http.StatusOK || p.doc.Find("form[action='"+link+"'] button").Length() != 1 || !strings.Contains(text(p, "h1"), room) {
			t.Fatalf("invitation page: %d %s", p.StatusCode, text(p, "main"))
		}
		if p = guest.post(link, nil); p.StatusCode != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/rooms/"+room) {
			t.Fatalf("join by link: %d %q", p.StatusCode, p.Header.Get("Location"))
		}
		if p = guest.get("/rooms/" + room); p.StatusCode != http.StatusOK || p.doc.Find("#composer").Length() != 1 {
			t.Fatalf("room after joining: %d", p.StatusCode)
		}
	})
	t.Run("UsedUp", func(t *testing.T) {
		p := late.post(link, nil)
		if p.StatusCode != http.StatusGone || !strings.Contains(text(p, "main"), "used") {
			t.Errorf("used-up link: %d %s", p.StatusCode, text(p, "main"))
		}
		if _, in := participants(t, room)[late.login]; in {
			t.Error("joined by a used-up link")
		}
	})
	t.Run("Revoked", func(t *testing.T) {
		revoked := inviteLink(t, owner, room, nil)
		p := owner.get("/rooms/" + room + "/members")
		forms := p.doc.Find("#invite-list form")
		action, _ := forms.Last().Attr("action")
		if forms.Length() != 1 || owner.post(action, nil).StatusCode != http.StatusSeeOther {
			t.Fatalf("revoke: %d forms", forms.Length())
		}
		if p := late.get(revoked); p.StatusCode != http.StatusGone || !strings.Contains(text(p, "main"), "revoked") {
			t.Errorf("revoked link: %d %s", p.StatusCode, text(p, "main"))
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		if p := late.get("/invites/nosuchtoken"); p.StatusCode != http.StatusNotFound {
			t.Errorf("unknown link: %d", p.StatusCode)
		}
	})
	t.Run("NonAdminRefused", func(t *testing.T) {
		if p := guest.post("/rooms/"+room+"/invites", nil); p.StatusCode != http.StatusForbidden {
			t.Errorf("a member makes a link to a closed room: %d", p.StatusCode)
		}
		if p := owner.post("/rooms/"+room+"/invites", url.Values{"max_uses": {"0"}}); p.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("zero uses: %d", p.StatusCode)
		}
	})
}

// TestRemovedMemberStreamEndsAcrossInstances: a removal on instance A ends
// the removed member's stream of the room on instance B within a second.
func TestRemovedMemberStreamEndsAcrossInstances(t *testing.T) {
	t.Parallel()
	ns := startNATS(t, -1)
	var logsA, logsB syncBuffer
	a, b := instance(t, ns.ClientURL(), &logsA), instance(t, ns.ClientURL(), &logsB)
	owner, bob := a.signedUp(t, unique("owner")), a.signedUp(t, unique("bob"))
	room := closedRoomBy(t, owner, bob)
	s := openStreams(t, bob.on(b), room, 1)
	start := time.Now()
	if p := owner.post("/rooms/"+room+"/members/"+bob.login+"/remove", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove: %d", p.StatusCode)
	}
	s[0].ended(t, time.Second)
	t.Logf("the removed member's stream on the other instance ended %v after the removal was posted", time.Since(start))
	if s := bob.on(b).subscribe(t, room, ""); s.status != http.StatusNotFound {
		t.Errorf("a new stream after the removal: %d, want 404", s.status)
	}
}

// TestBigRoomHeaderListsFive: a room's header lists 5 people and links
// the rest to the members page, which pages them 100 at a time (by login,
// a slice of the room's rows each).
func TestBigRoomHeaderListsFive(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner := a.signedUp(t, unique("owner"))
	room := createRoom(t, owner)
	for i := 0; i < 120; i++ {
		login := unique("m")
		if _, err := db.Store.JoinRoom(ctxT(t), chat.UserRef{Login: login, Firstname: "M", Lastname: login}, room); err != nil {
			t.Fatal(err)
		}
	}
	p := owner.get("/rooms/" + room)
	if n := p.doc.Find("#participants li").Length(); n != 6 || !strings.Contains(text(p, "#participants .more-participants"), "and 116 others") {
		t.Errorf("header: %d items, %q", n, text(p, "#participants .more-participants"))
	}
	p = owner.get("/rooms/" + room + "/members")
	if n := p.doc.Find("#member-list li").Length(); n != 100 || p.doc.Find("a[rel=next]").Length() != 1 {
		t.Errorf("members page 1: %d people", n)
	}
	next, _ := p.doc.Find("a[rel=next]").Attr("href")
	p = owner.get(next)
	if n := p.doc.Find("#member-list li").Length(); n != 21 || p.doc.Find("a[rel=prev]").Length() != 1 || p.doc.Find("a[rel=next]").Length() != 0 {
		t.Errorf("members page 2 (%s): %d people", next, n)
	}
	// The pages hold each member once, by login.
	first := owner.get("/rooms/" + room + "/members")
	seen := map[string]bool{}
	for _, page := range []page{first, p} {
		page.doc.Find("#member-list li").Each(func(_ int, li *goquery.Selection) {
			login, _ := li.Attr("data-login")
			if seen[login] {
				t.Errorf("%s listed twice", login)
			}
			seen[login] = true
		})
	}
	if len(seen) != 121 {
		t.Errorf("%d members listed, want 121", len(seen))
	}
}

// TestAdminsEditTheBanner (issue 21, item 4): an admin sets the banner
// from the members page; a member who is not one is refused and nothing
// changes; a banner over one line is refused too.
func TestAdminsEditTheBanner(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner, ada, bob := a.signedUp(t, unique("own")), a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, owner, ada, bob)
	if p := owner.post("/rooms/"+room+"/members/"+ada.login+"/admin", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("make ada an admin: %d", p.StatusCode)
	}
	if p := ada.post("/rooms/"+room+"/banner", url.Values{"banner": {"Deploys on Tuesdays"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("an admin sets the banner: %d", p.StatusCode)
	}
	if p := bob.post("/rooms/"+room+"/banner", url.Values{"banner": {"bob was here"}}); p.StatusCode != http.StatusForbidden && p.StatusCode != http.StatusNotFound {
		t.Errorf("a member who is no admin sets the banner: %d", p.StatusCode)
	}
	if p := ada.post("/rooms/"+room+"/banner", url.Values{"banner": {"two\nlines"}}); p.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a banner of two lines: %d, want 422", p.StatusCode)
	}
	if got := text(bob.get("/rooms/"+room), ".room-header .banner"); got != "Deploys on Tuesdays" {
		t.Errorf("the room's banner is %q", got)
	}
}

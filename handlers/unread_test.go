package handlers_test

// Unread state and mentions over real HTTP and the real Cassandra: the
// home page's statement budget, mark-read from two tabs, the sidebar's
// badges and the title, the "new since your last visit" divider, pages
// opened on one message, the list of mentions and the live "unread" event.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
)

// countingStore is a store of its own on the test keyspace whose
// statements are counted apart from every other test's.
func countingStore(t testing.TB) (*store.Store, *storetest.Recorder) {
	t.Helper()
	rec := &storetest.Recorder{}
	st := store.New(store.Config{Hosts: storetest.Hosts(), Keyspace: db.Keyspace, Observe: rec.Observe,
		Timeout: 10 * time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := storetest.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st, rec
}

// busyPerson signs up a person on a (through HTTP) with rooms rooms and dms
// DMs, each with a message; all read but unread of each kind, and one
// mention in an unread room.
func busyPerson(t testing.TB, a *app, rooms, dms, unread int) (*client, string) {
	t.Helper()
	ctx := ctxT(t)
	login := unique("busy")
	c := a.signedUp(t, login)
	me := chat.UserRef{Login: login, Firstname: "Ada", Lastname: "Lovelace"}
	other := newUser(t, unique("other"))
	var names []string
	for i := 0; i < rooms; i++ {
		r, err := db.CreateRoom(ctx, me, chat.NewRoom{Name: unique("busyroom")})
		if err != nil {
			t.Fatal(err)
		}
		if i < unread {
			if r, err = db.JoinRoom(ctx, other, r.Name); err != nil {
				t.Fatal(err)
			}
			m, err := db.PostMessage(ctx, r, other, fmt.Sprintf("hello @%s", login))
			if err != nil {
				t.Fatal(err)
			}
			conv, err := db.Mentionable(ctx, r, m.Content) // the members it names, as a post does
			if err != nil {
				t.Fatal(err)
			}
			if err := db.RecordMentions(ctx, conv, m); err != nil {
				t.Fatal(err)
			}
		} else {
			m, err := db.PostMessage(ctx, r, me, "mine")
			if err != nil {
				t.Fatal(err)
			}
			if err := db.MarkRead(ctx, login, r.Name, m.ID); err != nil {
				t.Fatal(err)
			}
		}
		names = append(names, r.Name)
	}
	for i := 0; i < dms; i++ {
		partner := newUser(t, unique("pen"))
		d, err := db.DM(ctx, login+"+"+partner.Login)
		if err != nil {
			t.Fatal(err)
		}
		m, err := db.PostMessage(ctx, d, partner, "hi there")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.RecordDMMessage(ctx, d, m); err != nil {
			t.Fatal(err)
		}
		if i >= unread {
			if err := db.MarkRead(ctx, login, d.Conversation().ID, m.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c, login
}

func newUser(t testing.TB, login string) chat.UserRef {
	t.Helper()
	u, err := db.CreateUser(ctxT(t), chat.SignUp{Login: login, Password: "password1", PasswordConfirm: "password1", Firstname: "Bob", Lastname: "Builder"})
	if err != nil {
		t.Fatal(err)
	}
	return chat.UserRef{Login: u.Login, Firstname: u.Firstname, Lastname: u.Lastname}
}

// TestHomeStatementBudget: the home page of a person in 50 rooms and 20
// DMs runs as many statements as that of a person in 5 rooms and 2 DMs
// (two unread rooms and DMs each, one mention, in both).
func TestHomeStatementBudget(t *testing.T) {
	st, rec := countingStore(t)
	a := newApp(t, st, nil)
	small, smallLogin := busyPerson(t, a, 5, 2, 2)
	big, bigLogin := busyPerson(t, a, 50, 20, 2)

	// The sidebar read (its state is kept while nothing changes).
	nSmall, smallKinds, _ := sidebarStatements(t, a, small, smallLogin, rec, "/")
	nBig, bigKinds, _ := sidebarStatements(t, a, big, bigLogin, rec, "/")
	t.Logf("home page statements: %d (5 rooms, 2 DMs), %d (50 rooms, 20 DMs; 2 unread rooms, 2 unread DMs)\n%s", nSmall, nBig, bigKinds)
	if nBig != nSmall {
		t.Errorf("home page: %d statements with 50 rooms and 20 DMs, %d with 5 and 2\nbig:\n%s\nsmall:\n%s", nBig, nSmall, bigKinds, smallKinds)
	}

	room := createRoom(t, big)
	for i := 0; i < 3; i++ {
		postMessage(t, big, room, "hello")
	}
	nRoom, roomKinds, _ := sidebarStatements(t, a, big, bigLogin, rec, "/rooms/"+room)
	t.Logf("room page statements (50 rooms, 20 DMs): %d\n%s", nRoom, roomKinds)

	p := big.get("/")
	if got := p.doc.Find("#my-rooms a[data-unread='1']").Length(); got != 2 {
		t.Errorf("%d rooms show 1 unread, want 2", got)
	}
	if got := p.doc.Find("#my-rooms a[data-unread='0']").Length(); got != 49 {
		t.Errorf("%d rooms show 0 unread, want 49", got)
	}
	if got := p.doc.Find("#my-rooms .badge.mention").Length(); got != 2 {
		t.Errorf("%d mention badges, want 2", got)
	}
	if title := text(p, "title"); !strings.HasPrefix(title, "(") {
		t.Errorf("title %q has no unread count", title)
	}
}

// sidebarStatements is statements with c's sidebar read: the first load
// warms the caches, then c's kept sidebar state is dropped (as when their
// marker moves on another instance) before the load counted.
func sidebarStatements(t testing.TB, a *app, c *client, login string, rec *storetest.Recorder, path string) (int, string, []store.ObservedQuery) {
	t.Helper()
	c.get(path)
	if err := a.hub.Publish(ctxT(t), live.Event{Kind: live.KindUnread, Conversation: live.PersonalKey(login)}); err != nil {
		t.Fatal(err)
	}
	return statementsOnce(t, c, rec, path)
}

// TestMarkReadTwoTabs: two tabs of one person post their newest id in any
// order; the marker only moves forward, and the unread count follows it.
func TestMarkReadTwoTabs(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	bobLogin := loginOf(t, bob)
	room := roomWith(t, ada, bob)
	var ids []string
	for i := 0; i < 6; i++ {
		postMessage(t, ada, room, fmt.Sprintf("m%d", i))
		ids = append(ids, lastStored(t, room))
	}
	tab1, tab2 := *bob, *bob
	tab1.htmx, tab2.htmx = true, true
	tab1.csrf, tab2.csrf = bob.ensureCSRF(), bob.ensureCSRF()
	tab1.csrfFor, tab2.csrfFor = bob.csrfFor, bob.csrfFor
	for round := 0; round < 20; round++ {
		newer, older := ids[5-round%3], ids[round%3]
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); tab1.post("/rooms/"+room+"/read", url.Values{"id": {newer}}) }()
		go func() { defer wg.Done(); tab2.post("/rooms/"+room+"/read", url.Values{"id": {older}}) }()
		wg.Wait()
		marker, err := db.Marker(ctxT(t), bobLogin, room)
		if err != nil {
			t.Fatal(err)
		}
		if marker.String() != ids[5] && !marker.After(mustID(t, ids[3])) {
			t.Fatalf("round %d: marker %s went back below %s", round, marker, newer)
		}
	}
	if p := tab1.get("/sidebar"); p.doc.Find(fmt.Sprintf("a[href='/rooms/%s#latest'][data-unread='0']", room)).Length() != 1 {
		t.Errorf("after reading everything the sidebar still says %q unread", p.doc.Find(fmt.Sprintf("a[href='/rooms/%s#latest']", room)).AttrOr("data-unread", "?"))
	}

	t.Run("Answers", func(t *testing.T) {
		if p := tab1.post("/rooms/"+room+"/read", url.Values{"id": {ids[5]}}); p.StatusCode != http.StatusNoContent {
			t.Errorf("htmx mark read: %d", p.StatusCode)
		}
		if p := bob.post("/rooms/"+room+"/read", url.Values{"id": {ids[5]}}); p.StatusCode != http.StatusSeeOther {
			t.Errorf("form mark read: %d", p.StatusCode)
		}
	})
	t.Run("BadID", func(t *testing.T) {
		before, _ := db.Marker(ctxT(t), bobLogin, room)
		future := chat.IDAt(time.Now().Add(24 * time.Hour)).String()
		for _, id := range []string{"", "nope", "0f8fad5b-d9cb-469f-a165-70867728950e" /* version 4 */, future} {
			if p := bob.post("/rooms/"+room+"/read", url.Values{"id": {id}}); p.StatusCode != http.StatusBadRequest {
				t.Errorf("id %q: %d, want 400", id, p.StatusCode)
			}
		}
		if after, _ := db.Marker(ctxT(t), bobLogin, room); after != before {
			t.Errorf("a refused mark read moved the marker from %s to %s", before, after)
		}
	})
	t.Run("NotAMember", func(t *testing.T) {
		eve := a.signedUp(t, unique("eve"))
		if p := eve.post("/rooms/"+room+"/read", url.Values{"id": {ids[5]}}); p.StatusCode != http.StatusForbidden {
			t.Errorf("outsider: %d, want 403", p.StatusCode)
		}
		if p := eve.post("/rooms/"+unique("nosuch")+"/read", url.Values{"id": {ids[5]}}); p.StatusCode != http.StatusNotFound {
			t.Errorf("unknown room: %d, want 404", p.StatusCode)
		}
	})
}

func mustID(t testing.TB, s string) chat.ID {
	t.Helper()
	id, err := chat.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// loginOf is the login a client is signed in as, from its page.
func loginOf(t testing.TB, c *client) string {
	t.Helper()
	login, ok := c.get("/profile").doc.Find("body").Attr("data-viewer")
	if !ok || login == "" {
		t.Fatal("no data-viewer on the page")
	}
	return login
}

// TestUnreadBadgesAndTitle: a message in a room the reader is not looking
// at shows as a badge and in the title; opening the room clears both, and
// the next visit shows the divider above what is new.
func TestUnreadBadgesAndTitle(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)
	bob.get("/rooms/" + room) // read up to the join
	postMessage(t, ada, room, "first")
	postMessage(t, ada, room, "second")
	first := lastStored(t, room)

	home := bob.get("/")
	entry := home.doc.Find(fmt.Sprintf("#my-rooms a[href='/rooms/%s#latest']", room))
	if got := entry.AttrOr("data-unread", ""); got != "2" {
		t.Errorf("data-unread = %q, want 2", got)
	}
	if got := strings.TrimSpace(entry.Find(".badge.unread").Text()); got != "2" {
		t.Errorf("badge %q, want 2", got)
	}
	if title := text(home, "title"); !strings.HasPrefix(title, "(1) ") {
		t.Errorf("title %q, want (1) first", title)
	}

	p := bob.get("/rooms/" + room)
	if got := p.doc.Find("#messages > li.unread-sep").Length(); got != 1 {
		t.Fatalf("%d dividers, want 1", got)
	}
	if next := p.doc.Find("#messages > li.unread-sep").Next(); !strings.Contains(next.Find(".text").Text(), "first") {
		t.Errorf("the divider is above %q, want the first unread message", next.Find(".text").Text())
	}
	if got := p.doc.Find(fmt.Sprintf("#my-rooms a[href='/rooms/%s#latest']", room)).AttrOr("data-unread", ""); got != "0" {
		t.Errorf("the open room says %q unread, want 0", got)
	}
	if title := text(p, "title"); strings.HasPrefix(title, "(") {
		t.Errorf("title %q after reading", title)
	}
	if again := bob.get("/rooms/" + room); again.doc.Find("li.unread-sep").Length() != 0 {
		t.Error("the divider is still there on the next visit")
	}
	// Own messages are never unread and get no divider.
	postMessage(t, bob, room, "mine")
	if p := bob.get("/rooms/" + room); p.doc.Find("li.unread-sep").Length() != 0 {
		t.Error("a divider above one's own message")
	}
	_ = first
}

// TestMentions: a mention of a member links to them, is recorded for them
// only, lists on /mentions (theirs only) and opens the room around it.
func TestMentions(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob, cy := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("cy"))
	bobLogin, cyLogin := loginOf(t, bob), loginOf(t, cy)
	room := roomWith(t, ada, bob)
	eve := a.signedUp(t, unique("eve")) // not in the room
	eveLogin := loginOf(t, eve)
	for i := 0; i < 30; i++ {
		postMessage(t, ada, room, fmt.Sprintf("filler %d", i))
	}
	postMessage(t, ada, room, fmt.Sprintf("look @%s and @%s and @%s", bobLogin, cyLogin, eveLogin))
	mentionID := lastStored(t, room)
	for i := 0; i < 60; i++ {
		postMessage(t, ada, room, fmt.Sprintf("later %d", i))
	}

	p := bob.get("/mentions")
	items := p.doc.Find(".mention-item")
	if items.Length() != 1 {
		t.Fatalf("bob has %d mentions, want 1", items.Length())
	}
	link := items.Find("a.mention-place").AttrOr("href", "")
	if !strings.Contains(link, "?at="+mentionID) {
		t.Errorf("mention links to %q, want ?at=%s", link, mentionID)
	}
	for _, other := range []*client{cy, eve, ada} {
		if n := other.get("/mentions").doc.Find(".mention-item").Length(); n != 0 {
			t.Errorf("someone else (not a member, or the author) sees %d mentions", n)
		}
	}
	if n := bob.get("/").doc.Find(fmt.Sprintf("#my-rooms a[href='/rooms/%s#latest'] .badge.mention", room)).Length(); n != 1 {
		t.Errorf("%d mention badges for the room, want 1", n)
	}

	at := bob.get(strings.SplitN(link, "#", 2)[0])
	if at.StatusCode != http.StatusOK {
		t.Fatalf("open at the mention: %d", at.StatusCode)
	}
	hl := at.doc.Find("#messages > li.message.highlight")
	if hl.Length() != 1 || hl.AttrOr("id", "") != "msg-"+mentionID {
		t.Fatalf("highlighted %q, want msg-%s", hl.AttrOr("id", ""), mentionID)
	}
	if at.doc.Find("#messages > li.message").First().Text() == "" || hl.PrevAll().Filter("li.message").Length() == 0 || hl.NextAll().Filter("li.message").Length() == 0 {
		t.Error("the page is not centred on the mention: nothing before or after it")
	}
	if hl.NextAll().Filter("li.message").Length() > 30 {
		t.Errorf("%d messages after the mention: not a page around it", hl.NextAll().Filter("li.message").Length())
	}
	links := hl.Find("a.mention")
	if links.Length() != 1 || links.AttrOr("data-login", "") != bobLogin || links.AttrOr("href", "") != "/users/"+bobLogin {
		t.Errorf("mention links in the message: %d, first %q", links.Length(), links.AttrOr("href", ""))
	}
	if !links.HasClass("mention-me") {
		t.Error("bob's own mention is not highlighted for bob")
	}
	if p := ada.get(strings.SplitN(link, "#", 2)[0]); p.doc.Find("a.mention-me").Length() != 0 {
		t.Error("bob's mention is highlighted for ada")
	}
	if p := bob.get("/rooms/" + room + "?at=nope"); p.StatusCode != http.StatusBadRequest {
		t.Errorf("?at=nope: %d, want 400", p.StatusCode)
	}

	t.Run("Suggestions", func(t *testing.T) {
		h := *ada
		h.htmx = true
		p := h.get("/rooms/" + room + "/members?q=" + bobLogin[:3])
		if p.StatusCode != http.StatusOK || p.doc.Find(fmt.Sprintf("[data-login='%s']", bobLogin)).Length() != 1 {
			t.Errorf("suggestions for %q: %d %s", bobLogin[:3], p.StatusCode, p.body)
		}
		if p.doc.Find(fmt.Sprintf("[data-login='%s']", loginOf(t, ada))).Length() != 0 {
			t.Error("suggests the writer")
		}
		if p := eve.get("/rooms/" + room + "/members?q="); p.StatusCode != http.StatusForbidden {
			t.Errorf("outsider asks for members: %d", p.StatusCode)
		}
	})
}

// TestUnreadEventOnStream: a room page's stream says when another of the
// reader's rooms gets a message from someone else — the id only — and
// says nothing of rooms the reader is not in, nor of their own messages.
func TestUnreadEventOnStream(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	here, there := roomWith(t, ada, bob), roomWith(t, ada, bob)
	elsewhere := roomWith(t, ada)
	s := bob.subscribe(t, here, "")
	defer s.close()
	time.Sleep(100 * time.Millisecond)
	postMessage(t, bob, there, "own message: no event")
	postMessage(t, ada, elsewhere, "not bob's room: no event")
	postMessage(t, ada, there, "hello")
	ev := s.nextEvent(t, "unread", 5*time.Second)
	if ev != there {
		t.Fatalf("unread event for %q, want %q", ev, there)
	}
	s.quietFor(t, "unread", 300*time.Millisecond)
}

// nextEvent waits for the next event called name and returns its data.
func (s *stream) nextEvent(t testing.TB, name string, within time.Duration) string {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("stream ended")
			}
			if ev.name == name {
				return ev.data
			}
		case <-timeout:
			t.Fatalf("no %q event within %v", name, within)
		}
	}
}

// quietFor checks that no event called name arrives for d.
func (s *stream) quietFor(t testing.TB, name string, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return
			}
			if ev.name == name {
				t.Fatalf("unexpected %q event: %s", name, ev.data)
			}
		case <-timeout:
			return
		}
	}
}

// TestDMUnread: a DM's unread count shows in the sidebar, opening it
// clears it, its read marker moves over /dm/:logins/read for members only,
// and its stream tells of the person's other DMs.
func TestDMUnread(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob, eve := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("eve"))
	adaLogin, bobLogin := loginOf(t, ada), loginOf(t, bob)
	logins := []string{adaLogin, bobLogin}
	sort.Strings(logins)
	dm := "/dm/" + strings.Join(logins, "+")
	if p := ada.post(dm+"/messages", url.Values{"content": {"hello @" + bobLogin}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("post in the dm: %d", p.StatusCode)
	}
	entry := fmt.Sprintf("#my-dms a[href='%s#latest']", dm)
	home := bob.get("/")
	if got := home.doc.Find(entry).AttrOr("data-unread", ""); got != "1" {
		t.Errorf("dm data-unread = %q, want 1", got)
	}
	if home.doc.Find(entry+" .badge.mention").Length() != 1 {
		t.Error("no mention badge on the dm")
	}
	p := bob.get(dm)
	if p.StatusCode != http.StatusOK || p.doc.Find("#messages a.mention.mention-me").Length() != 1 {
		t.Errorf("dm page: %d, own mention highlighted: %d", p.StatusCode, p.doc.Find("#messages a.mention.mention-me").Length())
	}
	if got := bob.get("/").doc.Find(entry).AttrOr("data-unread", ""); got != "0" {
		t.Errorf("after opening, dm data-unread = %q, want 0", got)
	}
	id := p.doc.Find("#messages > li.message").Last().AttrOr("id", "msg-")[4:]
	if p := bob.post(dm+"/read", url.Values{"id": {id}}); p.StatusCode != http.StatusSeeOther {
		t.Errorf("member marks the dm read: %d", p.StatusCode)
	}
	if p := eve.post(dm+"/read", url.Values{"id": {id}}); p.StatusCode != http.StatusNotFound {
		t.Errorf("outsider marks the dm read: %d, want 404", p.StatusCode)
	}
	if p := eve.get("/mentions"); p.doc.Find(".mention-item").Length() != 0 {
		t.Error("an outsider sees the dm's mention")
	}
	if p := bob.get("/mentions"); !strings.Contains(p.doc.Find(".mention-item a.mention-place").AttrOr("href", ""), dm+"?at=") {
		t.Errorf("bob's mention in the dm links to %q", p.doc.Find(".mention-item a.mention-place").AttrOr("href", ""))
	}

	// Bob reads a room; a DM from a third person (new since the stream
	// opened) is heard on the room's stream.
	room := roomWith(t, bob)
	s := bob.subscribe(t, room, "")
	time.Sleep(100 * time.Millisecond)
	cyLogin := unique("cy")
	cy := a.signedUp(t, cyLogin)
	cyLogin = loginOf(t, cy)
	pair := []string{bobLogin, cyLogin}
	sort.Strings(pair)
	if p := cy.post("/dm/"+strings.Join(pair, "+")+"/messages", url.Values{"content": {"hi bob"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("cy's first dm: %d", p.StatusCode)
	}
	if got := s.nextEvent(t, "unread", 5*time.Second); got != "dm:"+strings.Join(pair, "+") {
		t.Errorf("unread event for %q", got)
	}
}

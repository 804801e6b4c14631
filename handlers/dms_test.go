package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/web/limit"
)

// dmMessages are the messages stored in the DM at address, oldest first.
func dmMessages(t *testing.T, address string) []chat.Message {
	t.Helper()
	d, err := db.DM(ctxT(t), address)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := db.MessagesBefore(ctxT(t), d, chat.ID{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func dmAddress(t testing.TB, logins ...string) string {
	t.Helper()
	a, err := chat.DMAddress(logins)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func postDM(t testing.TB, c *client, address, content string) {
	t.Helper()
	if p := c.post("/dm/"+address+"/messages", url.Values{"content": {content}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("post to %s: %d %s", address, p.StatusCode, text(p, "main"))
	}
}

// TestDMAuthorization: a DM is its members' only. Anyone else gets 404 on
// its page, older pages, posts and stream, sees none of its content, and
// stores nothing.
func TestDMAuthorization(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	adaLogin, bobLogin, eveLogin := unique("dma"), unique("dmb"), unique("dme")
	ada, bob, eve := a.signedUp(t, adaLogin), a.signedUp(t, bobLogin), a.signedUp(t, eveLogin)
	address := dmAddress(t, adaLogin, bobLogin)
	postDM(t, ada, address, "the secret plan")
	postDM(t, bob, address, "agreed")
	msgs := dmMessages(t, address)
	if len(msgs) != 2 {
		t.Fatalf("%d messages stored, want 2", len(msgs))
	}
	before := url.QueryEscape(chat.MaxIDAt(time.Now().Add(time.Hour)).String())

	t.Run("Members", func(t *testing.T) {
		for _, c := range []*client{ada, bob} {
			p := c.get("/dm/" + address)
			if p.StatusCode != http.StatusOK {
				t.Fatalf("member page: %d", p.StatusCode)
			}
			if got := p.doc.Find("#messages .message .text").Length(); got != 2 {
				t.Fatalf("member sees %d messages, want 2", got)
			}
			if action, _ := p.doc.Find("form#composer").Attr("action"); action != "/dm/"+address+"/messages" {
				t.Fatalf("composer posts to %q", action)
			}
			if got := p.doc.Find(`#dm-members a[href^="/users/"]`).Length(); got != 2 {
				t.Fatalf("header links %d members, want 2", got)
			}
			if p := c.get("/dm/" + address + "/messages?before=" + before); p.StatusCode != http.StatusOK || p.doc.Find(".message").Length() != 2 {
				t.Fatalf("member older page: %d, %d messages", p.StatusCode, p.doc.Find(".message").Length())
			}
		}
	})

	t.Run("Outsider", func(t *testing.T) {
		for _, p := range []page{
			eve.get("/dm/" + address),
			eve.get("/dm/" + address + "/messages?before=" + before),
			eve.post("/dm/"+address+"/messages", url.Values{"content": {"let me in"}}),
		} {
			if p.StatusCode != http.StatusNotFound {
				t.Fatalf("%s %s: %d, want 404", p.Request.Method, p.Request.URL.Path, p.StatusCode)
			}
			if strings.Contains(p.body, "secret plan") || strings.Contains(p.body, "agreed") {
				t.Fatalf("%s %s leaks the conversation", p.Request.Method, p.Request.URL.Path)
			}
		}
		s := eve.subscribePath(t, "/dm/"+address+"/events", "")
		s.close()
		if s.status != http.StatusNotFound {
			t.Fatalf("outsider's stream: %d, want 404", s.status)
		}
		// The same stream resuming, so a replay would leak if it ran.
		s = eve.subscribePath(t, "/dm/"+address+"/events", msgs[0].ID.String())
		s.close()
		if s.status != http.StatusNotFound {
			t.Fatalf("outsider's resumed stream: %d, want 404", s.status)
		}
		if got := dmMessages(t, address); len(got) != 2 {
			t.Fatalf("outsider's post stored: %d messages", len(got))
		}
		if list, err := db.DMList(ctxT(t), eveLogin); err != nil || len(list) != 0 {
			t.Fatalf("outsider's DM list: %v, %v", list, err)
		}
	})

	t.Run("UnknownLogin", func(t *testing.T) {
		for _, path := range []string{
			"/dm/" + dmAddress(t, adaLogin, "nobody"+adaLogin),
			"/dm/" + dmAddress(t, adaLogin, "nobody"+adaLogin) + "/messages?before=" + before,
			"/dm/" + adaLogin, // one person is no DM
			"/dm/" + adaLogin + "+bad%20name",
		} {
			if p := ada.get(path); p.StatusCode != http.StatusNotFound {
				t.Fatalf("GET %s: %d, want 404", path, p.StatusCode)
			}
		}
		p := ada.post("/dm/"+dmAddress(t, adaLogin, "nobody"+adaLogin)+"/messages", url.Values{"content": {"hello?"}})
		if p.StatusCode != http.StatusNotFound {
			t.Fatalf("post to an unknown login: %d, want 404", p.StatusCode)
		}
	})

	t.Run("NonCanonical", func(t *testing.T) {
		for path, want := range map[string]string{
			"/dm/" + strings.ToUpper(bobLogin) + "+" + adaLogin:                 "/dm/" + address,
			"/dm/" + bobLogin + "+" + adaLogin + "+" + bobLogin:                 "/dm/" + address,
			"/dm/" + bobLogin + "+" + adaLogin + "/messages?before=" + before:   "/dm/" + address + "/messages?before=" + before,
			"/dm/" + bobLogin + "+" + strings.ToUpper(adaLogin) + "/events?a=1": "/dm/" + address + "/events?a=1",
		} {
			p := ada.get(path)
			if p.StatusCode != http.StatusMovedPermanently || p.Header.Get("Location") != want {
				t.Fatalf("GET %s: %d to %q, want 301 to %q", path, p.StatusCode, p.Header.Get("Location"), want)
			}
		}
		// A post is not redirected: it goes on at the canonical address.
		p := ada.post("/dm/"+bobLogin+"+"+adaLogin+"/messages", url.Values{"content": {"reordered"}})
		if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/dm/"+address+"#latest" {
			t.Fatalf("post to a reordered address: %d to %q", p.StatusCode, p.Header.Get("Location"))
		}
		if got := dmMessages(t, address); len(got) != 3 || got[2].Content != "reordered" {
			t.Fatalf("post to a reordered address landed elsewhere: %d messages", len(got))
		}
	})
}

// TestDMFirstContactRace: two people who never wrote to each other post
// their first DMs at the same moment, each to the address as they spell it.
// They always land in one conversation holding every message.
func TestDMFirstContactRace(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	const pairs = 20
	type pair struct {
		a, b       string
		alice, bob *client
	}
	ps := make([]pair, pairs)
	// Sign-ups hash passwords: done at once, they take a fraction of the time.
	var signups sync.WaitGroup
	for i := range ps {
		ps[i] = pair{a: unique("fca"), b: unique("fcb")}
		for _, who := range []struct {
			login string
			c     **client
		}{{ps[i].a, &ps[i].alice}, {ps[i].b, &ps[i].bob}} {
			signups.Add(1)
			go func() {
				defer signups.Done()
				c := a.client(t)
				if p := c.post("/signup", signupForm(who.login, "password1")); p.StatusCode != http.StatusSeeOther {
					t.Errorf("sign up %s: %d", who.login, p.StatusCode)
				}
				c.ensureCSRF()
				*who.c = c
			}()
		}
	}
	signups.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, p := range ps {
		for _, side := range []struct {
			c    *client
			path string
		}{
			{p.alice, "/dm/" + p.a + "+" + p.b + "/messages"},
			{p.bob, "/dm/" + p.b + "+" + p.a + "/messages"},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if r := side.c.post(side.path, url.Values{"content": {"hi, first contact"}}); r.StatusCode != http.StatusSeeOther {
					t.Errorf("post %s: %d", side.path, r.StatusCode)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	for _, p := range ps {
		address := dmAddress(t, p.a, p.b)
		if got := dmMessages(t, address); len(got) != 2 {
			t.Fatalf("pair %s: %d messages in the one conversation, want 2", address, len(got))
		}
		for _, login := range []string{p.a, p.b} {
			list, err := db.DMList(ctxT(t), login)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].DM.Address != address {
				t.Fatalf("%s's list: %+v, want the one conversation %s", login, list, address)
			}
		}
	}
}

// TestDMListOverHTTP: GET /dm lists a person's conversations, most recent
// activity first, each with its members, the last message's author and
// first 100 characters, and data-unread; the sidebar lists them too.
func TestDMListOverHTTP(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	meLogin := unique("lst")
	me := a.signedUp(t, meLogin)
	var partners []string
	for i := 0; i < 3; i++ {
		l := unique("lsp")
		partners = append(partners, l)
		c := a.signedUp(t, l)
		postDM(t, me, dmAddress(t, meLogin, l), "hello "+l)
		postDM(t, c, dmAddress(t, meLogin, l), "reply from "+l)
	}
	// A group DM, then the first conversation again: it comes first.
	group := dmAddress(t, meLogin, partners[1], partners[2])
	postDM(t, me, group, "to both of you")
	long := strings.Repeat("é", 150)
	postDM(t, me, dmAddress(t, meLogin, partners[0]), long)

	p := me.get("/dm")
	if p.StatusCode != http.StatusOK {
		t.Fatalf("GET /dm: %d", p.StatusCode)
	}
	rows := p.doc.Find(".dm-list .dm-row")
	want := []string{dmAddress(t, meLogin, partners[0]), group, dmAddress(t, meLogin, partners[2]), dmAddress(t, meLogin, partners[1])}
	if rows.Length() != len(want) {
		t.Fatalf("%d rows, want %d", rows.Length(), len(want))
	}
	for i, address := range want {
		row := rows.Eq(i)
		link := row.Find("a.dm-title")
		if href, _ := link.Attr("href"); href != "/dm/"+address+"#latest" {
			t.Fatalf("row %d links %q, want %s", i, href, address)
		}
		if u, ok := link.Attr("data-unread"); !ok || u == "" {
			t.Fatalf("row %d has no data-unread", i)
		}
		if got := row.Find(".dm-member").Length(); got != strings.Count(address, "+")+1 {
			t.Fatalf("row %d shows %d members", i, got)
		}
	}
	first := rows.Eq(0)
	if author, _ := first.Find(".dm-last-author").Attr("data-login"); author != meLogin {
		t.Fatalf("last author %q, want %q", author, meLogin)
	}
	if got := first.Find(".dm-excerpt").Text(); got != strings.Repeat("é", 100)+"…" {
		t.Fatalf("excerpt %q (%d runes), want the first 100 characters", got, len([]rune(got)))
	}
	if got := rows.Eq(2).Find(".dm-excerpt").Text(); got != "reply from "+partners[2] {
		t.Fatalf("third row's excerpt %q", got)
	}
	if got := rows.Eq(2).Find(".dm-last-author").AttrOr("data-login", ""); got != partners[2] {
		t.Fatalf("third row's author %q", got)
	}

	side := p.doc.Find("#my-dms a")
	if side.Length() != len(want) {
		t.Fatalf("sidebar lists %d DMs, want %d", side.Length(), len(want))
	}
	for i, address := range want {
		if href, _ := side.Eq(i).Attr("href"); href != "/dm/"+address+"#latest" {
			t.Fatalf("sidebar entry %d links %q", i, href)
		}
		if _, ok := side.Eq(i).Attr("data-unread"); !ok {
			t.Fatalf("sidebar entry %d has no data-unread", i)
		}
	}
	// The open DM is marked in the sidebar.
	if got := me.get("/dm/"+group).doc.Find(`#my-dms a[aria-current="page"]`).AttrOr("href", ""); got != "/dm/"+group+"#latest" {
		t.Fatalf("open DM marked in the sidebar: %q", got)
	}
}

// TestDMLive: a DM's message reaches the other member over the DM's stream,
// and a resumed stream replays what was missed.
func TestDMLive(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	adaLogin, bobLogin := unique("lva"), unique("lvb")
	ada, bob := a.signedUp(t, adaLogin), a.signedUp(t, bobLogin)
	address := dmAddress(t, adaLogin, bobLogin)
	s := bob.subscribePath(t, "/dm/"+address+"/events", "")
	defer s.close()
	if s.status != http.StatusOK {
		t.Fatalf("member's stream: %d", s.status)
	}
	postDM(t, ada, address, "live to bob")
	id, ev := s.nextMessage(t, 10*time.Second)
	if !strings.Contains(ev.data, "live to bob") {
		t.Fatalf("event %q", ev.data)
	}
	postDM(t, ada, address, "while bob was away")
	r := bob.subscribePath(t, "/dm/"+address+"/events", id)
	defer r.close()
	if _, ev := r.nextMessage(t, 10*time.Second); !strings.Contains(ev.data, "while bob was away") {
		t.Fatalf("replayed %q", ev.data)
	}
}

// TestStartDM: the form without JavaScript (logins → 303 to the canonical
// DM, or the form again with what is wrong), its suggestions, and the
// Message button of a profile and hover card.
func TestStartDM(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	adaLogin, bobLogin, cyLogin := unique("sda"), unique("sdb"), unique("sdc")
	ada, bob := a.signedUp(t, adaLogin), a.signedUp(t, bobLogin)
	a.signedUp(t, cyLogin)

	t.Run("Form", func(t *testing.T) {
		p := ada.post("/dm", url.Values{"to": {strings.ToUpper(cyLogin) + ", " + bobLogin + " " + adaLogin}})
		if want := "/dm/" + dmAddress(t, adaLogin, bobLogin, cyLogin) + "#latest"; p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != want {
			t.Fatalf("start: %d to %q, want 303 to %q", p.StatusCode, p.Header.Get("Location"), want)
		}
		for typed, problem := range map[string]string{
			"":                  "at least one login",
			"nobody" + adaLogin: "no one has the login nobody" + adaLogin,
			"bad name!":         "is not a login",
			bobLogin + " a1x b1x c1x d1x e1x f1x g1x h1x": "to 8 people",
		} {
			p := ada.post("/dm", url.Values{"to": {typed}})
			if p.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("%q: %d, want 422", typed, p.StatusCode)
			}
			if got := text(p, "#err-to"); !strings.Contains(strings.ToLower(got), strings.ToLower(problem)) {
				t.Fatalf("%q: error %q, want %q", typed, got, problem)
			}
			if got := p.doc.Find("input#to").AttrOr("value", ""); got != typed {
				t.Fatalf("%q: the field keeps %q", typed, got)
			}
			if got, want := p.doc.Find("title").Text(), "New direct message · KillrChat"; got != want {
				t.Fatalf("%q: title %q, want %q", typed, got, want)
			}
		}
	})

	t.Run("Suggestions", func(t *testing.T) {
		roomWith(t, ada, bob)
		p := ada.get("/dm/new")
		if p.StatusCode != http.StatusOK {
			t.Fatalf("GET /dm/new: %d", p.StatusCode)
		}
		if got, want := p.doc.Find("title").Text(), "New direct message · KillrChat"; got != want {
			t.Fatalf("GET /dm/new: title %q, want %q", got, want)
		}
		if got := p.doc.Find(`#dm-suggestions a[data-login="`+bobLogin+`"]`).AttrOr("href", ""); got != "/dm/"+dmAddress(t, adaLogin, bobLogin)+"#latest" {
			t.Fatalf("roommate suggested as %q", got)
		}
		ada.htmx = true
		defer func() { ada.htmx = false }()
		// An exact login is found though no room is shared; the words
		// typed before stay in the suggested conversation.
		p = ada.get("/dm/new/suggestions?to=" + url.QueryEscape(bobLogin+", "+cyLogin))
		if got := p.doc.Find(`a[data-login="`+cyLogin+`"]`).AttrOr("href", ""); got != "/dm/"+dmAddress(t, adaLogin, bobLogin, cyLogin)+"#latest" {
			t.Fatalf("exact login suggested as %q in %s", got, p.body)
		}
		p = ada.get("/dm/new/suggestions?to=" + url.QueryEscape(cyLogin[:4]))
		if p.doc.Find(`a[data-login="`+cyLogin+`"]`).Length() != 0 {
			t.Fatal("a stranger was found by a part of the login")
		}
	})

	t.Run("MessageButton", func(t *testing.T) {
		want := "/dm/" + dmAddress(t, adaLogin, bobLogin) + "#latest"
		if got := ada.get("/users/"+bobLogin).doc.Find("a.message-button").AttrOr("href", ""); got != want {
			t.Fatalf("profile's Message links %q, want %q", got, want)
		}
		if n := ada.get("/users/" + adaLogin).doc.Find("a.message-button").Length(); n != 0 {
			t.Fatal("one's own profile offers Message")
		}
		ada.htmx = true
		defer func() { ada.htmx = false }()
		if got := ada.get("/users/"+bobLogin).doc.Find(".hovercard a.message-button").AttrOr("href", ""); got != want {
			t.Fatalf("hover card's Message links %q, want %q", got, want)
		}
	})
}

// TestDMPostsShareTheMessageLimit: the per-user message limit counts room
// and DM posts together.
func TestDMPostsShareTheMessageLimit(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil, limited(limit.Writes{Messages: slow(2)}))
	adaLogin, bobLogin := unique("dla"), unique("dlb")
	ada := a.signedUp(t, adaLogin)
	a.signedUp(t, bobLogin)
	address := dmAddress(t, adaLogin, bobLogin)
	postDM(t, ada, address, "one")
	postDM(t, ada, address, "two")
	wantTooMany(t, ada.post("/dm/"+address+"/messages", url.Values{"content": {"three"}}), "third DM")
	if got := dmMessages(t, address); len(got) != 2 {
		t.Fatalf("%d messages stored, want 2", len(got))
	}
}

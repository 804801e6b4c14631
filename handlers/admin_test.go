package handlers_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/web/limit"
)

// emptySite takes the package keyspace's site back to no administrator
// (unclaimed: the row keeps only its default rooms, which the package
// set before any sign-up), as on an empty installation, and gives it back to the
// other tests with open sign-up when the test ends. A test that calls it
// is serial: Go runs the serial tests before the parallel ones, so no
// other test signs up meanwhile.
func emptySite(t *testing.T) {
	t.Helper()
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	drop := func() {
		if err := sess.Query(`DELETE admins, version, established, created_at, signup_policy, signup_domains, room_creation
			FROM site WHERE id = 'site' IF EXISTS`).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	drop()
	t.Cleanup(drop)
}

// makeAdmin makes c's person an administrator, as the command line does.
func makeAdmin(t *testing.T, st *store.Store, c *client) {
	t.Helper()
	if _, err := st.SetAdmin(ctxT(t), c.login, true); err != nil {
		t.Fatal(err)
	}
}

func auditHas(t *testing.T, c *client, actor, action, target string) {
	t.Helper()
	p := c.get("/admin/audit")
	found := false
	rows := p.doc.Find("table.audit tbody tr")
	for i := range rows.Nodes {
		row := rows.Eq(i)
		if strings.TrimSpace(row.Find(".actor").Text()) == actor && strings.TrimSpace(row.Find(".action").Text()) == action &&
			strings.TrimSpace(row.Find(".target").Text()) == target {
			if _, ok := row.Find("time").Attr("datetime"); ok {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("the audit log lacks %s %s %s:\n%s", actor, action, target, text(p, "table.audit"))
	}
}

func TestFirstSignUpIsAdministrator(t *testing.T) {
	emptySite(t)
	a, d := newApp(t, nil, nil), db
	visitor := a.client(t)
	if note := text(visitor.get("/signup"), "#signup-note"); !strings.Contains(note, "administrator") {
		t.Fatalf("the sign-up page of an empty site does not say the first person becomes its administrator: %q", note)
	}
	// Racing first sign-ups: exactly one becomes the administrator.
	const n = 8
	clients := make([]*client, n)
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = a.client(t)
		clients[i].login = unique("first")
		clients[i].ensureCSRF()
		wg.Add(1)
		go func(c *client) {
			defer wg.Done()
			if p := c.post("/signup", signupForm(c.login, "password1")); p.StatusCode != http.StatusSeeOther {
				t.Errorf("sign up %s: %d", c.login, p.StatusCode)
			}
		}(clients[i])
	}
	wg.Wait()
	site, err := d.Site(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(site.Admins) != 1 {
		t.Fatalf("%d racing first sign-ups made administrators %v, want one", n, site.Admins)
	}
	var admin *client
	for _, c := range clients {
		code := c.get("/admin").StatusCode
		if site.IsAdmin(c.login) {
			admin = c
			if code != http.StatusOK {
				t.Fatalf("the administrator gets /admin: %d", code)
			}
		} else if code != http.StatusNotFound {
			t.Fatalf("%s, not an administrator, gets /admin: %d", c.login, code)
		}
	}
	if admin.get("/profile").doc.Find(`#admin-link a[href="/admin"]`).Length() != 1 {
		t.Error("the administrator's profile page does not link to /admin")
	}
	if clients[0] != admin && clients[0].get("/profile").doc.Find("#admin-link").Length() != 0 {
		t.Error("a profile page of someone who is not an administrator links to /admin")
	}
	if note := text(visitor.get("/signup"), "#signup-note"); note != "" {
		t.Fatalf("the sign-up page still says %q once the site has an administrator", note)
	}
	second := a.signedUp(t, unique("second"))
	if p := second.get("/admin"); p.StatusCode != http.StatusNotFound {
		t.Fatalf("a later sign-up gets /admin: %d", p.StatusCode)
	}
	auditHas(t, admin, admin.login, chat.AuditFirstAdmin, admin.login)

	t.Run("LastAdministratorStays", func(t *testing.T) {
		for _, action := range []string{"demote", "deactivate"} {
			p := admin.post("/admin/people/"+admin.login+"/"+action, nil)
			if p.StatusCode != http.StatusConflict || !strings.Contains(text(p, ".notice"), "at least one administrator") {
				t.Fatalf("%s of the last administrator: %d %q", action, p.StatusCode, text(p, ".notice"))
			}
		}
		if site, _ := d.Site(ctxT(t)); len(site.Admins) != 1 || !site.IsAdmin(admin.login) {
			t.Fatalf("the administrators after refusals: %v", site.Admins)
		}
		if p := admin.post("/admin/people/"+second.login+"/promote", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("promote: %d %s", p.StatusCode, text(p, "main"))
		}
		if p := admin.post("/admin/people/"+admin.login+"/demote", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("demote oneself beside another administrator: %d %s", p.StatusCode, text(p, "main"))
		}
		if p := admin.get("/admin"); p.StatusCode != http.StatusNotFound {
			t.Fatalf("a demoted administrator gets /admin: %d", p.StatusCode)
		}
		auditHas(t, second, admin.login, chat.AuditPromote, second.login)
		auditHas(t, second, admin.login, chat.AuditDemote, admin.login)

		// Two administrators demote each other at once: the site keeps
		// one (the LWTs on the row's version).
		for round := range 10 {
			if _, err := d.SetAdmin(ctxT(t), admin.login, true); err != nil {
				t.Fatal(err)
			}
			errs := make(chan error, 2)
			for _, who := range []string{admin.login, second.login} {
				go func() { _, err := d.SetAdmin(ctxT(t), who, false); errs <- err }()
			}
			refused := 0
			for range 2 {
				if err := <-errs; errors.Is(err, chat.ErrLastAdmin) {
					refused++
				} else if err != nil {
					t.Fatal(err)
				}
			}
			site, err := d.Site(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(site.Admins) != 1 || refused != 1 {
				t.Fatalf("round %d: racing demotions left %v (%d refused)", round, site.Admins, refused)
			}
			if _, err := d.SetAdmin(ctxT(t), second.login, true); err != nil {
				t.Fatal(err)
			}
			if _, err := d.SetAdmin(ctxT(t), admin.login, false); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("Policies", func(t *testing.T) { signupPolicies(t, a, second) })
}

// signupPolicies changes the sign-up policy of a's site as admin.
func signupPolicies(t *testing.T, a *app, admin *client) {
	settings := func(policy, domains string) {
		t.Helper()
		p := admin.post("/admin/settings", url.Values{"signup_policy": {policy}, "domains": {domains}, "room_creation": {chat.RoomsByEveryone}})
		if p.StatusCode != http.StatusSeeOther {
			t.Fatalf("settings %s: %d %s", policy, p.StatusCode, text(p, "main"))
		}
	}
	// A bad form changes nothing.
	if p := admin.post("/admin/settings", url.Values{"signup_policy": {"nobody"}, "room_creation": {"x"}}); p.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("bad settings: %d", p.StatusCode)
	}
	existing := a.signedUp(t, unique("before"))
	settings(chat.SignupInvite, "")
	// Changing the policy does not touch the accounts there are.
	if p := a.client(t).post("/login", url.Values{"login": {existing.login}, "password": {"password1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("an existing account's login under the invitation policy: %d", p.StatusCode)
	}
	if p := existing.get("/"); p.StatusCode != http.StatusOK {
		t.Fatalf("an existing session under the invitation policy: %d", p.StatusCode)
	}
	if p := a.client(t).post("/signup", signupForm(unique("nolink"), "password1")); p.StatusCode != http.StatusForbidden ||
		!strings.Contains(text(p, "main"), "invitation only") {
		t.Fatalf("sign-up without a link under the invitation policy: %d %q", p.StatusCode, text(p, "main"))
	}
	p := admin.post("/admin/invites", url.Values{"expires_hours": {"24"}, "max_uses": {"5"}})
	link, _ := p.doc.Find("#new-link").Attr("value")
	if p.StatusCode != http.StatusOK || !strings.Contains(link, "/signup?invite=") {
		t.Fatalf("make a sign-up link: %d %q", p.StatusCode, link)
	}
	token := link[strings.Index(link, "invite=")+len("invite="):]
	invites, err := db.SiteInvites(ctxT(t))
	if err != nil || len(invites) == 0 {
		t.Fatalf("the sign-up links: %v %v", invites, err)
	}
	auditHas(t, admin, admin.login, chat.AuditSiteInvite, invites[len(invites)-1].ID)
	// 20 racing sign-ups by a link of 5 uses: exactly 5 get in.
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		in int
	)
	for range 20 {
		c := a.client(t)
		c.ensureCSRF()
		wg.Add(1)
		go func() {
			defer wg.Done()
			form := signupForm(unique("invited"), "password1")
			form.Set("invite", token)
			switch p := c.post("/signup", form); p.StatusCode {
			case http.StatusSeeOther:
				mu.Lock()
				in++
				mu.Unlock()
			case http.StatusForbidden, http.StatusNotFound:
			default:
				t.Errorf("a racing sign-up: %d %s", p.StatusCode, text(p, "main"))
			}
		}()
	}
	wg.Wait()
	if in != 5 {
		t.Fatalf("%d of 20 racing sign-ups got in by a link of 5 uses", in)
	}

	settings(chat.SignupDomains, "example.com, @Example.org")
	form := signupForm(unique("other"), "password1")
	form.Set("email", "someone@elsewhere.net")
	if p := a.client(t).post("/signup", form); p.StatusCode != http.StatusUnprocessableEntity ||
		!strings.Contains(text(p, "main"), "example.com, example.org") {
		t.Fatalf("sign-up from another domain: %d %q", p.StatusCode, text(p, "main"))
	}
	form.Set("email", "someone@EXAMPLE.org")
	form.Del("_csrf")
	if p := a.client(t).post("/signup", form); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-up from an allowed domain: %d %s", p.StatusCode, text(p, "main"))
	}
	auditHas(t, admin, admin.login, chat.AuditSettings, "")
	settings(chat.SignupOpen, "")

	// Rooms by administrators only: anyone else is refused with a
	// sentence; an administrator creates one.
	p = admin.post("/admin/settings", url.Values{"signup_policy": {chat.SignupOpen}, "room_creation": {chat.RoomsByAdmins}})
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("rooms by administrators: %d", p.StatusCode)
	}
	name := unique("byadmin")
	if p := existing.post("/rooms", url.Values{"room_name": {name}}); p.StatusCode != http.StatusForbidden ||
		!strings.Contains(text(p, "main"), "only administrators create rooms") {
		t.Fatalf("a room by a non-administrator: %d %q", p.StatusCode, text(p, "main"))
	}
	if _, err := db.Room(ctxT(t), name); err == nil {
		t.Fatal("the refused room exists")
	}
	if p := admin.post("/rooms", url.Values{"room_name": {name}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("a room by an administrator: %d %s", p.StatusCode, text(p, "main"))
	}
	settings(chat.SignupOpen, "")
	if p := existing.post("/rooms", url.Values{"room_name": {unique("byanyone")}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("a room by anyone again: %d", p.StatusCode)
	}
}

func cloneForm(f url.Values) url.Values {
	out := url.Values{}
	for k, v := range f {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func TestAdminRoutesAreNotFoundForOthers(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	target := a.signedUp(t, unique("tgt"))
	other := a.signedUp(t, unique("oth"))
	visitor := a.client(t)
	before, err := db.Site(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	routes := []struct{ method, path string }{
		{"GET", "/admin"},
		{"GET", "/admin?q=a"},
		{"GET", "/admin/audit"},
		{"POST", "/admin/settings"},
		{"POST", "/admin/invites"},
		{"POST", "/admin/default-rooms"},
	}
	for _, action := range []string{"deactivate", "reactivate", "promote", "demote", "end-sessions", "reset-link"} {
		routes = append(routes, struct{ method, path string }{"POST", "/admin/people/" + target.login + "/" + action})
	}
	form := url.Values{"signup_policy": {chat.SignupInvite}, "room_creation": {chat.RoomsByAdmins}, "max_uses": {"3"}, "rooms": {"lobby"}}
	for _, who := range []*client{other, visitor} {
		for _, r := range routes {
			var p page
			if r.method == "GET" {
				p = who.get(r.path)
			} else {
				p = who.post(r.path, cloneForm(form))
			}
			if p.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s by a non-administrator %q: %d %s", r.method, r.path, who.login, p.StatusCode, text(p, "main"))
			}
		}
	}
	// Nothing changed: the target still acts, the site is as it was, and
	// the audit log has nothing by them.
	if p := target.get("/"); p.StatusCode != http.StatusOK {
		t.Fatalf("the target after refused actions: %d", p.StatusCode)
	}
	after, err := db.Site(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if after.Policy() != before.Policy() || after.Rooms() != before.Rooms() || after.IsAdmin(target.login) {
		t.Fatalf("the site changed: %+v -> %+v", before, after)
	}
	entries, err := db.AuditLog(ctxT(t), chat.ID{}, time.Time{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Actor == other.login || e.Target == target.login {
			t.Fatalf("the audit log has %+v", e)
		}
	}
	// The administrator's own page works.
	if p := admin.get("/admin?q=" + target.login[:4]); p.StatusCode != http.StatusOK ||
		p.doc.Find(`tr[data-login="`+target.login+`"]`).Length() != 1 {
		t.Fatalf("the administrator finds %s: %d", target.login, p.StatusCode)
	}
}

func TestAdminActionsAreRateLimited(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.Limits.Admin = limit.Rate{Burst: 2, Per: time.Hour} })
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	target := a.signedUp(t, unique("tgt"))
	for i := range 2 {
		if p := admin.post("/admin/people/"+target.login+"/end-sessions", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("action %d: %d", i, p.StatusCode)
		}
	}
	if p := admin.post("/admin/people/"+target.login+"/deactivate", nil); p.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third action within the limit of 2: %d", p.StatusCode)
	}
	if u, err := db.User(ctxT(t), target.login); err != nil || !u.Active() {
		t.Fatalf("a refused deactivation changed the account: %+v %v", u, err)
	}
}

func TestResetLink(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	person := a.signedUp(t, unique("fgt"))
	// A second session of theirs, on another browser.
	second := a.client(t)
	if p := second.post("/login", url.Values{"login": {person.login}, "password": {"password1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", p.StatusCode)
	}
	p := admin.post("/admin/people/"+person.login+"/reset-link", nil)
	link, _ := p.doc.Find("#new-link").Attr("value")
	if p.StatusCode != http.StatusOK || !strings.Contains(link, "/reset/") {
		t.Fatalf("reset link: %d %q", p.StatusCode, link)
	}
	path := link[strings.Index(link, "/reset/"):]
	if len(path)-len("/reset/") < 43 { // 256 bits, base64
		t.Fatalf("a short token: %q", path)
	}
	stranger := a.client(t)
	if p := stranger.get(path); p.StatusCode != http.StatusOK {
		t.Fatalf("open the link: %d", p.StatusCode)
	}
	// A bad password leaves the link unspent.
	if p := stranger.post(path, url.Values{"password": {"short"}, "password_confirm": {"short"}}); p.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a short password: %d", p.StatusCode)
	}
	if p := stranger.post(path, url.Values{"password": {"brand-new-1"}, "password_confirm": {"brand-new-1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("set the password: %d %s", p.StatusCode, text(p, "main"))
	}
	for i, c := range []*client{person, second} {
		if p := c.get("/"); p.StatusCode != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/login") {
			t.Fatalf("session %d after the reset: %d", i, p.StatusCode)
		}
	}
	if p := a.client(t).post("/login", url.Values{"login": {person.login}, "password": {"brand-new-1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("login with the new password: %d", p.StatusCode)
	}
	refusal := func(p page) string { return text(p, "main") }
	used := stranger.post(path, url.Values{"password": {"another-1"}, "password_confirm": {"another-1"}})
	guessed := stranger.get("/reset/" + strings.Repeat("A", 43))
	if used.StatusCode != http.StatusNotFound || guessed.StatusCode != http.StatusNotFound || refusal(used) != refusal(guessed) {
		t.Fatalf("second use %d %q, guessed %d %q", used.StatusCode, refusal(used), guessed.StatusCode, refusal(guessed))
	}
	// Expired: the same link a day and an hour later.
	token, err := db.CreateResetLink(ctxT(t), admin.login, person.login)
	if err != nil {
		t.Fatal(err)
	}
	later, err := db.Another()
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	later.Now = func() time.Time { return time.Now().Add(25 * time.Hour) }
	if _, err := later.UseResetLink(ctxT(t), token); !errors.Is(err, chat.ErrLinkRefused) {
		t.Fatalf("an expired link: %v", err)
	}
	auditHas(t, admin, admin.login, chat.AuditResetLink, person.login)
}

// TestDeactivationAcrossInstances: an administrator on A deactivates a
// person who holds a session and a live stream on B.
func TestDeactivationAcrossInstances(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	person := b.signedUp(t, unique("leaver"))
	room := roomWith(t, admin.on(b), person)
	roomStream := person.subscribe(t, room, "")
	personal := person.subscribePath(t, "/events?b=deactivated&c="+url.QueryEscape(room+"@"), "")
	postMessage(t, person, room, "before")
	if err := db.SavePushSubscription(ctxT(t), person.login, chat.PushSubscription{
		Endpoint: "https://push.example.com/" + person.login, P256dh: "key", Auth: "auth"}); err != nil {
		t.Fatal(err)
	}

	if p := admin.post("/admin/people/"+person.login+"/deactivate", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("deactivate: %d %s", p.StatusCode, text(p, "main"))
	}
	if subs, err := db.PushSubscriptions(ctxT(t), person.login); err != nil || len(subs) != 0 {
		t.Errorf("their push subscriptions after the deactivation: %v %v", subs, err)
	}
	// Both streams end within a second, and send their pages to the
	// login page with the sentence.
	for name, s := range map[string]*stream{"room": roomStream, "personal": personal} {
		if to := s.endsGoingTo(t, time.Second); to != "/login?notice=deactivated" {
			t.Errorf("the %s stream's end sends its page to %q", name, to)
		}
	}
	if p := person.get("/"); p.StatusCode != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/login") {
		t.Fatalf("their next request on B: %d", p.StatusCode)
	}
	r, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := db.Standing(ctxT(t), r, person.login); err != nil || st.Member {
		t.Fatalf("still a member after deactivation: %v %v", st, err)
	}
	login := b.client(t)
	p := login.post("/login", url.Values{"login": {person.login}, "password": {"password1"}})
	if p.StatusCode != http.StatusForbidden || !strings.Contains(text(p, "main"), "deactivated") {
		t.Fatalf("login of a deactivated account: %d %q", p.StatusCode, text(p, "main"))
	}
	// Their messages stay.
	msgs, _, err := db.MessagesBefore(ctxT(t), r, chat.ID{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	kept := false
	for _, m := range msgs {
		kept = kept || (m.Content == "before" && m.Author.Login == person.login)
	}
	if !kept {
		t.Fatal("their message is gone")
	}
	if p := admin.get("/rooms/" + room); p.doc.Find(`li.message[data-author="`+person.login+`"] .closed-mark`).Length() == 0 {
		t.Errorf("their message carries no deactivated mark:\n%s", text(p, "#messages"))
	}
	auditHas(t, admin, admin.login, chat.AuditDeactivate, person.login)

	// Reactivated, they log in again; the room stays left.
	if p := admin.post("/admin/people/"+person.login+"/reactivate", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("reactivate: %d", p.StatusCode)
	}
	if p := login.post("/login", url.Values{"login": {person.login}, "password": {"password1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("login after reactivation: %d %s", p.StatusCode, text(p, "main"))
	}
	if st, _ := db.Standing(ctxT(t), r, person.login); st.Member {
		t.Fatal("reactivation restored a membership")
	}
	auditHas(t, admin, admin.login, chat.AuditReactivate, person.login)
}

// TestDeactivationRacingAPost: a post the person makes on B 0 to 50 ms
// after the deactivation on A answered never becomes visible, in 100
// rounds, each with a new person.
func TestDeactivationRacingAPost(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	room := createRoom(t, admin)
	// A DM with the admin too: it takes no new message either.
	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		person := b.signedUp(t, unique(fmt.Sprintf("racer%x_", rand.IntN(1<<20))))
		if p := person.post("/rooms/"+room+"/join", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("join: %d", p.StatusCode)
		}
		postMessage(t, person, room, "warm")
		dm, err := chat.DMAddress([]string{admin.login, person.login})
		if err != nil {
			t.Fatal(err)
		}
		if p := person.post("/dm/"+dm+"/messages", url.Values{"content": {"hello"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("dm: %d %s", p.StatusCode, text(p, "main"))
		}
		if p := admin.post("/admin/people/"+person.login+"/deactivate", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("round %d: deactivate: %d %s", round, p.StatusCode, text(p, "main"))
		}
		time.Sleep(time.Duration(rand.IntN(51)) * time.Millisecond)
		content := fmt.Sprintf("after %d", round)
		var wg sync.WaitGroup
		for _, path := range []string{"/rooms/" + room + "/messages", "/dm/" + dm + "/messages"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := person.post(path, url.Values{"content": {content}})
				if p.StatusCode < 300 || (p.StatusCode == http.StatusSeeOther && !strings.HasPrefix(p.Header.Get("Location"), "/login")) {
					t.Errorf("round %d: a post to %s after the deactivation answered: %d %s", round, path, p.StatusCode, p.Header.Get("Location"))
				}
			}()
		}
		wg.Wait()
		// The admin's DM page shows no such message; neither does the room.
		for _, path := range []string{"/rooms/" + room, "/dm/" + dm} {
			if p := admin.get(path); strings.Contains(p.body, content) {
				t.Fatalf("round %d: %s shows %q", round, path, content)
			}
		}
	}
	// A DM with a deactivated person takes no new messages from the
	// others either.
	person := b.signedUp(t, unique(fmt.Sprintf("dmgone%x_", rand.IntN(1<<20))))
	dm, _ := chat.DMAddress([]string{admin.login, person.login})
	if p := admin.post("/admin/people/"+person.login+"/deactivate", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("deactivate: %d", p.StatusCode)
	}
	if p := admin.post("/dm/"+dm+"/messages", url.Values{"content": {"anyone?"}}); p.StatusCode != http.StatusForbidden {
		t.Fatalf("a post to a DM with a deactivated person: %d", p.StatusCode)
	}
	// Nor a file, nor the composer's form for files with none.
	for _, u := range []upload{
		{csrf: admin.ensureCSRF(), content: "a file", files: map[string]io.Reader{"notes.txt": strings.NewReader("notes")}, order: []string{"notes.txt"}},
		{csrf: admin.ensureCSRF(), content: "no file", files: map[string]io.Reader{}},
	} {
		resp, err := admin.upload("/dm/"+dm+"/messages", u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a file form (%q) to a DM with a deactivated person: %d", u.content, resp.StatusCode)
		}
	}
	if p := admin.get("/dm/" + dm); strings.Contains(p.body, "notes.txt") || strings.Contains(p.body, "no file") {
		t.Fatal("the DM shows a file or text posted after its member's account was closed")
	}
	if p := admin.get("/dm/" + dm); p.StatusCode != http.StatusOK {
		t.Fatalf("the DM stays readable: %d", p.StatusCode)
	}
}

func TestDeleteOwnAccount(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner := a.signedUp(t, unique("own"))
	person := a.signedUp(t, unique("del"))
	room := roomWith(t, owner, person)
	postMessage(t, person, room, "my last words")
	other := a.client(t)
	if p := other.post("/login", url.Values{"login": {person.login}, "password": {"password1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", p.StatusCode)
	}
	if p := person.post("/profile/delete", url.Values{"password": {"wrong-one"}}); p.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("delete with a wrong password: %d", p.StatusCode)
	}
	if p := person.post("/profile/delete", url.Values{"password": {"password1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", p.StatusCode, text(p, "main"))
	}
	for i, c := range []*client{person, other} {
		if p := c.get("/"); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("session %d after the deletion: %d", i, p.StatusCode)
		}
	}
	u, err := db.User(ctxT(t), person.login)
	if err != nil {
		t.Fatal(err)
	}
	if u.Status != chat.AccountDeleted || u.Firstname != "" || u.Email != "" || len(u.ChatRooms) != 0 {
		t.Fatalf("the profile after deletion: %+v", u)
	}
	p := owner.get("/rooms/" + room)
	msg := p.doc.Find(`li.message[data-author="` + person.login + `"]`)
	if !strings.Contains(msg.Text(), "my last words") || msg.Find(".deleted-user").Length() == 0 || strings.Contains(msg.Find(".author").Text(), "Lovelace") {
		t.Fatalf("their message after deletion: %q", msg.Text())
	}
	if p := a.client(t).post("/login", url.Values{"login": {person.login}, "password": {"password1"}}); p.StatusCode != http.StatusUnauthorized {
		t.Fatalf("login of a deleted account: %d", p.StatusCode)
	}
	if p := a.client(t).post("/signup", signupForm(person.login, "password1")); p.StatusCode != http.StatusConflict {
		t.Fatalf("sign-up under a deleted login: %d", p.StatusCode)
	}
	makeAdmin(t, db.Store, owner)
	auditHas(t, owner, person.login, chat.AuditDeleteSelf, person.login)
}

// TestDeactivationRacingALogin: a login on B racing a deactivation on A
// never leaves a session that works afterwards.
func TestDeactivationRacingALogin(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	raceDeactivation(t, a, b, "login", func(person *client) (func(), func(int)) {
		fresh := b.client(t)
		fresh.ensureCSRF()
		return func() {
				fresh.post("/login", url.Values{"login": {person.login}, "password": {"password1"}})
			}, func(round int) {
				for i, c := range []*client{person, fresh} {
					if p := c.get("/"); p.StatusCode != http.StatusSeeOther {
						t.Fatalf("round %d: session %d works after the deactivation: %d", round, i, p.StatusCode)
					}
				}
			}
	})
}

// raceDeactivation runs 20 rounds: a new person on b does what race
// gives (after 0 to 20 ms) while an administrator on a deactivates them;
// then what race gives second checks what is left.
func raceDeactivation(t *testing.T, a, b *app, prefix string, race func(person *client) (do func(), check func(round int))) {
	t.Helper()
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	for round := range 20 {
		person := b.signedUp(t, unique(fmt.Sprintf("%s%x_", prefix, rand.IntN(1<<20))))
		person.ensureCSRF()
		admin.ensureCSRF()
		do, check := race(person)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
			do()
		}()
		go func() {
			defer wg.Done()
			if p := admin.post("/admin/people/"+person.login+"/deactivate", nil); p.StatusCode != http.StatusSeeOther {
				t.Errorf("round %d: deactivate: %d", round, p.StatusCode)
			}
		}()
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		check(round)
	}
}

// endsGoingTo waits for s to end within the time given, and returns where
// its last "stream-end" event sends the page (the data after the
// conversation line of a personal stream's).
func (s *stream) endsGoingTo(t testing.TB, within time.Duration) string {
	t.Helper()
	timeout := time.After(within)
	to := "(no stream-end event)"
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return to
			}
			if ev.name == "stream-end" {
				_, after, wide := strings.Cut(ev.data, "\n")
				if to = ev.data; wide {
					to = after
				}
			}
		case <-timeout:
			t.Fatalf("the stream is still open after %v", within)
		}
	}
}

// TestClosedAccountsDMFiles: a deactivated person's files in DMs stay
// readable to the others (the DM stays readable); a deleted person's
// files in DMs go (the messages say the file was removed), theirs in
// rooms and the others' in the DM stay.
func TestClosedAccountsDMFiles(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner := a.signedUp(t, unique("fown"))
	makeAdmin(t, db.Store, owner)
	person := a.signedUp(t, unique("fdel"))
	room := roomWith(t, owner, person)
	addr, err := chat.DMAddress([]string{owner.login, person.login})
	if err != nil {
		t.Fatal(err)
	}
	send := func(c *client, base, name string, body []byte) {
		t.Helper()
		resp, err := c.upload(base+"/messages", upload{csrf: c.ensureCSRF(), files: map[string]io.Reader{name: bytes.NewReader(body)}, order: []string{name}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("upload %s to %s: %d", name, base, resp.StatusCode)
		}
	}
	send(person, "/dm/"+addr, "private.txt", []byte("for your eyes"))
	send(person, "/dm/"+addr, "photo.png", pngImage(900, 700))
	send(owner, "/dm/"+addr, "reply.txt", []byte("thanks"))
	send(person, "/rooms/"+room, "shared.txt", []byte("for the team"))

	// Every file link and preview on a page, by the file's name.
	files := func(path string) map[string][]string {
		t.Helper()
		out := map[string][]string{}
		p := owner.get(path)
		p.doc.Find("li.message").Each(func(_ int, li *goquery.Selection) {
			name := strings.TrimSpace(li.Find("a.attachment-name").Text())
			if name == "" {
				return
			}
			li.Find("a.attachment-name").Each(func(_ int, a *goquery.Selection) { out[name] = append(out[name], a.AttrOr("href", "")) })
			li.Find(".attachment-preview img").Each(func(_ int, a *goquery.Selection) { out[name] = append(out[name], a.AttrOr("src", "")) })
		})
		return out
	}
	status := func(href string) int {
		t.Helper()
		r, err := owner.http.Get(owner.base + href)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	dmFiles, roomFiles := files("/dm/"+addr), files("/rooms/"+room)
	if len(dmFiles) != 3 || len(dmFiles["photo.png"]) != 2 || len(roomFiles) != 1 {
		t.Fatalf("the files shown: DM %v, room %v", dmFiles, roomFiles)
	}

	// Deactivated: the DM, its files with it, stays readable.
	if p := owner.post("/admin/people/"+person.login+"/deactivate", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("deactivate: %d", p.StatusCode)
	}
	for name, hrefs := range dmFiles {
		for _, h := range hrefs {
			if got := status(h); got != http.StatusOK {
				t.Errorf("%s (%s) after the deactivation: %d", name, h, got)
			}
		}
	}
	if p := owner.post("/admin/people/"+person.login+"/reactivate", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("reactivate: %d", p.StatusCode)
	}

	// Deleted: their DM files go, with their previews.
	again := a.login(t, person.login)
	if p := again.post("/profile/delete", url.Values{"password": {"password1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", p.StatusCode, text(p, "main"))
	}
	for _, name := range []string{"private.txt", "photo.png"} {
		for _, h := range dmFiles[name] {
			if got := status(h); got != http.StatusNotFound {
				t.Errorf("%s (%s) after the deletion: %d, want 404", name, h, got)
			}
		}
	}
	for name, hrefs := range map[string][]string{"reply.txt": dmFiles["reply.txt"], "shared.txt": roomFiles["shared.txt"]} {
		for _, h := range hrefs {
			if got := status(h); got != http.StatusOK {
				t.Errorf("%s (%s), not theirs in a DM, after the deletion: %d", name, h, got)
			}
		}
	}
	if n := listed(t, chat.DMPrefix+addr); n != 1 {
		t.Errorf("the DM lists %d files after the deletion, want the other's one", n)
	}
	p := owner.get("/dm/" + addr)
	removed := p.doc.Find(`li.message[data-author="` + person.login + `"] .attachment-removed`)
	if removed.Length() != 2 || !strings.Contains(removed.First().Text(), "file removed") || p.doc.Find("a.attachment-name").Length() != 1 {
		t.Errorf("the DM after the deletion shows %d removed files, %d links:\n%s", removed.Length(),
			p.doc.Find("a.attachment-name").Length(), text(p, "#messages"))
	}
	if got := files("/rooms/" + room); len(got["shared.txt"]) != 1 {
		t.Errorf("the room's file after the deletion: %v", got)
	}
}

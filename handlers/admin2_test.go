package handlers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/cmd"
	"github.com/killrchat/killrchat/store/storetest"
)

// TestAdminCommand: `killrchat admin create-admin|promote|demote` on the
// configuration the server uses: create-admin makes an account with a
// password printed once, which logs in and gets /admin; promote and
// demote change who gets it; demoting the last administrator and an
// unknown login are each refused in one sentence; the audit log shows
// each, by "(command line)". Serial: it empties the site.
func TestAdminCommand(t *testing.T) {
	emptySite(t)
	a := newApp(t, nil, nil)
	run := func(args ...string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var stdout, stderr bytes.Buffer
		args = append(args, "--cassandra-hosts", strings.Join(storetest.Hosts(), ","), "--cassandra-keyspace", db.Keyspace,
			"--cassandra-timeout", "30s")
		code := cmd.Execute(ctx, args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	login := unique("cliadm")
	code, stdout, stderr := run("admin", "create-admin", login)
	m := regexp.MustCompile(`created the account (\S+) with the password (\S+) \(shown once`).FindStringSubmatch(stdout)
	if code != 0 || m == nil || m[1] != login || !strings.Contains(stdout, login+" is an administrator") {
		t.Fatalf("create-admin: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	admin := a.client(t)
	if p := admin.post("/login", url.Values{"login": {login}, "password": {m[2]}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("log in with the printed password: %d", p.StatusCode)
	}
	admin.login = login
	if p := admin.get("/admin"); p.StatusCode != http.StatusOK {
		t.Fatalf("the new administrator gets /admin: %d", p.StatusCode)
	}
	other := a.signedUp(t, unique("clioth"))
	if p := other.get("/admin"); p.StatusCode != http.StatusNotFound {
		t.Fatalf("a sign-up after create-admin gets /admin: %d", p.StatusCode)
	}
	if code, stdout, stderr := run("admin", "promote", other.login); code != 0 || stdout != other.login+" is an administrator\n" {
		t.Fatalf("promote: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := run("admin", "demote", login); code != 0 {
		t.Fatalf("demote: exit %d, stderr %q", code, stderr)
	}
	if p := admin.get("/admin"); p.StatusCode != http.StatusNotFound {
		t.Fatalf("a demoted administrator gets /admin: %d", p.StatusCode)
	}
	refusals := map[string][]string{
		"admin demote " + other.login + ": refused: this is the last administrator; promote someone else first\n": {"admin", "demote", other.login},
		"admin promote nobody404: there is no account with this login\n":                                          {"admin", "promote", "nobody404"},
	}
	for want, args := range refusals {
		// The store's start-up may log before it (level INFO).
		if code, stdout, stderr := run(args...); code != 1 || stdout != "" || !(stderr == want || strings.HasSuffix(stderr, "\n"+want)) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 and the last line %q", args, code, stdout, stderr, want)
		}
	}
	if p := other.get("/admin"); p.StatusCode != http.StatusOK {
		t.Fatalf("the last administrator after a refused demotion: %d", p.StatusCode)
	}
	auditHas(t, other, "(command line)", chat.AuditCreateAdmin, login)
	auditHas(t, other, "(command line)", chat.AuditPromote, other.login)
	auditHas(t, other, "(command line)", chat.AuditDemote, login)
}

// TestAdminsAreNotModerators: an administrator of the site who is not in
// a closed room gets 404 for it as anyone does, and cannot join it,
// delete it or change its members.
func TestAdminsAreNotModerators(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	admin := a.signedUp(t, unique("nmadm"))
	makeAdmin(t, db.Store, admin)
	owner := a.signedUp(t, unique("nmown"))
	member := a.signedUp(t, unique("nmmem"))
	room := closedRoomBy(t, owner, member)
	if p := admin.get("/rooms/" + room); p.StatusCode != http.StatusNotFound {
		t.Fatalf("an administrator outside a closed room gets it: %d", p.StatusCode)
	}
	for _, path := range []string{"/join", "/delete", "/messages", "/members", "/members/" + member.login + "/remove", "/kind"} {
		form := url.Values{"content": {"hello"}, "login": {admin.login}, "kind": {"open"}}
		if p := admin.post("/rooms/"+room+path, form); p.StatusCode < 400 {
			t.Errorf("POST %s by an administrator outside the room: %d", path, p.StatusCode)
		}
	}
	r, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatalf("the room after the administrator's tries: %v", err)
	}
	if st, _ := db.Standing(ctxT(t), r, admin.login); st.Member {
		t.Fatal("the administrator got into the closed room")
	}
	if st, _ := db.Standing(ctxT(t), r, member.login); !st.Member {
		t.Fatal("the member was removed by the administrator")
	}
}

// letters is n random lower-case letters: a name part no other test has.
func letters(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rand.IntN(26))
	}
	return string(b)
}

// TestAdminFindsPeople: the administration page finds people by the start
// of their login, first name, last name or email, pages them 25 at a
// time, and shows each one's sessions (count, last seen) and rooms.
func TestAdminFindsPeople(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	admin := a.signedUp(t, unique("fpadm"))
	makeAdmin(t, db.Store, admin)
	tag := letters(8)
	first, last, email := "Fn"+tag, "Ln"+tag, "em"+tag
	prefix := "pg" + tag
	var logins []string
	for i := range 27 {
		login := fmt.Sprintf("%s%02d", prefix, i)
		f := chat.SignUp{Login: login, Password: "password1", PasswordConfirm: "password1", Firstname: "Ada", Lastname: "Lovelace"}
		if i == 0 {
			f.Firstname, f.Lastname, f.Email = first, last, email+"@example.com"
		}
		if _, err := db.CreateUser(ctxT(t), f); err != nil {
			t.Fatal(err)
		}
		logins = append(logins, login)
	}
	found := func(p page) []string {
		var out []string
		p.doc.Find("#admin-page table.people tbody tr").Each(func(_ int, s *goquery.Selection) { out = append(out, s.AttrOr("data-login", "")) })
		return out
	}
	for what, q := range map[string]string{"first name": strings.ToLower(first[:6]), "last name": last, "email": email} {
		if got := found(admin.get("/admin?q=" + url.QueryEscape(q))); len(got) != 1 || got[0] != logins[0] {
			t.Errorf("by %s %q: %v", what, q, got)
		}
	}
	p := admin.get("/admin?q=" + prefix)
	page1 := found(p)
	next, ok := p.doc.Find(`#admin-page a[rel="next"]`).Attr("href")
	if len(page1) != 25 || !ok {
		t.Fatalf("the first page: %d people, next %q", len(page1), next)
	}
	page2 := found(admin.get(next))
	all := map[string]bool{}
	for _, l := range append(page1, page2...) {
		all[l] = true
	}
	if len(page2) != 2 || len(all) != 27 {
		t.Fatalf("the pages hold %d and %d people, %d different", len(page1), len(page2), len(all))
	}
	// Sessions and rooms: the administrator's own row.
	createRoom(t, admin)
	row := admin.get("/admin?q=" + admin.login).doc.Find(`#admin-page tr[data-login="` + admin.login + `"]`)
	cells := row.Find("td")
	if sessions := strings.TrimSpace(cells.Eq(2).Text()); !strings.HasPrefix(sessions, "1") || row.Find("time[datetime]").Length() != 1 {
		t.Errorf("the sessions cell: %q", sessions)
	}
	if rooms := strings.TrimSpace(cells.Eq(3).Text()); rooms != "1" {
		t.Errorf("the rooms cell: %q", rooms)
	}
	// Ending someone's sessions is in the audit log.
	target := a.signedUp(t, unique("fpend"))
	if p := admin.post("/admin/people/"+target.login+"/end-sessions", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("end sessions: %d", p.StatusCode)
	}
	if p := target.get("/"); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("a session after end-sessions: %d", p.StatusCode)
	}
	auditHas(t, admin, admin.login, chat.AuditEndSessions, target.login)
}

// TestAdminFormsValidated: every administrative form refuses bad input
// with a sentence and changes nothing; every one needs the CSRF token.
func TestAdminFormsValidated(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	admin := a.signedUp(t, unique("fvadm"))
	makeAdmin(t, db.Store, admin)
	target := a.signedUp(t, unique("fvtgt"))
	site, err := db.Site(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	invites, err := db.SiteInvites(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		form       url.Values
		status     int
		sel, says  string
	}{
		{"NoPolicy", "/admin/settings", url.Values{"room_creation": {"everyone"}}, 422, "#err-signup_policy", "Choose open, by invitation"},
		{"BadPolicy", "/admin/settings", url.Values{"signup_policy": {"all"}, "room_creation": {"everyone"}}, 422, "#err-signup_policy", "Choose open"},
		{"BadRooms", "/admin/settings", url.Values{"signup_policy": {"open"}, "room_creation": {"me"}}, 422, "#err-room_creation", "Choose everyone or administrators"},
		{"BadDomain", "/admin/settings", url.Values{"signup_policy": {"domains"}, "domains": {"not a domain!"}, "room_creation": {"everyone"}}, 422, "#err-domains", "Write domains such as example.com"},
		{"NoDomain", "/admin/settings", url.Values{"signup_policy": {"domains"}, "room_creation": {"everyone"}}, 422, "#err-domains", "at least one domain"},
		{"HoursNotANumber", "/admin/invites", url.Values{"expires_hours": {"soon"}}, 422, "#err-expires", "Write a number of hours"},
		{"ZeroHours", "/admin/invites", url.Values{"expires_hours": {"0"}}, 422, "#err-expires", "from 1 to 2160"},
		{"TooManyHours", "/admin/invites", url.Values{"expires_hours": {"99999999999999"}}, 422, "#err-expires", "from 1 to 2160"},
		{"NegativeUses", "/admin/invites", url.Values{"max_uses": {"-1"}}, 422, "#err-max_uses", "from 1 to 10,000"},
		{"TooManyUses", "/admin/invites", url.Values{"max_uses": {"10001"}}, 422, "#err-max_uses", "from 1 to 10,000"},
		{"BadLogin", "/admin/people/no%20body/deactivate", nil, 404, "", ""},
		{"NoSuchPerson", "/admin/people/nobody404x/deactivate", nil, 404, "", ""},
		{"NoSuchAction", "/admin/people/" + target.login + "/erase", nil, 404, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := admin.post(tc.path, tc.form)
			if p.StatusCode != tc.status {
				t.Fatalf("%d, want %d: %s", p.StatusCode, tc.status, text(p, "main"))
			}
			if tc.sel != "" && !strings.Contains(text(p, tc.sel), tc.says) {
				t.Errorf("%s says %q, want %q", tc.sel, text(p, tc.sel), tc.says)
			}
		})
	}
	for path, want := range map[string]string{
		"/admin?q=" + strings.Repeat("x", 101): "at most 100 characters",
		"/admin?after=forged":                  "This page link is broken",
		"/admin/audit?before=forged":           "This page link is broken",
	} {
		if p := admin.get(path); p.StatusCode < 400 || p.StatusCode >= 500 || !strings.Contains(text(p, "main"), want) {
			t.Errorf("GET %s: %d %q, want a refusal saying %q", path, p.StatusCode, text(p, "main"), want)
		}
	}
	// Without the CSRF token, every form is refused.
	forms := map[string]url.Values{
		"/admin/settings": {"signup_policy": {"invite"}, "room_creation": {"admins"}},
		"/admin/invites":  {"max_uses": {"3"}},
	}
	for _, action := range []string{"deactivate", "reactivate", "promote", "demote", "end-sessions", "reset-link"} {
		forms["/admin/people/"+target.login+"/"+action] = url.Values{}
	}
	for path, form := range forms {
		if p := admin.postRaw(path, form); p.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s without the CSRF token: %d", path, p.StatusCode)
		}
	}
	// Nothing changed.
	after, err := db.Site(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if after.Policy() != site.Policy() || after.Rooms() != site.Rooms() || after.IsAdmin(target.login) {
		t.Errorf("the site changed: %+v -> %+v", site, after)
	}
	if now, _ := db.SiteInvites(ctxT(t)); len(now) != len(invites) {
		t.Errorf("sign-up links: %d before, %d after", len(invites), len(now))
	}
	if p := target.get("/"); p.StatusCode != http.StatusOK {
		t.Errorf("the target after refused actions: %d", p.StatusCode)
	}
}

// TestResetLinkRefusals: a reset link used, expired or guessed gets the
// same plain page, on opening it and on sending a password by it.
func TestResetLinkRefusals(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	admin := a.signedUp(t, unique("rladm"))
	makeAdmin(t, db.Store, admin)
	person := a.signedUp(t, unique("rlper"))
	link := func() string {
		t.Helper()
		token, err := db.CreateResetLink(ctxT(t), admin.login, person.login)
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	used, expired := link(), link()
	stranger := a.client(t)
	set := url.Values{"password": {"brand-new-2"}, "password_confirm": {"brand-new-2"}}
	if p := stranger.post("/reset/"+used, cloneForm(set)); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("use the link: %d", p.StatusCode)
	}
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	hash := sha256.Sum256([]byte(expired))
	if err := sess.Query(`UPDATE password_resets SET expires_at = ? WHERE token_hash = ?`, time.Now().Add(-time.Minute), hash[:]).Exec(); err != nil {
		t.Fatal(err)
	}
	guessed := strings.Repeat("B", 43)
	var pages []string
	for _, token := range []string{used, expired, guessed} {
		for _, p := range []page{stranger.get("/reset/" + token), stranger.post("/reset/"+token, cloneForm(set))} {
			if p.StatusCode != http.StatusNotFound {
				t.Errorf("a refused link answered %d", p.StatusCode)
			}
			pages = append(pages, text(p, "main"))
		}
	}
	for _, p := range pages[1:] {
		if p != pages[0] {
			t.Fatalf("the refusals differ: %q", pages)
		}
	}
	if !strings.Contains(pages[0], "link") {
		t.Errorf("the refusal says %q", pages[0])
	}
	auditHas(t, admin, person.login, chat.AuditPasswordSet, person.login)
}

// TestDeactivationRacingAJoin: a join on B racing a deactivation on A
// never leaves the person in the room afterwards (20 rounds).
func TestDeactivationRacingAJoin(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	owner := a.signedUp(t, unique("rjown"))
	room := createRoom(t, owner)
	raceDeactivation(t, a, b, "rj", func(person *client) (func(), func(int)) {
		return func() { person.post("/rooms/"+room+"/join", nil) }, func(round int) {
			r, err := db.Room(ctxT(t), room)
			if err != nil {
				t.Fatal(err)
			}
			if st, err := db.Standing(ctxT(t), r, person.login); err != nil || st.Member {
				t.Fatalf("round %d: a member after the deactivation: %v %v", round, st, err)
			}
			if u, err := db.User(ctxT(t), person.login); err != nil || len(u.ChatRooms) != 0 {
				t.Fatalf("round %d: their rooms after the deactivation: %v %v", round, u.ChatRooms, err)
			}
		}
	})
}

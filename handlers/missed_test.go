package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email/smtptest"
)

// missedDelay is the tests' delay of missed-message emails, and so their
// window: the messages of one conversation posted in one window are one
// email.
const missedDelay = 3 * time.Second

// missedScene is Ada, and Bob with a verified address, in a room, on an
// app that mails missed messages.
type missedScene struct {
	a        *app
	srv      *smtptest.Server
	ada, bob *client
	addr     string
	room, dm string
}

func newMissedScene(t *testing.T) *missedScene {
	t.Helper()
	srv := smtptest.Start(t, false)
	a := newApp(t, nil, nil, withEmail(srv, missedDelay))
	login := unique("bob")
	s := &missedScene{a: a, srv: srv, addr: login + "@example.test"}
	s.bob = a.verifiedUser(t, srv, login, s.addr)
	s.ada = a.signedUp(t, unique("ada"))
	s.room = roomWith(t, s.ada, s.bob)
	s.dm = dmAddress(t, s.ada.login, s.bob.login)
	return s
}

// inOneWindow runs post, which posts messages and returns their ids,
// until they all fall due together (a run that straddles two windows is
// tried again, in a new window).
func (s *missedScene) inOneWindow(t *testing.T, post func() []chat.ID) []chat.ID {
	t.Helper()
	for try := 0; ; try++ {
		// Start just after a window opens.
		time.Sleep(time.Until(time.Now().Truncate(missedDelay).Add(missedDelay + 50*time.Millisecond)))
		ids := post()
		due := s.a.srv.Missed().DueOf(ids[0].Time())
		same := true
		for _, id := range ids[1:] {
			same = same && s.a.srv.Missed().DueOf(id.Time()).Equal(due)
		}
		if same {
			return ids
		}
		if try == 5 {
			t.Fatal("the posts never fell in one window")
		}
		// Let this round's emails go before the next one.
		s.waitFinal(t, ids...)
		for {
			if _, ok := s.srv.Next(time.Second); !ok {
				break
			}
		}
	}
}

// latest is the id of the newest message of conv (a room name or "dm:" address).
func latest(t *testing.T, conv string) chat.ID {
	t.Helper()
	var in chat.Place
	if address, ok := strings.CutPrefix(conv, chat.DMPrefix); ok {
		d, err := db.DM(ctxT(t), address)
		if err != nil {
			t.Fatal(err)
		}
		in = d
	} else {
		r, err := db.Room(ctxT(t), conv)
		if err != nil {
			t.Fatal(err)
		}
		in = r
	}
	msgs, _, err := db.MessagesBefore(ctxT(t), in, chat.ID{}, 1)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("no message in %s: %v", conv, err)
	}
	return msgs[0].ID
}

func (s *missedScene) mention(t *testing.T, text string) chat.ID {
	t.Helper()
	postMessage(t, s.ada, s.room, "@"+s.bob.login+" "+text)
	return latest(t, s.room)
}

func (s *missedScene) direct(t *testing.T, text string) chat.ID {
	t.Helper()
	postDM(t, s.ada, s.dm, text)
	return latest(t, chat.DMPrefix+s.dm)
}

// rows are Bob's pending emails due with the messages ids.
func (s *missedScene) rows(t *testing.T, ids ...chat.ID) []chat.PendingEmail {
	t.Helper()
	s.a.srv.Missed().Flush()
	seen := map[time.Time]bool{}
	var out []chat.PendingEmail
	for _, id := range ids {
		due := s.a.srv.Missed().DueOf(id.Time())
		if seen[due] {
			continue
		}
		seen[due] = true
		rows, err := db.PendingEmails(ctxT(t), due)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Login == s.bob.login {
				out = append(out, r)
			}
		}
	}
	return out
}

// waitFinal waits until Bob's emails of ids are finished, and returns
// them by conversation.
func (s *missedScene) waitFinal(t *testing.T, ids ...chat.ID) map[string]chat.PendingEmail {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rows := s.rows(t, ids...)
		out := map[string]chat.PendingEmail{}
		final := true
		for _, r := range rows {
			out[r.Conversation] = r
			final = final && r.State != ""
		}
		if final {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("Bob's emails not finished: %+v", rows)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// hrefs are the links of an HTML body.
func hrefs(t *testing.T, html string) map[string]bool {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	doc.Find("a[href]").Each(func(_ int, a *goquery.Selection) { out[a.AttrOr("href", "")] = true })
	return out
}

// noMore checks that no other mail came.
func (s *missedScene) noMore(t *testing.T) {
	t.Helper()
	if r, ok := s.srv.Next(time.Second); ok {
		t.Fatalf("an unexpected mail: %s", r.Data)
	}
}

// TestMissedMessageEmails: Bob away; Ada mentions him twice in a room and
// writes him once in a DM: after the delay, two emails, each a MIME mail
// with the texts, the author and permalinks that open the messages.
func TestMissedMessageEmails(t *testing.T) {
	s := newMissedScene(t)
	var ids []chat.ID
	ids = s.inOneWindow(t, func() []chat.ID {
		return []chat.ID{s.mention(t, "first mention"), s.mention(t, "second mention"), s.direct(t, "a direct word")}
	})
	got := map[string]parsed{}
	for range 2 {
		m := mailTo(t, s.srv, s.addr)
		got[m.header.Get("Subject")] = m
	}
	s.noMore(t)
	var roomMail, dmMail parsed
	for subject, m := range got {
		if strings.Contains(subject, "#") {
			roomMail = m
		} else {
			dmMail = m
		}
	}
	if roomMail.header == nil || dmMail.header == nil {
		t.Fatalf("subjects %v, want one of the room and one of the DM", got)
	}
	for _, c := range []struct {
		m     parsed
		texts []string
		ids   []chat.ID
		path  string
	}{
		{roomMail, []string{"first mention", "second mention"}, ids[:2], "/rooms/" + s.room},
		{dmMail, []string{"a direct word"}, ids[2:], "/dm/" + s.dm},
	} {
		for _, body := range []string{c.m.text, c.m.html} {
			for _, want := range append(c.texts, "Ada Lovelace") {
				if !strings.Contains(body, want) {
					t.Errorf("%q lacks %q:\n%s", c.m.header.Get("Subject"), want, body)
				}
			}
		}
		if strings.Contains(c.m.text, "a direct word") == strings.Contains(c.m.text, "first mention") {
			t.Errorf("one email mixes conversations:\n%s", c.m.text)
		}
		// Each permalink opens its message, for Bob, over HTTP.
		for _, id := range c.ids {
			link := c.path + "?at=" + id.String() + "#msg-" + id.String()
			if !strings.Contains(c.m.text, siteURL+link) || !hrefs(t, c.m.html)[siteURL+link] {
				t.Errorf("no permalink %s in %q:\n%s\n%s", link, c.m.header.Get("Subject"), c.m.text, c.m.html)
			}
			p := s.bob.get(strings.Split(link, "#")[0])
			if p.StatusCode != http.StatusOK || p.doc.Find("#msg-"+id.String()).Length() != 1 {
				t.Errorf("GET %s: %d, message shown: %d", link, p.StatusCode, p.doc.Find("#msg-"+id.String()).Length())
			}
		}
		h := c.m.header
		if h.Get("Message-Id") == "" || h.Get("In-Reply-To") == "" || h.Get("References") != h.Get("In-Reply-To") ||
			h.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" ||
			!strings.HasPrefix(h.Get("List-Unsubscribe"), "<"+siteURL+"/email/unsubscribe/") {
			t.Errorf("headers: %v", h)
		}
	}
	if roomMail.header.Get("In-Reply-To") == dmMail.header.Get("In-Reply-To") ||
		roomMail.header.Get("Message-Id") == dmMail.header.Get("Message-Id") {
		t.Error("the two conversations share a thread or a Message-ID")
	}
	// The room's next email threads with the first.
	next := s.mention(t, "third mention")
	m := mailTo(t, s.srv, s.addr)
	if m.header.Get("References") != roomMail.header.Get("References") || m.header.Get("Message-Id") == roomMail.header.Get("Message-Id") {
		t.Errorf("a later email of the room: References %q, Message-ID %q", m.header.Get("References"), m.header.Get("Message-Id"))
	}
	s.waitFinal(t, next)
}

// TestMissedEmailReadBeforeDelay: Bob reads the room before the delay
// ends: only the DM's email goes.
func TestMissedEmailReadBeforeDelay(t *testing.T) {
	s := newMissedScene(t)
	ids := s.inOneWindow(t, func() []chat.ID {
		return []chat.ID{s.mention(t, "one"), s.mention(t, "two"), s.direct(t, "three")}
	})
	if p := s.bob.post("/rooms/"+s.room+"/read", url.Values{"id": {ids[1].String()}}); p.StatusCode >= 400 {
		t.Fatalf("mark read: %d", p.StatusCode)
	}
	m := mailTo(t, s.srv, s.addr)
	if !strings.Contains(m.text, "three") || strings.Contains(m.text, "two") {
		t.Fatalf("the email: %s", m.text)
	}
	rows := s.waitFinal(t, ids...)
	if rows[s.room].State != chat.EmailDropped || rows[chat.DMPrefix+s.dm].State != chat.EmailSent {
		t.Fatalf("rows: %+v", rows)
	}
	s.noMore(t)
}

// TestMissedEmailLeavesOutDeleted: Ada deletes one of two messages before
// the delay ends: the email has the other only.
func TestMissedEmailLeavesOutDeleted(t *testing.T) {
	s := newMissedScene(t)
	ids := s.inOneWindow(t, func() []chat.ID {
		return []chat.ID{s.mention(t, "kept words"), s.mention(t, "deleted words")}
	})
	if p := s.ada.post("/rooms/"+s.room+"/messages/"+ids[1].String()+"/delete", url.Values{"confirm": {"yes"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d", p.StatusCode)
	}
	m := mailTo(t, s.srv, s.addr)
	if !strings.Contains(m.text, "kept words") || strings.Contains(m.text, "deleted words") || strings.Contains(m.html, "deleted words") {
		t.Fatalf("the email: %s", m.text)
	}
	s.waitFinal(t, ids...)
	s.noMore(t)
}

// TestMissedEmailNotWhenHereOrOff: Bob with an open stream gets no email;
// Bob at "off" none; the one-click unsubscribe of an email turns them
// off with one POST that needs no session.
func TestMissedEmailNotWhenHereOrOff(t *testing.T) {
	s := newMissedScene(t)

	st := s.bob.subscribePath(t, "/events?b=browser1", "")
	if st.status != http.StatusOK {
		t.Fatalf("stream: %d", st.status)
	}
	here := s.mention(t, "while you are here")
	if rows := s.rows(t, here); len(rows) != 0 {
		t.Fatalf("an email for Bob with an open stream: %+v", rows)
	}
	st.close()
	// Gone for longer than the post's age: the next one is mailed, and
	// its email brings the unsubscribe link.
	eventually(t, "Bob away", func() bool { return !s.a.srv.Online(s.bob.login) })
	time.Sleep(100 * time.Millisecond)
	away := s.mention(t, "while you are away")
	m := mailTo(t, s.srv, s.addr)
	if !strings.Contains(m.text, "while you are away") || strings.Contains(m.text, "while you are here") {
		t.Fatalf("the email: %s", m.text)
	}
	s.waitFinal(t, away)

	// "off": no row at all.
	if p := s.bob.post("/profile/email", url.Values{"email_notify": {"off"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("set off: %d", p.StatusCode)
	}
	if p := s.bob.get("/profile/notifications"); p.doc.Find(`input#email_notify_off[checked]`).Length() != 1 {
		t.Fatal("the page does not show off")
	}
	if rows := s.rows(t, s.mention(t, "while off")); len(rows) != 0 {
		t.Fatalf("an email for Bob at off: %+v", rows)
	}
	if p := s.bob.post("/profile/email", url.Values{"email_notify": {"mentions"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("set mentions: %d", p.StatusCode)
	}
	if p := s.bob.post("/profile/email", url.Values{"email_notify": {"sometimes"}}); p.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a setting that is none of the three: %d", p.StatusCode)
	}

	// One-click unsubscribe (RFC 8058), as a mail client sends it: no
	// cookies, no CSRF token.
	unsubscribe := strings.Trim(m.header.Get("List-Unsubscribe"), "<>")
	path := strings.TrimPrefix(unsubscribe, siteURL)
	mailClient := s.a.client(t)
	if p := mailClient.postRaw(path, url.Values{"List-Unsubscribe": {"One-Click"}}); p.StatusCode != http.StatusOK {
		t.Fatalf("one-click unsubscribe: %d %s", p.StatusCode, text(p, "main"))
	}
	if p := s.bob.get("/profile/notifications"); p.doc.Find(`input#email_notify_off[checked]`).Length() != 1 {
		t.Fatal("unsubscribed, but the page does not show off")
	}
	if rows := s.rows(t, s.mention(t, "after unsubscribing")); len(rows) != 0 {
		t.Fatalf("an email after unsubscribing: %+v", rows)
	}
	// A forged token changes nothing.
	if p := mailClient.postRaw(path+"x", url.Values{"List-Unsubscribe": {"One-Click"}}); p.StatusCode == http.StatusOK {
		t.Fatal("a forged unsubscribe token was accepted")
	}
	s.noMore(t)
}

// TestMissedEmailRefusedCounted: a recipient the SMTP server refuses
// (550) is logged and counted in /metrics, and never tried again.
func TestMissedEmailRefusedCounted(t *testing.T) {
	s := newMissedScene(t)
	s.srv.Refuse(s.addr)
	id := s.mention(t, "to a mailbox that is gone")
	rows := s.waitFinal(t, id)
	if rows[s.room].State != chat.EmailRefused || rows[s.room].Attempts != 0 {
		t.Fatalf("the row: %+v", rows[s.room])
	}
	metrics := s.a.client(t).get("/metrics").body
	if !strings.Contains(metrics, `killrchat_email_total{kind="missed",result="refused"} 1`) {
		t.Fatalf("/metrics does not count the refusal:\n%s", grepLines(metrics, "killrchat_email"))
	}
	s.noMore(t)
}

// TestMissedEmailTextLeftOut: a person who asks for it gets emails with
// the author, time and permalink of each message, not its text; an
// address changed and not yet verified gets no missed-message email.
func TestMissedEmailTextLeftOut(t *testing.T) {
	s := newMissedScene(t)
	if p := s.bob.post("/profile/email", url.Values{"email_notify": {"mentions"}, "email_hide_text": {"1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("settings: %d", p.StatusCode)
	}
	id := s.mention(t, "a secret plan")
	m := mailTo(t, s.srv, s.addr)
	if strings.Contains(m.text, "secret plan") || strings.Contains(m.html, "secret plan") || !strings.Contains(m.text, id.String()) {
		t.Fatalf("the email:\n%s\n%s", m.text, m.html)
	}
	s.waitFinal(t, id)

	// A new address, not verified: its verification link, and nothing else.
	newAddr := "new-" + s.addr
	if p := s.bob.post("/profile", url.Values{"email": {newAddr}, "bio": {""}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("profile: %d", p.StatusCode)
	}
	linkTo(t, mailTo(t, s.srv, newAddr), "/email/verify/")
	if rows := s.rows(t, s.mention(t, "to an unverified address")); len(rows) != 0 {
		t.Fatalf("a pending email to an unverified address: %+v", rows)
	}
	s.noMore(t)
}

// TestMissedEmailFollowsLevel: the levels the emails read are kept
// (shared with push); Bob's room level set to "nothing" after a mention
// was mailed leaves the next mention unmailed, and back at "mentions"
// the one after is mailed again.
func TestMissedEmailFollowsLevel(t *testing.T) {
	s := newMissedScene(t)
	first := s.mention(t, "before any level")
	s.waitFinal(t, first)
	if m := mailTo(t, s.srv, s.addr); !strings.Contains(m.text, "before any level") {
		t.Fatalf("the email: %s", m.text)
	}
	setLevel := func(level string) {
		t.Helper()
		if p := s.bob.post("/rooms/"+s.room+"/notifications", url.Values{"level": {level}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("level %s: %d", level, p.StatusCode)
		}
	}
	setLevel("nothing")
	if rows := s.rows(t, s.mention(t, "at nothing")); len(rows) != 0 {
		t.Fatalf("an email for Bob at nothing: %+v", rows)
	}
	setLevel("mentions")
	again := s.mention(t, "at mentions again")
	if rows := s.rows(t, again); len(rows) != 1 {
		t.Fatalf("%d emails for Bob at mentions, want 1: %+v", len(rows), rows)
	}
	s.waitFinal(t, again)
	if m := mailTo(t, s.srv, s.addr); !strings.Contains(m.text, "at mentions again") || strings.Contains(m.text, "at nothing") {
		t.Fatalf("the email: %s", m.text)
	}
	s.noMore(t)
}

package handlers_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email/smtptest"
	"github.com/killrchat/killrchat/live/natshub"
)

// verifiedPeople makes n accounts with verified addresses, through the
// store, in room.
func verifiedPeople(t *testing.T, n int, room string) []chat.User {
	t.Helper()
	ctx := ctxT(t)
	var out []chat.User
	for range n {
		login := unique("person")
		u, err := db.CreateUser(ctx, chat.SignUp{Login: login, Password: "password1", PasswordConfirm: "password1",
			Firstname: "P", Lastname: login, Email: login + "@example.test"})
		if err != nil {
			t.Fatal(err)
		}
		token, err := db.CreateVerification(ctx, u.Login, u.Email)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Verify(ctx, token); err != nil {
			t.Fatal(err)
		}
		if _, err := db.JoinRoom(ctx, u.Ref(), room); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// TestMissedEmailsOnceAcrossInstances: two instances over NATS, 50 emails
// due. B claims some and dies while its SMTP exchanges are under way (its
// connections to Cassandra and to the SMTP server drop unanswered); A,
// started after, sends the others at once and B's once their claims run
// out: each of the 50 arrives exactly once.
func TestMissedEmailsOnceAcrossInstances(t *testing.T) {
	ns := startNATS(t, -1)
	var logsA, logsB syncBuffer
	smtpA, smtpB := smtptest.Start(t, false), smtptest.Start(t, false)
	smtpB.Stall()
	storeB, err := db.Another()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(storeB.Close)
	hubB, err := natshub.New(ns.ClientURL(), slog.New(slog.NewTextHandler(&logsB, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hubB.Close() })
	b := newApp(t, storeB, hubB, withEmail(smtpB, missedDelay))
	ada := b.signedUp(t, unique("ada"))
	room := roomWith(t, ada)
	people := verifiedPeople(t, 50, room)
	var mention strings.Builder
	for _, p := range people {
		mention.WriteString("@" + p.Login + " ")
	}
	postMessage(t, ada, room, mention.String()+"all of you")
	b.srv.Missed().Flush()

	// B claims (four at once, one a worker) and hangs in SMTP.
	eventually(t, "B sending", func() bool { return smtpB.Stalled() >= 4 })
	// B dies: nothing more of it reaches Cassandra or the SMTP server.
	storeB.Close()
	smtpB.Stop()
	b.srv.Shutdown()

	a := instance(t, ns.ClientURL(), &logsA, withEmail(smtpA, missedDelay))
	_ = a
	got := map[string]int{}
	deadline := time.Now().Add(3 * time.Minute)
	for len(got) < 50 && time.Now().Before(deadline) {
		r, ok := smtpA.Next(10 * time.Second)
		if !ok {
			continue
		}
		got[parseMail(t, r).to]++
	}
	// Whatever was still due, for a while longer than a lease.
	for {
		r, ok := smtpA.Next(8 * time.Second)
		if !ok {
			break
		}
		got[parseMail(t, r).to]++
	}
	var wrong []string
	for _, p := range people {
		if got[p.Email] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s: %d", p.Login, got[p.Email]))
		}
	}
	sort.Strings(wrong)
	if len(wrong) > 0 || len(got) != 50 || smtpB.Accepted() != 0 {
		t.Fatalf("emails not exactly once (%d addresses, B's server accepted %d): %v", len(got), smtpB.Accepted(), wrong)
	}
	t.Logf("50 emails, each once; B had claimed %d when it died", smtpB.Stalled())
}

// TestMissedEmailsWaitForSMTP: with the SMTP server down for 30 s,
// posting and pages work as before (their p99 logged beside the same
// with the server up), and the emails arrive once it is back.
func TestMissedEmailsWaitForSMTP(t *testing.T) {
	s := newMissedScene(t)
	measure := func(label string) {
		var posts, pages []time.Duration
		for i := range 20 {
			start := time.Now()
			postMessage(t, s.ada, s.room, fmt.Sprintf("%s %d", label, i))
			posts = append(posts, time.Since(start))
			start = time.Now()
			if p := s.ada.get("/rooms/" + s.room); p.StatusCode != http.StatusOK {
				t.Fatalf("room page: %d", p.StatusCode)
			}
			pages = append(pages, time.Since(start))
		}
		t.Logf("SMTP %s: post p99 %v, room page p99 %v", label, p99(posts), p99(pages))
	}
	measure("up")
	s.srv.Stop()
	down := time.Now()
	measure("down")
	ids := []chat.ID{s.mention(t, "while the server is down"), s.direct(t, "a DM while it is down")}
	// The emails fall due and fail while the server is down.
	for time.Since(down) < 30*time.Second {
		time.Sleep(time.Second)
	}
	for _, r := range s.rows(t, ids...) {
		if r.State == chat.EmailSent {
			t.Fatalf("sent while the server was down: %+v", r)
		}
	}
	if err := s.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	texts := map[string]bool{}
	for range 2 {
		m := mailTo(t, s.srv, s.addr)
		for _, want := range []string{"while the server is down", "a DM while it is down"} {
			if strings.Contains(m.text, want) {
				texts[want] = true
			}
		}
	}
	if len(texts) != 2 {
		t.Fatalf("after the server returned: %v", texts)
	}
	s.noMore(t)
}

func p99(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[(len(ds)*99)/100]
}

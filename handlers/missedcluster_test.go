package handlers_test

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/cmd/cmdtest"
	"github.com/killrchat/killrchat/email/smtptest"
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

// TestMissedEmailsOnceAcrossInstances: two instances over NATS, 50
// emails due. B is the real binary in a process of its own; it claims
// some (its four senders, each holding a claim for the binary's lease of
// two minutes) and is killed with SIGKILL while their SMTP exchanges are
// under way (its server holds each DATA unanswered: no mail of B's is
// accepted). A, started after, sends the others at once and B's once
// their claims run out: each of the 50 arrives exactly once.
func TestMissedEmailsOnceAcrossInstances(t *testing.T) {
	ns := startNATS(t, -1)
	var logsA syncBuffer
	smtpA, smtpB := smtptest.Start(t, false), smtptest.Start(t, false)
	smtpB.Stall()
	b := binaryInstance(t, "--nats-url", ns.ClientURL(), "--email-delay", missedDelay.String(), smtpFlags(t, smtpB))
	ada := b.signedUp(t, unique("ada"))
	room := roomWith(t, ada)
	people := verifiedPeople(t, 50, room)
	var mention strings.Builder
	for _, p := range people {
		mention.WriteString("@" + p.Login + " ")
	}
	postMessage(t, ada, room, mention.String()+"all of you")

	// B claims (four at once, one a sender) and hangs in SMTP.
	eventually(t, "B sending", func() bool { return smtpB.Stalled() >= 4 })
	b.kill()
	smtpB.Stop()

	a := instance(t, ns.ClientURL(), &logsA, withEmail(smtpA, missedDelay))
	_ = a
	// Whatever was still due, for a while longer than a lease.
	got := collectMails(t, smtpA, 50, 8*time.Second, nil)
	wrong := notOnce(people, got)
	if len(wrong) > 0 || len(got) != 50 || smtpB.Accepted() != 0 {
		t.Fatalf("emails not exactly once (%d addresses, B's server accepted %d): %v", len(got), smtpB.Accepted(), wrong)
	}
	t.Logf("50 emails, each once; B had claimed %d when it was killed", smtpB.Stalled())
}

// smtpFlags are the binary's flags that send through srv.
func smtpFlags(t *testing.T, srv *smtptest.Server) string {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, srv.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := srv.Config()
	return strings.Join([]string{"--smtp-host", cfg.Host, "--smtp-port", strconv.Itoa(cfg.Port), "--smtp-ca", ca,
		"--smtp-user", cfg.User, "--smtp-password", cfg.Password, "--smtp-from", cfg.From, "--site-url", siteURL}, "\x00")
}

// procApp is the program built and run as a process of its own, on the
// package's keyspace, reached over HTTP only.
type procApp struct {
	*app
	cmd *exec.Cmd
}

// binaryInstance builds the binary and runs it with the tests' flags and
// args (an arg may hold several, NUL-separated), once /readyz says it is
// ready; it is killed when the test ends, if not before.
func binaryInstance(t *testing.T, args ...string) *procApp {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "killrchat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/killrchat/killrchat").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	flags := append(cmdtest.Flags(db.Keyspace, hex.EncodeToString(testKey)), "--auth-rate", "1000", "--addr", addr)
	for _, a := range args {
		flags = append(flags, strings.Split(a, "\x00")...)
	}
	cmd := exec.Command(bin, flags...)
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &procApp{app: &app{Server: &httptest.Server{URL: "http://" + addr}}, cmd: cmd}
	t.Cleanup(p.kill)
	if err := cmdtest.WaitReady(p.URL, 5*time.Minute); err != nil {
		p.kill()
		t.Fatalf("the binary did not become ready: %v\n%s", err, logs.String())
	}
	return p
}

// kill ends the process with SIGKILL: nothing of it runs after.
func (p *procApp) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// TestMissedEmailsWaitForSMTP: the SMTP server is down for 30 s, its
// port taking connections and answering none (the worst kind of down:
// each try waits for its timeout), while 42 emails fall due. Sending
// waits as a whole, one email trying again now and then: the outage
// costs fewer connection attempts than there are emails, none per email
// (a retry per email would hammer Cassandra with claims, reads and
// moves). Posting and pages go on (their p99 logged beside the same with
// the server up; the figure under load is e2e/load maildown's), and once
// the server returns every email arrives, each once.
func TestMissedEmailsWaitForSMTP(t *testing.T) {
	s := newMissedScene(t)
	people := verifiedPeople(t, 40, s.room)
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
	if err := s.srv.Hang(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	ids := []chat.ID{s.mention(t, "while the server is down"), s.direct(t, "a DM while it is down")}
	var all strings.Builder
	for _, p := range people {
		all.WriteString("@" + p.Login + " ")
	}
	postMessage(t, s.ada, s.room, all.String()+"everyone, while it is down")
	// Measured once the emails are recorded and due: the recording's
	// burst of writes is not the outage's.
	s.a.srv.Missed().Flush()
	time.Sleep(time.Until(s.a.srv.Missed().DueOf(latest(t, s.room).Time()).Add(time.Second)))
	measure("down")
	// The emails fall due and wait while the server is down.
	for time.Since(down) < 30*time.Second {
		time.Sleep(time.Second)
	}
	for _, r := range s.rows(t, ids...) {
		if r.State == chat.EmailSent {
			t.Fatalf("sent while the server was down: %+v", r)
		}
	}
	tries := s.srv.HungConnections()
	if tries == 0 || tries >= len(people)+2 {
		t.Fatalf("%d connection attempts in 30 s for %d emails due: want some, fewer than the emails", tries, len(people)+2)
	}
	if err := s.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Anything sent twice would come within a lease or two.
	texts := map[string]bool{}
	got := collectMails(t, s.srv, len(people)+1, 12*time.Second, func(m parsed) {
		for _, want := range []string{"while the server is down", "a DM while it is down", "everyone, while it is down"} {
			if strings.Contains(m.text, want) {
				texts[want] = true
			}
		}
	})
	wrong := notOnce(people, got)
	if got[s.addr] != 2 {
		wrong = append(wrong, fmt.Sprintf("bob: %d, want 2 (the room's, the DM's)", got[s.addr]))
	}
	if len(wrong) > 0 || len(texts) != 3 {
		t.Fatalf("after the server returned: %v; texts %v", wrong, texts)
	}
	t.Logf("%d emails due while the server was down: %d connection attempts in 30 s; each arrived once after", len(people)+2, tries)
}

// collectMails counts the mails srv receives by address (each also
// handed to each, if not nil): until want addresses got one (3 minutes at
// most), then until none came for quiet.
func collectMails(t *testing.T, srv *smtptest.Server, want int, quiet time.Duration, each func(parsed)) map[string]int {
	t.Helper()
	got := map[string]int{}
	take := func(r smtptest.Received) {
		m := parseMail(t, r)
		got[m.to]++
		if each != nil {
			each(m)
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for len(got) < want && time.Now().Before(deadline) {
		if r, ok := srv.Next(10 * time.Second); ok {
			take(r)
		}
	}
	for {
		r, ok := srv.Next(quiet)
		if !ok {
			return got
		}
		take(r)
	}
}

// notOnce names the people whose address did not get exactly one mail.
func notOnce(people []chat.User, got map[string]int) []string {
	var wrong []string
	for _, p := range people {
		if got[p.Email] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s: %d", p.Login, got[p.Email]))
		}
	}
	sort.Strings(wrong)
	return wrong
}

func p99(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[(len(ds)*99)/100]
}

package main

// maildown: posting and the room page while the SMTP server is up, down,
// and back (issue 35: "SMTP server down for 30 s: posting and pages
// unaffected, the emails arrive after it returns"). A real SMTP server
// runs in this program (email/smtptest: STARTTLS, AUTH); the app started
// here sends to it. People away, with verified addresses, are mentioned
// by every post, so missed-message emails fall due the whole time, and
// fail while the server is down. Each run is three phases, SMTP up, down,
// back; several runs alternate, so the noise between phases of the same
// kind shows beside the difference between kinds. At the end every
// mentioned message must have arrived in exactly one email.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email/smtptest"
)

// extraAppFlags are added to the flags of an app instance started here
// (maildown's SMTP settings).
var extraAppFlags []string

func runMailDown(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("maildown", flag.ExitOnError)
	var c common
	c.register(fs)
	posters := fs.Int("posters", 8, "people posting, in one room")
	away := fs.Int("away", 40, "people away with verified addresses in the room, mentioned in turn (one per post)")
	rate := fs.Float64("rate", 20, "posts a second, paced (each mentions one person away)")
	pageRate := fs.Float64("page-rate", 20, "room pages a second, paced")
	conc := fs.Int("c", 8, "goroutines posting, and as many loading pages")
	runs := fs.Int("runs", 3, "runs of the three phases (up, down, back)")
	up := fs.Duration("up", 30*time.Second, "length of the phases with the SMTP server up (\"up\" and \"back\")")
	down := fs.Duration("down", 30*time.Second, "how long the SMTP server is down")
	mode := fs.String("mode", "refuse", "how the server is down: refuse (its port refuses connections) or hang (its port accepts and answers nothing)")
	delay := fs.Duration("delay", 2*time.Second, "the app's --email-delay")
	wait := fs.Duration("wait", 5*time.Minute, "after the last phase, how long to wait for the emails still due")
	settle := fs.Duration("settle", 10*time.Second, "once every message arrived, how long to listen on for duplicates")
	profile := fs.String("profile", "", "write the app's CPU profile of each phase of the first run into this directory (up.pprof, down.pprof, back.pprof)")
	_ = fs.Parse(args)
	switch {
	case c.url != "":
		return errors.New("maildown starts its own app, which sends to the SMTP server here: no -url")
	case c.cluster:
		return errors.New("maildown runs one app instance: no -cluster")
	case *mode != "refuse" && *mode != "hang":
		return fmt.Errorf("-mode is refuse or hang, not %q", *mode)
	case *runs < 1 || *runs > 10 || *up > 5*time.Minute || *down > 5*time.Minute:
		return errors.New("keep -runs 1 to 10, -up and -down <= 5m")
	case *posters < 1 || *away < 1 || *away > 1000 || *posters > 200 || *conc < 1 || *conc > 256:
		return errors.New("keep -posters 1 to 200, -away 1 to 1000, -c 1 to 256")
	case *rate <= 0 || *pageRate < 0:
		return errors.New("-rate must be above 0, -page-rate 0 or more")
	}

	srv, err := smtptest.New(false)
	if err != nil {
		return err
	}
	defer srv.Stop()
	dir, err := os.MkdirTemp("", "maildown")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, srv.CAPEM, 0o600); err != nil {
		return err
	}
	cfg := srv.Config()
	extraAppFlags = []string{"--smtp-host", cfg.Host, "--smtp-port", fmt.Sprint(cfg.Port), "--smtp-tls", cfg.TLS,
		"--smtp-ca", caFile, "--smtp-user", cfg.User, "--smtp-password", cfg.Password, "--smtp-from", cfg.From,
		"--site-url", "http://127.0.0.1", "--email-delay", delay.String()}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	logf("app %s at %s, keyspace %s; SMTP server %s (STARTTLS, AUTH); load average %s", t.Where, t.URL, t.Keyspace, srv.Addr, loadAverage())

	// The mails, read as they come.
	inbox := newMailbox()
	go inbox.read(ctx, srv)

	tr := newTransport(*conc * 4)
	id := runID()
	users, err := signUpMany(ctx, t.URL, "lmd"+id+"u", *posters, tr)
	if err != nil {
		return err
	}
	room := "lmaildown" + id
	if err := setupRoom(ctx, room, users); err != nil {
		return err
	}
	people, err := awayPeople(ctx, t, "lmd"+id+"a", *away, room, tr)
	if err != nil {
		return err
	}
	logf("%d posting and %d away (verified addresses) in room %s; email delay %s", len(users), len(people), room, *delay)
	// The verification mails of set-up are not what is counted.
	time.Sleep(500 * time.Millisecond)
	inbox.reset()

	var (
		seq      atomic.Int64
		mu       sync.Mutex
		expected = map[string]bool{}
		failed   int64
	)
	tag := "mdt" + id + "n"
	post := func(ctx context.Context, w int, i int64) (int, error) {
		n := seq.Add(1)
		token := fmt.Sprintf("%s%d", tag, n)
		to := people[int(n)%len(people)]
		u := users[int(n)%len(users)]
		code, body, err := u.post(ctx, "/rooms/"+room+"/messages",
			url.Values{"content": {"@" + to + " " + token + " while you were away"}}, true)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("POST: %d %.200s", code, body)
		}
		mu.Lock()
		if err == nil {
			expected[token] = true
		} else {
			failed++
		}
		mu.Unlock()
		return code, err
	}
	page := func(ctx context.Context, w int, i int64) (int, error) {
		u := users[w%len(users)]
		code, body, err := u.get(ctx, "/rooms/"+room)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET room: %d %.200s", code, body)
		}
		return code, err
	}

	var results []mailPhase
	for r := 1; r <= *runs; r++ {
		for _, ph := range []string{"up", "down", "back"} {
			d := *up
			if ph == "down" {
				d = *down
				var err error
				if *mode == "hang" {
					err = srv.Hang()
				} else {
					srv.Stop()
				}
				if err != nil {
					return err
				}
			}
			var prof chan error
			if *profile != "" && r == 1 {
				prof = make(chan error, 1)
				go func() {
					prof <- t.saveProfile(ctx, fmt.Sprintf("/_load/pprof/profile?seconds=%d", int(d.Seconds())),
						filepath.Join(*profile, ph+".pprof"))
				}()
			}
			res := measureMailPhase(ctx, t, inbox, fmt.Sprintf("%d %s", r, ph), *conc, d, *rate, *pageRate, post, page)
			results = append(results, res)
			res.print()
			if prof != nil {
				if err := <-prof; err != nil {
					logf("profile of %s: %v", ph, err)
				}
			}
			if ph == "down" {
				if err := srv.Restart(); err != nil {
					return err
				}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}

	mu.Lock()
	want := make(map[string]bool, len(expected))
	for k := range expected {
		want[k] = true
	}
	nFailed := failed
	mu.Unlock()
	logf("waiting up to %s for the emails of %d posts", *wait, len(want))
	t0 := time.Now()
	deadline := t0.Add(*wait)
	for time.Now().Before(deadline) && inbox.missing(want) > 0 && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
	}
	allIn := time.Since(t0)
	time.Sleep(*settle)

	fmt.Printf("\nmaildown: %d runs of up %s / down %s (%s) / back %s; %d posts/s, %d pages/s; email delay %s; load average %s\n",
		*runs, *up, *down, *mode, *up, int(*rate), int(*pageRate), *delay, loadAverage())
	fmt.Println("by kind of phase (all runs):")
	for _, kind := range []string{"up", "down", "back"} {
		var posts, pages durations
		for _, res := range results {
			if strings.HasSuffix(res.name, " "+kind) {
				posts = append(posts, res.posts.lat...)
				pages = append(pages, res.pages.lat...)
			}
		}
		fmt.Printf("  %-5s post %s\n        page %s\n", kind, posts.summary(), pages.summary())
	}
	counts, dup, missing := inbox.check(want)
	fmt.Printf("emails: %d received with the run's messages; %d messages posted (%d posts failed): %d in exactly one email, %d in more than one, %d in none (waited %s after the last phase)\n",
		inbox.total(), len(want), nFailed, counts, len(dup), len(missing), allIn.Round(time.Second))
	t.printLogCounts(ctx)
	if m, err := emailCounts(ctx, t.URL); err == nil {
		fmt.Printf("killrchat_email_total: %v\n", m)
	}
	if len(dup) > 0 || len(missing) > 0 || nFailed > 0 {
		sort.Strings(dup)
		sort.Strings(missing)
		return fmt.Errorf("emails not exactly once: duplicated %v, missing %v; posts failed %d", first(dup, 10), first(missing, 10), nFailed)
	}
	return nil
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// awayPeople makes n people with verified addresses, in room, none with
// a live stream: each is away. They are made through the store before
// the app ever reads them (its caches hold nothing stale), then log in
// and join over HTTP.
func awayPeople(ctx context.Context, t *target, prefix string, n int, room string, tr http.RoundTripper) ([]string, error) {
	if t.Store == nil {
		return nil, errors.New("maildown needs the keyspace")
	}
	logins := make([]string, n)
	sem := make(chan struct{}, 4)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range logins {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			login := fmt.Sprintf("%s%d", prefix, i)
			err := func() error {
				u, err := t.Store.CreateUser(ctx, chat.SignUp{Login: login, Password: "password1", PasswordConfirm: "password1",
					Firstname: "Away", Lastname: login, Email: login + "@example.test"})
				if err != nil {
					return err
				}
				token, err := t.Store.CreateVerification(ctx, u.Login, u.Email)
				if err != nil {
					return err
				}
				if _, err := t.Store.Verify(ctx, token); err != nil {
					return err
				}
				c := newClient(t.URL, tr)
				if err := c.readCSRF(ctx, "/login"); err != nil {
					return err
				}
				code, body, err := c.post(ctx, "/login", url.Values{"login": {login}, "password": {"password1"}}, false)
				if err != nil || code != http.StatusSeeOther {
					return fmt.Errorf("log in %s: %d %v %.200s", login, code, err, body)
				}
				if err := c.readCSRF(ctx, "/"); err != nil {
					return err
				}
				code, body, err = c.post(ctx, "/rooms/"+room+"/join", nil, false)
				if err != nil || code != http.StatusSeeOther {
					return fmt.Errorf("%s joins %s: %d %v %.200s", login, room, code, err, body)
				}
				return nil
			}()
			if err != nil {
				errs <- err
				return
			}
			logins[i] = login
		}()
	}
	wg.Wait()
	close(errs)
	return logins, <-errs
}

// mailPhase is one phase's figures.
type mailPhase struct {
	name         string
	posts, pages phase
	mails        int
	emails       map[string]float64
	cass, busy   time.Duration
	app          time.Duration // the child app's CPU (-child)
	elapsed      time.Duration
	load         string
}

func (p mailPhase) print() {
	app := "in this process"
	if p.app > 0 {
		app = fmt.Sprintf("%.0f%% of a core", 100*p.app.Seconds()/p.elapsed.Seconds())
	}
	fmt.Printf("%-7s post %s failed=%d\n        page %s failed=%d\n        %d emails arrived; app email results %v; app %s, Cassandra %.0f%% of a core, machine busy %.0f%% of %d cores; load average %s\n",
		p.name, p.posts.lat.summary(), p.posts.failed, p.pages.lat.summary(), p.pages.failed, p.mails, p.emails,
		app, 100*p.cass.Seconds()/p.elapsed.Seconds(), 100*p.busy.Seconds()/p.elapsed.Seconds()/float64(runtime.NumCPU()), runtime.NumCPU(), p.load)
}

// measureMailPhase posts and loads pages, paced, for d.
func measureMailPhase(ctx context.Context, t *target, inbox *mailbox, name string, conc int, d time.Duration, rate, pageRate float64,
	post, page func(context.Context, int, int64) (int, error)) mailPhase {
	cass := cassandraPID()
	c0, a0 := cpuTime(cass), cpuTime(childPID)
	b0, _ := machineCPU()
	m0 := inbox.total()
	e0, _ := emailCounts(ctx, t.URL)
	start := time.Now()
	var res mailPhase
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		res.posts = drivePaced(ctx, name+" post", conc, d, pacer(rate/float64(conc)), post)
	}()
	if pageRate > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.pages = drivePaced(ctx, name+" page", conc, d, pacer(pageRate/float64(conc)), page)
		}()
	}
	wg.Wait()
	res.name, res.elapsed, res.load = name, time.Since(start), loadAverage()
	res.mails = inbox.total() - m0
	res.cass = cpuTime(cass) - c0
	if childPID != 0 {
		res.app = cpuTime(childPID) - a0
	}
	b1, _ := machineCPU()
	res.busy = b1 - b0
	if e1, err := emailCounts(ctx, t.URL); err == nil {
		res.emails = map[string]float64{}
		for k, v := range e1 {
			if v-e0[k] != 0 {
				res.emails[k] = v - e0[k]
			}
		}
	}
	return res
}

// pacer makes each worker go at most perSecond times a second: a call
// that takes longer than its interval delays the next, never bunches
// them. Its wait is not part of the call's time.
func pacer(perSecond float64) func(context.Context, int) error {
	interval := time.Duration(float64(time.Second) / perSecond)
	var mu sync.Mutex
	next := map[int]time.Time{}
	return func(ctx context.Context, w int) error {
		mu.Lock()
		at, ok := next[w]
		if !ok {
			// Workers start spread over one interval.
			at = time.Now().Add(time.Duration(int64(interval) * int64(w%64) / 64))
		}
		now := time.Now()
		if at.Before(now) {
			at = now
		}
		next[w] = at.Add(interval)
		mu.Unlock()
		select {
		case <-time.After(time.Until(at)):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// mailbox holds what the SMTP server accepted: the run's tokens per
// email.
type mailbox struct {
	mu     sync.Mutex
	n      int
	tokens map[string]int
}

func newMailbox() *mailbox { return &mailbox{tokens: map[string]int{}} }

var tokenRe = regexp.MustCompile(`mdt[0-9a-z]+n[0-9]+`)

func (b *mailbox) read(ctx context.Context, srv *smtptest.Server) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-srv.Mails():
			text, err := mailText(r.Data)
			if err != nil {
				logf("a mail that does not parse: %v", err)
				continue
			}
			seen := map[string]bool{}
			for _, tok := range tokenRe.FindAllString(text, -1) {
				seen[tok] = true
			}
			b.mu.Lock()
			if len(seen) > 0 {
				b.n++
			}
			for tok := range seen {
				b.tokens[tok]++
			}
			b.mu.Unlock()
		}
	}
}

func (b *mailbox) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n, b.tokens = 0, map[string]int{}
}

// total is how many emails with the run's messages arrived.
func (b *mailbox) total() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *mailbox) missing(want map[string]bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for tok := range want {
		if b.tokens[tok] == 0 {
			n++
		}
	}
	return n
}

// check counts the messages that came once, and lists those that came
// more than once (or were never posted) and those that never came.
func (b *mailbox) check(want map[string]bool) (once int, dup, missing []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for tok := range want {
		switch b.tokens[tok] {
		case 0:
			missing = append(missing, tok)
		case 1:
			once++
		default:
			dup = append(dup, fmt.Sprintf("%s×%d", tok, b.tokens[tok]))
		}
	}
	for tok := range b.tokens {
		if !want[tok] {
			dup = append(dup, tok+" (not posted)")
		}
	}
	return once, dup, missing
}

// mailText is the text/plain body of a MIME mail, decoded.
func mailText(data []byte) (string, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		b, err := io.ReadAll(msg.Body)
		return string(b), err
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return "", errors.New("no text/plain part")
		}
		if err != nil {
			return "", err
		}
		if ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type")); ct == "text/plain" {
			b, err := io.ReadAll(part)
			return string(b), err
		}
	}
}

// emailCounts reads killrchat_email_total{kind="missed"} by result from
// the app's /metrics.
func emailCounts(ctx context.Context, base string) (map[string]float64, error) {
	return metricCounts(ctx, base, `killrchat_email_total{kind="missed",result="`)
}

package main

// versus: ours beside the original KillrChat (Java, Spring Boot; how to
// build and run it: docs/benchmarks.md), the same load on both, in one
// run. Each app gets 8 people in one room with 50 messages; then, after a
// discarded warm-up pass (the original's JIT warms over its first runs),
// each run loads both apps in turn with the latest 50 messages (ours: the
// room's page as a person opens it; the original: its JSON of the latest
// 50) and then with posts, 16 at once, the order of the two apps swapped
// every run. A phase reports pages or posts a second, p50 and p99, the
// app's CPU a request (from /proc of the process listening on its port,
// or of -child's app) and Cassandra's, errors and status codes, the load
// average at its end, and each figure's ratio ours / original.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func runVersus(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("versus", flag.ExitOnError)
	var c common
	c.register(fs)
	orig := fs.String("orig", "http://127.0.0.1:9090/killrchat", "base URL of the original KillrChat")
	origPID := fs.Int("orig-pid", 0, "the original's process, for its CPU (0: the process listening on -orig's port)")
	ourPID := fs.Int("pid", 0, "with -url: our app's process, for its CPU (0: the process listening on -url's port)")
	nUsers := fs.Int("users", 8, "people in the room, on each app")
	conc := fs.Int("c", 16, "requests at once")
	dur := fs.Duration("d", 10*time.Second, "length of each measured phase")
	runs := fs.Int("runs", 3, "measured runs, after one discarded warm-up pass")
	seed := fs.Int("messages", 50, "messages posted into each room before the runs (the page shows the latest 50)")
	_ = fs.Parse(args)
	if *dur > 2*time.Minute || *conc > 256 || *nUsers < 1 || *nUsers > 100 || *runs > 20 || *seed > 1000 {
		return fmt.Errorf("keep -d <= 2m, -c <= 256, 1 <= -users <= 100, -runs <= 20, -messages <= 1000")
	}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	ours := childPID
	if ours == 0 {
		ours = cmpOr(*ourPID, listenerPID(t.URL))
	}
	theirs := cmpOr(*origPID, listenerPID(*orig))
	logf("ours: %s at %s (pid %d); original at %s (pid %d)", t.Where, t.URL, ours, *orig, theirs)
	if ours == 0 || theirs == 0 {
		logf("warning: a process was not found: its CPU reads 0")
	}

	id := runID()
	tr := newTransport(*conc * 2)
	users, err := signUpMany(ctx, t.URL, "vs"+id+"u", *nUsers, tr)
	if err != nil {
		return err
	}
	room := "vs" + id
	if err := setupRoom(ctx, room, users); err != nil {
		return err
	}
	people, err := origSetUp(ctx, *orig, "vs"+id+"u", room, *nUsers, newTransport(*conc*2))
	if err != nil {
		return fmt.Errorf("the original at %s: %w", *orig, err)
	}
	for i := range *seed {
		u, p := users[i%len(users)], people[i%len(people)]
		if code, _, err := u.post(ctx, "/rooms/"+room+"/messages", url.Values{"content": {fmt.Sprintf("message %d of the page", i)}}, true); err != nil || code != http.StatusOK {
			return fmt.Errorf("ours: post %d: %d %v", i, code, err)
		}
		if err := p.post(ctx, room, fmt.Sprintf("message %d of the page", i)); err != nil {
			return fmt.Errorf("the original: post %d: %w", i, err)
		}
	}
	logf("%d people and %d messages in room %s on each app", *nUsers, *seed, room)

	ourPage := func(ctx context.Context, w int, _ int64) (int, error) {
		code, _, err := users[w%len(users)].getGzip(ctx, "/rooms/"+room)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("ours: room page: %d", code)
		}
		return code, err
	}
	ourPost := func(ctx context.Context, w int, i int64) (int, error) {
		code, body, err := users[w%len(users)].post(ctx, "/rooms/"+room+"/messages",
			url.Values{"content": {fmt.Sprintf("load message %d from worker %d", i, w)}}, true)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("ours: post: %d %.200s", code, body)
		}
		return code, err
	}
	origPage := func(ctx context.Context, w int, _ int64) (int, error) {
		return people[w%len(people)].latest(ctx, room, 50)
	}
	origPost := func(ctx context.Context, w int, i int64) (int, error) {
		err := people[w%len(people)].post(ctx, room, fmt.Sprintf("load message %d from worker %d", i, w))
		if err != nil {
			return statusOf(err), err
		}
		return http.StatusNoContent, nil
	}

	type pair struct{ ours, orig []versusPhase }
	var pages, posts pair
	for r := 0; r <= *runs && ctx.Err() == nil; r++ {
		name := fmt.Sprintf("run %d", r)
		if r == 0 {
			name = "warm-up (discarded)"
		}
		logf("%s: pages, then posts, %d at once, %v each", name, *conc, *dur)
		// Swap who goes first every run: a machine that grows busier
		// or quieter over a run favours neither.
		oursFirst := r%2 == 1
		var op, tp, oq, tq versusPhase
		if oursFirst {
			op = measure(ctx, "ours", *conc, *dur, ours, ourPage)
			tp = measure(ctx, "original", *conc, *dur, theirs, origPage)
			oq = measure(ctx, "ours", *conc, *dur, ours, ourPost)
			tq = measure(ctx, "original", *conc, *dur, theirs, origPost)
		} else {
			tp = measure(ctx, "original", *conc, *dur, theirs, origPage)
			op = measure(ctx, "ours", *conc, *dur, ours, ourPage)
			tq = measure(ctx, "original", *conc, *dur, theirs, origPost)
			oq = measure(ctx, "ours", *conc, *dur, ours, ourPost)
		}
		fmt.Printf("\n== %s: latest 50 messages, %d at once\n", name, *conc)
		printVersus(op, tp, "pages")
		fmt.Printf("== %s: posts, %d at once\n", name, *conc)
		printVersus(oq, tq, "posts")
		if r > 0 {
			pages.ours, pages.orig = append(pages.ours, op), append(pages.orig, tp)
			posts.ours, posts.orig = append(posts.ours, oq), append(posts.orig, tq)
		}
	}
	if len(pages.ours) == 0 {
		return ctx.Err()
	}
	fmt.Printf("\n== %d runs, ours / original (targets: pages/s >= 1.2, app CPU a page <= 1, p99 <= 1, posts/s >= 1.2, 0 errors)\n", len(pages.ours))
	fmt.Printf("%-22s %s\n", "pages/s", ratios(pages.ours, pages.orig, func(p versusPhase) float64 { return p.rate() }))
	fmt.Printf("%-22s %s\n", "page p50", ratios(pages.ours, pages.orig, func(p versusPhase) float64 { return float64(p.p50) }))
	fmt.Printf("%-22s %s\n", "page p99", ratios(pages.ours, pages.orig, func(p versusPhase) float64 { return float64(p.p99) }))
	fmt.Printf("%-22s %s\n", "app CPU a page", ratios(pages.ours, pages.orig, func(p versusPhase) float64 { return p.appPer() }))
	fmt.Printf("%-22s %s\n", "Cassandra CPU a page", ratios(pages.ours, pages.orig, func(p versusPhase) float64 { return p.cassPer() }))
	fmt.Printf("%-22s %s\n", "posts/s", ratios(posts.ours, posts.orig, func(p versusPhase) float64 { return p.rate() }))
	fmt.Printf("%-22s %s\n", "post p99", ratios(posts.ours, posts.orig, func(p versusPhase) float64 { return float64(p.p99) }))
	fmt.Printf("%-22s %s\n", "app CPU a post", ratios(posts.ours, posts.orig, func(p versusPhase) float64 { return p.appPer() }))
	errs := 0
	for _, ps := range [][]versusPhase{pages.ours, pages.orig, posts.ours, posts.orig} {
		for _, p := range ps {
			errs += int(p.failed)
		}
	}
	fmt.Printf("%-22s %d in all measured phases\n", "errors", errs)
	return nil
}

// versusPhase is one app's phase of a run.
type versusPhase struct {
	phase
	who      string
	p50, p99 time.Duration
	appCPU   time.Duration
	load     string
}

func (p versusPhase) appPer() float64  { return float64(p.appCPU) / float64(max(p.ok, 1)) }
func (p versusPhase) cassPer() float64 { return float64(p.cassCPU) / float64(max(p.ok, 1)) }

// measure drives op as drive does and adds the CPU time of the app's
// process pid and the load average at the end.
func measure(ctx context.Context, who string, conc int, d time.Duration, pid int,
	op func(ctx context.Context, worker int, i int64) (int, error)) versusPhase {
	a0 := cpuTime(pid)
	p := drive(ctx, who, conc, d, op)
	v := versusPhase{phase: p, who: who, appCPU: cpuTime(pid) - a0, load: loadAverage()}
	s := p.lat.sorted()
	v.p50, v.p99 = s.pct(.5), s.pct(.99)
	return v
}

func printVersus(ours, orig versusPhase, what string) {
	fmt.Printf("  %-9s %9s %9s %9s %14s %14s %7s  %s\n", "", what+"/s", "p50", "p99", "app CPU each", "Cassandra each", "errors", "status codes; load average at the end")
	for _, p := range []versusPhase{ours, orig} {
		fmt.Printf("  %-9s %9.0f %9s %9s %14s %14s %7d  %v; %s\n", p.who, p.rate(), ms(p.p50), ms(p.p99),
			us(p.appPer()), us(p.cassPer()), p.failed, p.codes, p.load)
	}
	fmt.Printf("  %-9s %9.2f %9.2f %9.2f %14.2f %14.2f\n", "ratio", ours.rate()/max(orig.rate(), 1e-9),
		float64(ours.p50)/max(float64(orig.p50), 1), float64(ours.p99)/max(float64(orig.p99), 1),
		ours.appPer()/max(orig.appPer(), 1), ours.cassPer()/max(orig.cassPer(), 1))
}

func us(ns float64) string { return fmt.Sprintf("%.0fµs", ns/1e3) }

// ratios lists ours / original of f for each run.
func ratios(ours, orig []versusPhase, f func(versusPhase) float64) string {
	var b strings.Builder
	for i := range ours {
		if i > 0 {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, "%.2f", f(ours[i])/max(f(orig[i]), 1e-9))
	}
	return b.String()
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// loadAverage is /proc/loadavg's three figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// origUser is one signed-in person of the original, with its session
// cookie.
type origUser struct {
	login, first, last string
	base               string
	hc                 *http.Client
}

// origSetUp signs up n people on the original (password "password1"),
// signs each in, has the first create room and the others join it.
func origSetUp(ctx context.Context, base, prefix, room string, n int, tr http.RoundTripper) ([]*origUser, error) {
	base = strings.TrimRight(base, "/")
	var people []*origUser
	for i := range n {
		jar, _ := cookiejar.New(nil)
		u := &origUser{login: fmt.Sprintf("%s%d", prefix, i), first: "Load", base: base,
			hc: &http.Client{Transport: tr, Jar: jar, Timeout: 60 * time.Second}}
		u.last = u.login
		if _, err := u.send(ctx, http.MethodPost, "/users", map[string]any{"login": u.login, "password": "password1",
			"firstname": u.first, "lastname": u.last, "email": u.login + "@example.com", "bio": "load"}); err != nil {
			return nil, fmt.Errorf("sign up %s: %w", u.login, err)
		}
		form := url.Values{"j_username": {u.login}, "j_password": {"password1"}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/authenticate", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if _, err := u.do(req); err != nil {
			return nil, fmt.Errorf("sign in %s: %w", u.login, err)
		}
		people = append(people, u)
	}
	if _, err := people[0].send(ctx, http.MethodPost, "/rooms/"+room, map[string]any{"banner": "load test", "creator": people[0].light()}); err != nil {
		return nil, fmt.Errorf("create room %s: %w", room, err)
	}
	for _, u := range people[1:] {
		if _, err := u.send(ctx, http.MethodPut, "/rooms/participant/"+room, u.light()); err != nil {
			return nil, fmt.Errorf("%s joins %s: %w", u.login, room, err)
		}
	}
	return people, nil
}

func (u *origUser) light() map[string]string {
	return map[string]string{"login": u.login, "firstname": u.first, "lastname": u.last}
}

// post posts content into room as u (the original takes the author from
// the body).
func (u *origUser) post(ctx context.Context, room, content string) error {
	_, err := u.send(ctx, http.MethodPost, "/messages/"+room, map[string]any{"author": u.light(), "content": content})
	return err
}

// latest reads the latest n messages of room as JSON.
func (u *origUser) latest(ctx context.Context, room string, n int) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.base+"/messages/"+room+"?fetchSize="+strconv.Itoa(n), nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	body, err := u.do(req)
	if err != nil {
		return statusOf(err), err
	}
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		return http.StatusOK, fmt.Errorf("the original: latest messages: not a JSON list: %.100s", body)
	}
	return http.StatusOK, nil
}

func (u *origUser) send(ctx context.Context, method, path string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequestWithContext(ctx, method, u.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	return u.do(req)
}

// statusError is an answer that is not 2xx.
type statusError struct {
	code int
	body string
}

func (e statusError) Error() string { return fmt.Sprintf("status %d: %.200s", e.code, e.body) }

func statusOf(err error) int {
	var se statusError
	if errors.As(err, &se) {
		return se.code
	}
	return 0
}

func (u *origUser) do(req *http.Request) ([]byte, error) {
	resp, err := u.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return b, statusError{code: resp.StatusCode, body: string(b)}
	}
	return b, nil
}

// listenerPID is the process holding the listening TCP socket of base's
// port on this machine (0 if none is found): read from /proc/net/tcp{,6}
// and each process's descriptors, nothing signalled.
func listenerPID(base string) int {
	u, err := url.Parse(base)
	if err != nil {
		return 0
	}
	_, portText, err := net.SplitHostPort(u.Host)
	if err != nil {
		return 0
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return 0
	}
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// local_address is hex "ADDR:PORT"; st 0A is LISTEN.
			if len(fields) < 10 || fields[3] != "0A" {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				inodes["socket:["+fields[9]+"]"] = true
			}
		}
		file.Close()
	}
	if len(inodes) == 0 {
		return 0
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && inodes[link] {
			pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
			return pid
		}
	}
	return 0
}

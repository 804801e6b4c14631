package main

// A browser without JavaScript (cookies, CSRF token, no redirects
// followed), a minimal SSE client, and small statistics helpers.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// newTransport is an HTTP/1.1 transport with room for conns keep-alive
// connections to one host.
func newTransport(conns int) *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:          conns,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		DisableCompression:    true,
	}
}

// user is one signed-up, logged-in person.
type user struct {
	login string
	base  string
	jar   http.CookieJar
	hc    *http.Client
	csrf  string
}

func newClient(base string, tr http.RoundTripper) *user {
	jar, _ := cookiejar.New(nil)
	return &user{base: base, jar: jar, hc: &http.Client{
		Transport: tr, Jar: jar, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (u *user) cookie(name string) string {
	b, _ := url.Parse(u.base)
	for _, c := range u.jar.Cookies(b) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// do sends a request and reads the whole answer.
func (u *user) do(req *http.Request) (int, string, error) {
	resp, err := u.hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func (u *user) get(ctx context.Context, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.base+path, nil)
	if err != nil {
		return 0, "", err
	}
	return u.do(req)
}

// getGzip gets path as a browser does, accepting gzip (the answer is
// read, not inflated).
func (u *user) getGzip(ctx context.Context, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.base+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Accept-Encoding", "gzip")
	return u.do(req)
}

// post submits a form with the CSRF token; htmx adds HX-Request and sends
// the token as a header, as the page's htmx does.
func (u *user) post(ctx context.Context, path string, form url.Values, htmx bool) (int, string, error) {
	if form == nil {
		form = url.Values{}
	}
	if !htmx {
		form.Set("_csrf", u.csrf)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if htmx {
		req.Header.Set("HX-Request", "true")
		req.Header.Set("X-CSRF-Token", u.csrf)
	}
	return u.do(req)
}

// signUp makes a new account and logs in (303 expected).
func signUp(ctx context.Context, base, login string, tr http.RoundTripper) (*user, error) {
	u := newClient(base, tr)
	u.login = login
	if err := u.readCSRF(ctx, "/login"); err != nil {
		return nil, err
	}
	form := url.Values{"login": {login}, "password": {"password1"}, "password_confirm": {"password1"},
		"firstname": {"Load"}, "lastname": {login}}
	code, body, err := u.post(ctx, "/signup", form, false)
	if err != nil || code != http.StatusSeeOther {
		return nil, fmt.Errorf("sign up %s: %d %v %.200s", login, code, err, body)
	}
	// The token belongs to the session, which sign-up just started.
	return u, u.readCSRF(ctx, "/")
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)"`)

// readCSRF takes the CSRF token from the page at path, as htmx does.
func (u *user) readCSRF(ctx context.Context, path string) error {
	code, body, err := u.get(ctx, path)
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %v", path, code, err)
	}
	m := csrfMeta.FindStringSubmatch(body)
	if m == nil {
		return fmt.Errorf("GET %s: no CSRF token in the page", path)
	}
	u.csrf = m[1]
	return nil
}

// signUpMany signs up n users named prefix0..prefixN-1, 4 at a time.
func signUpMany(ctx context.Context, base, prefix string, n int, tr http.RoundTripper) ([]*user, error) {
	users := make([]*user, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			u, err := signUp(ctx, base, fmt.Sprintf("%s%d", prefix, i), tr)
			if err != nil {
				errs <- err
				return
			}
			users[i] = u
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return users, nil
}

// setupRoom has users[0] create room and every other user join it.
func setupRoom(ctx context.Context, room string, users []*user) error {
	code, body, err := users[0].post(ctx, "/rooms", url.Values{"room_name": {room}, "banner": {"load test"}}, false)
	if err != nil || code != http.StatusSeeOther {
		return fmt.Errorf("create room %s: %d %v %.200s", room, code, err, body)
	}
	for _, u := range users[1:] {
		code, body, err := u.post(ctx, "/rooms/"+room+"/join", nil, false)
		if err != nil || code != http.StatusSeeOther {
			return fmt.Errorf("%s joins %s: %d %v %.200s", u.login, room, code, err, body)
		}
	}
	return nil
}

// runID is a short random-enough tag for names of this run.
func runID() string { return strconv.FormatInt(time.Now().UnixNano()%1e9, 36) }

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	ID, Event, Data string
	// HasID says the event set the last event id (an id: line came).
	HasID bool
	At    time.Time
}

// readSSE parses an event stream as EventSource does: fields id, event and
// data, a blank line dispatches, lines starting with ':' are comments. It
// calls fn for every event that has data, and stops when fn returns false
// or the stream ends.
func readSSE(r io.Reader, fn func(sseEvent) bool) error {
	br := bufio.NewReaderSize(r, 16<<10)
	var ev sseEvent
	var data strings.Builder
	hasData := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if hasData {
				ev.Data = data.String()
				ev.At = time.Now()
				if !fn(ev) {
					return nil
				}
			}
			ev, hasData = sseEvent{}, false
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID, ev.HasID = value, true
		case "event":
			ev.Event = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		}
	}
}

// openStream opens GET /rooms/:room/events and returns the response once
// the headers (200) are in. A 503 (every replay slot busy) is retried
// after its Retry-After, as a browser's reconnect does, until ctx ends;
// replayRefusals counts them.
func openStream(ctx context.Context, hc *http.Client, base, room, after, lastEventID string) (*http.Response, error) {
	u := base + "/rooms/" + room + "/events"
	if after != "" {
		u += "?after=" + url.QueryEscape(after)
	}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return nil, fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, b)
		}
		replayRefusals.Add(1)
		wait := time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("GET %s: 503 until %w", u, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// replayRefusals counts the 503s openStream retried.
var replayRefusals atomic.Int64

// messageID is the timeuuid in a message item's id="msg-...", or "".
func messageID(html string) string {
	i := strings.Index(html, `id="msg-`)
	if i < 0 || len(html) < i+8+36 {
		return ""
	}
	return html[i+8 : i+8+36]
}

// durations are latencies.
type durations []time.Duration

func (d durations) sorted() durations {
	s := append(durations(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

// pct is the p-th percentile of a sorted slice.
func (d durations) pct(p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(p*float64(len(d))+0.5) - 1
	return d[min(max(i, 0), len(d)-1)]
}

func (d durations) summary() string {
	s := d.sorted()
	return fmt.Sprintf("n=%d p50=%s p90=%s p99=%s max=%s", len(s), ms(s.pct(.5)), ms(s.pct(.9)), ms(s.pct(.99)), ms(s.pct(1)))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// cpuTime is the user+system CPU time of a process so far (0 if unknown).
func cpuTime(pid int) time.Duration {
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ = 100
}

// procStat is /proc/<pid>/stat's fields after the command's name (the
// state first), or nil.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+2:]
	}
	return strings.Fields(s)
}

// cassandraPID finds the local Cassandra JVM, to report its CPU use (read
// only; nothing is ever signalled): of several (a test's extra nodes come
// and go), the one started first.
func cassandraPID() int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	found, since := 0, int64(-1)
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "org.apache.cassandra.service.CassandraDaemon") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if start := startTime(pid); since < 0 || start < since {
			found, since = pid, start
		}
	}
	return found
}

// startTime is when a process started, in clock ticks after boot.
func startTime(pid int) int64 {
	f := procStat(pid)
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseInt(f[19], 10, 64)
	return v
}

// machineCPU is the busy and total CPU time of the whole machine so far
// (all cores), from /proc/stat.
func machineCPU() (busy, total time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	var sum, idle int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		sum += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return time.Duration(sum-idle) * time.Second / 100, time.Duration(sum) * time.Second / 100
}

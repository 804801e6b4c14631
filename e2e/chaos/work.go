package main

// The mixed load of a chaos run, as people behind a load balancer make
// it: each person talks to one instance and moves to the other when a
// request cannot reach it. Every operation is recorded with when it
// started, how long it took and whether it worked.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// op is one operation a client made.
type op struct {
	kind string
	at   time.Time
	dur  time.Duration
	ok   bool
}

type recorder struct {
	mu  sync.Mutex
	ops []op
}

func (r *recorder) add(kind string, at time.Time, ok bool) {
	r.mu.Lock()
	r.ops = append(r.ops, op{kind, at, time.Since(at), ok})
	r.mu.Unlock()
}

func (r *recorder) all() []op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]op(nil), r.ops...)
}

// person is one signed-up account with its cookies and CSRF token, and
// the instance it talks to.
type person struct {
	login string
	jar   *cookiejar.Jar
	hc    *http.Client
	csrf  string
	bases []string
	at    atomic.Int32 // index into bases
}

func newPerson(login string, bases []string, first int) *person {
	jar, _ := cookiejar.New(nil)
	p := &person{login: login, jar: jar, bases: bases, hc: &http.Client{
		Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	p.at.Store(int32(first % len(bases)))
	return p
}

func (p *person) base() string { return p.bases[p.at.Load()] }

// moveOn switches to the other instance, as a load balancer does for a
// client whose instance stopped answering.
func (p *person) moveOn(from string) {
	if p.base() == from {
		p.at.Store((p.at.Load() + 1) % int32(len(p.bases)))
	}
}

// send makes one request to the person's instance; a request that
// reached no instance moves the person to the other.
func (p *person) send(ctx context.Context, method, path string, form url.Values) (int, string, error) {
	base := p.base()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return 0, "", err
	}
	if form != nil { // a plain form, as without JavaScript
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		p.moveOn(base)
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)"`)

// refreshCSRF reads the token of the person's session from a page.
func (p *person) refreshCSRF(ctx context.Context) error {
	code, body, err := p.send(ctx, http.MethodGet, "/", nil)
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("GET / as %s: %d %v", p.login, code, err)
	}
	m := csrfMeta.FindStringSubmatch(body)
	if m == nil {
		return fmt.Errorf("no CSRF token for %s", p.login)
	}
	p.csrf = m[1]
	return nil
}

// signUp makes the account (303 on success) and reads its CSRF token.
// It returns the status, so that a race's loser can be told apart.
func (p *person) signUp(ctx context.Context, password string) (int, error) {
	code, body, err := p.send(ctx, http.MethodGet, "/login", nil)
	if err != nil || code != http.StatusOK {
		return code, fmt.Errorf("GET /login: %d %v", code, err)
	}
	m := csrfMeta.FindStringSubmatch(body)
	if m == nil {
		return code, fmt.Errorf("no CSRF token on /login")
	}
	p.csrf = m[1]
	code, _, err = p.send(ctx, http.MethodPost, "/signup", url.Values{"login": {p.login}, "password": {password},
		"password_confirm": {password}, "firstname": {"Chaos"}, "lastname": {p.login}, "_csrf": {p.csrf}})
	if err != nil || code != http.StatusSeeOther {
		return code, err
	}
	return code, p.refreshCSRF(ctx)
}

var msgID = regexp.MustCompile(`id="msg-([0-9a-f-]{36})"`)

// ack is a post the server acknowledged.
type ack struct {
	id, content, poster string
	at                  time.Time
}

// post sends content to room with a client_id, and again with the same
// client_id (which the instance that stored it answers with the same
// message) up to twice on the same instance if no answer came. It
// returns the message id when acknowledged.
func (p *person) post(ctx context.Context, rec *recorder, room, content string) (string, bool) {
	clientID := fmt.Sprintf("c%x", rand.Uint64())
	base := p.base()
	for attempt := 0; attempt < 3 && ctx.Err() == nil; attempt++ {
		t0 := time.Now()
		code, body, err := p.sendTo(ctx, base, "/rooms/"+room+"/messages", url.Values{"content": {content}, "client_id": {clientID}})
		m := msgID.FindStringSubmatch(body)
		ok := err == nil && code == http.StatusOK && m != nil
		if ctx.Err() != nil {
			return "", false // the run is over, not the server
		}
		rec.add("post", t0, ok)
		if ok {
			return m[1], true
		}
		if err != nil {
			p.moveOn(base)
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
	return "", false
}

// sendTo posts a form to one given instance (a retry with a client_id
// must reach the instance that may have stored the first try).
func (p *person) sendTo(ctx context.Context, base, path string, form url.Values) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	req.Header.Set("X-CSRF-Token", p.csrf)
	resp, err := p.hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// form posts a form and tells whether the answer was a redirect (the
// no-JavaScript success of every form but the composer's).
func (p *person) form(ctx context.Context, rec *recorder, kind, path string, form url.Values) (int, bool) {
	t0 := time.Now()
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", p.csrf)
	base := p.base()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, false
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := p.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil { // else the run is over, not the server
			p.moveOn(base)
			rec.add(kind, t0, false)
		}
		return 0, false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// A refusal (taken, not allowed) is an answer; a 5xx is an error.
	rec.add(kind, t0, resp.StatusCode < 500)
	return resp.StatusCode, resp.StatusCode == http.StatusSeeOther
}

// subscriber keeps a room's page live as a browser does: the page, then
// its stream, resumed with Last-Event-ID after every end; a "reload"
// event loads the page again.
type subscriber struct {
	p    *person
	room string
	mu   sync.Mutex
	got  map[string]bool
	// conns and reloads count connections and page reloads.
	conns, reloads int
}

var streamAfter = regexp.MustCompile(`/events\?after=([0-9a-f-]{36})`)

func (s *subscriber) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[id]
}

func (s *subscriber) run(ctx context.Context, connected chan<- struct{}) {
	after, last := "", ""
	first := true
	for ctx.Err() == nil {
		if after == "" && last == "" {
			code, body, err := s.p.send(ctx, http.MethodGet, "/rooms/"+s.room, nil)
			m := streamAfter.FindStringSubmatch(body)
			if err != nil || code != http.StatusOK || m == nil {
				sleepCtx(ctx, time.Second)
				continue
			}
			s.mu.Lock()
			for _, pm := range msgID.FindAllStringSubmatch(body, -1) {
				s.got[pm[1]] = true
			}
			s.reloads++
			s.mu.Unlock()
			after = m[1]
		}
		s.stream(ctx, &after, &last, func() {
			if first {
				first = false
				connected <- struct{}{}
			}
		})
		sleepCtx(ctx, time.Duration(300+rand.IntN(700))*time.Millisecond)
	}
}

// stream reads one connection until it ends.
func (s *subscriber) stream(ctx context.Context, after, last *string, opened func()) {
	base := s.p.base()
	u := base + "/rooms/" + s.room + "/events"
	if *after != "" {
		u += "?after=" + url.QueryEscape(*after)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	hc := &http.Client{Jar: s.p.jar} // no timeout: a stream lasts
	resp, err := hc.Do(req)
	if err != nil {
		s.p.moveOn(base)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	s.mu.Lock()
	s.conns++
	s.mu.Unlock()
	opened()
	br := bufio.NewReaderSize(resp.Body, 32<<10)
	var event, id string
	var data strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if id != "" {
				*last = id
			}
			switch event {
			case "reload":
				*after, *last = "", ""
				return
			case "message", "":
				if m := msgID.FindStringSubmatch(data.String()); m != nil {
					s.mu.Lock()
					s.got[m[1]] = true
					s.mu.Unlock()
				}
			}
			event, id = "", ""
			data.Reset()
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			event = value
		case "id":
			id = value
		case "data":
			data.WriteString(value)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

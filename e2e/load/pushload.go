package main

// The post command's -push-subs: a room of people away, each at
// "everything" with a push subscription to a stand-in push service here,
// so that every post is a push per person (issue 19's load figure).

import (
	"bufio"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// pushService answers 201 to every push, as a push service does, and
// counts them.
type pushService struct {
	srv      *httptest.Server
	received atomic.Int64
}

func startPushService() *pushService {
	ps := &pushService{}
	ps.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ps.received.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	return ps
}

// setupPushRoom adds n people to room, each at "everything" in it and
// with one subscription to ps; none of them holds a live stream, so each
// is away. It returns them.
func setupPushRoom(ctx context.Context, t *target, room string, n int, ps *pushService, tr http.RoundTripper) ([]*user, error) {
	if t.Store == nil {
		return nil, fmt.Errorf("-push-subs needs the keyspace")
	}
	people, err := signUpMany(ctx, t.URL, "lpp"+runID()+"u", n, tr)
	if err != nil {
		return nil, err
	}
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	sub := chat.PushSubscription{P256dh: base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()),
		Auth: base64.RawURLEncoding.EncodeToString(auth)}
	conv := chat.NameKey(room)
	sem := make(chan struct{}, 8)
	errs := make(chan error, len(people))
	var wg sync.WaitGroup
	for _, u := range people {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			code, body, err := u.post(ctx, "/rooms/"+room+"/join", nil, false)
			if err == nil && code != http.StatusSeeOther {
				err = fmt.Errorf("%s joins %s: %d %.200s", u.login, room, code, body)
			}
			if err == nil {
				err = t.Store.SetLevel(ctx, u.login, conv, chat.LevelEverything)
			}
			if err == nil {
				s := sub
				s.Endpoint = ps.srv.URL + "/push/" + u.login
				err = t.Store.SavePushSubscription(ctx, u.login, s)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return people, <-errs
}

// pushCounts reads killrchat_push_total by result from the app's /metrics.
func pushCounts(ctx context.Context, base string) (map[string]float64, error) {
	return metricCounts(ctx, base, `killrchat_push_total{result="`)
}

// metricCounts reads, from the app's /metrics, the series whose line
// starts with prefix (up to its last label's opening quote), by that
// label's value.
func metricCounts(ctx context.Context, base, prefix string) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		name, value, _ := strings.Cut(strings.TrimPrefix(line, prefix), `"} `)
		var v float64
		_, _ = fmt.Sscan(value, &v)
		out[name] = v
	}
	return out, sc.Err()
}

// measureDrain counts the pushes the app sends in d with no posts, and
// the app's CPU meanwhile: the queue's drain rate, per core.
func measureDrain(ps *pushService, d time.Duration) {
	n0, a0, t0 := ps.received.Load(), cpuTime(childPID), time.Now()
	time.Sleep(d)
	n, app, el := ps.received.Load()-n0, cpuTime(childPID)-a0, time.Since(t0)
	fmt.Printf("push drain, no posts, %s: %d pushes, %.0f/s", el.Round(time.Millisecond), n, float64(n)/el.Seconds())
	if childPID != 0 && app > 0 {
		fmt.Printf(", app %.0f%% of a core: %.0f pushes a second per core of the app (%.0f µs each)",
			100*app.Seconds()/el.Seconds(), float64(n)/app.Seconds(), float64(app.Microseconds())/float64(max(n, 1)))
	}
	fmt.Println()
}

package main

// bots: incoming-webhook posts a second against browser posts a second
// into the same room, in the same run; then a bot's outgoing webhook:
// the latency from a mention's post to its delivery at a receiver here,
// which checks every signature.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func runBots(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bots", flag.ExitOnError)
	var c common
	c.register(fs)
	nUsers := fs.Int("users", 8, "people in the room, posting as a browser does")
	conc := fs.Int("c", 8, "concurrency of the hook posts and of the browser posts")
	dur := fs.Duration("d", 10*time.Second, "duration of each measured phase")
	warm := fs.Duration("warmup", 2*time.Second, "warm-up of each kind of post")
	runs := fs.Int("runs", 2, "hook and browser phases, alternated, this many times each")
	mentions := fs.Int("mentions", 200, "mentions of the bot posted for the delivery latency")
	rate := fs.Float64("rate", 20, "mentions posted a second")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the last deliveries")
	_ = fs.Parse(args)
	if *dur > 60*time.Second || *conc > 256 || *nUsers > 500 || *mentions > 10000 || *runs > 10 || *rate <= 0 {
		return fmt.Errorf("keep -d <= 60s, -c <= 256, -users <= 500, -mentions <= 10000, -runs <= 10, -rate > 0")
	}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Store == nil {
		return errors.New("bots makes its administrator in the store: give -keyspace with -url")
	}
	logf("app %s at %s, keyspace %s", t.Where, t.URL, t.Keyspace)

	rcv, err := startDeliveryReceiver()
	if err != nil {
		return err
	}
	defer rcv.close()
	tr := newTransport(*conc * 2)
	id := runID()
	users, err := signUpMany(ctx, t.URL, "lb"+id+"u", *nUsers, tr)
	if err != nil {
		return err
	}
	admin := users[0]
	if _, err := t.Store.SetAdmin(ctx, admin.login, true); err != nil {
		return err
	}
	room := "lbots" + id
	if err := setupRoom(ctx, room, users); err != nil {
		return err
	}
	hookURL, err := formValue(ctx, admin, "/rooms/"+room+"/hooks", url.Values{"name": {"CI"}}, "new-hook-url")
	if err != nil {
		return fmt.Errorf("make the room's incoming webhook: %w", err)
	}
	bot := "lb" + id + "bot"
	if _, err := formValue(ctx, admin, "/admin/bots", url.Values{"login": {bot}, "firstname": {"Load"}, "lastname": {"Bot"}}, "new-token"); err != nil {
		return fmt.Errorf("make the bot: %w", err)
	}
	if code, body, err := admin.post(ctx, "/rooms/"+room+"/members", url.Values{"login": {bot}}, false); err != nil || code != http.StatusSeeOther {
		return fmt.Errorf("add the bot to %s: %d %v %.200s", room, code, err, body)
	}
	secret, err := formValue(ctx, admin, "/admin/bots/"+bot+"/endpoint", url.Values{"endpoint": {rcv.url}}, "new-token")
	if err != nil {
		return fmt.Errorf("set the bot's endpoint (the app must allow 127.0.0.1: --bot-allow-addresses): %w", err)
	}
	rcv.secret.Store(&secret)
	logf("%d people, a hook and bot %s in room %s; the bot's endpoint %s", len(users), bot, room, rcv.url)

	// Hook posts against browser posts, into the same room.
	// The same text both ways: what a post indexes for search depends
	// on its words.
	content := func(w int, i int64) string { return fmt.Sprintf("build %d of worker %d passed", i, w) }
	hc := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	hook := func(ctx context.Context, w int, i int64) (int, error) {
		body := fmt.Sprintf(`{"text": %q}`, content(w, i))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hookURL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, fmt.Errorf("hook POST: %d %.200s", resp.StatusCode, b)
		}
		return resp.StatusCode, nil
	}
	browser := func(ctx context.Context, w int, i int64) (int, error) {
		u := users[w%len(users)]
		code, body, err := u.post(ctx, "/rooms/"+room+"/messages", url.Values{"content": {content(w, i)}}, true)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("browser POST: %d %.200s", code, body)
		}
		return code, err
	}
	logf("warm-up %s of each, then %d x (%s of hook posts, %s of browser posts) at concurrency %d", *warm, *runs, *dur, *dur, *conc)
	drive(ctx, "hook", *conc, *warm, hook)
	drive(ctx, "browser", *conc, *warm, browser)
	var hooks, browsers []phase
	for range *runs {
		hooks = append(hooks, drive(ctx, "hook", *conc, *dur, hook))
		browsers = append(browsers, drive(ctx, "browser", *conc, *dur, browser))
	}

	// Mentions of the bot, paced, each timed from its post to its
	// delivery.
	logf("%d mentions of %s at %.0f a second", *mentions, bot, *rate)
	sent := make([]time.Time, *mentions)
	var posted, failed atomic.Int64
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / *rate))
	for i := 0; i < *mentions && ctx.Err() == nil; i++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := users[i%len(users)]
			sent[i] = time.Now()
			code, body, err := u.post(ctx, "/rooms/"+room+"/messages", url.Values{"content": {fmt.Sprintf("@%s ping %d", bot, i)}}, true)
			if err != nil || code != http.StatusOK {
				sent[i] = time.Time{}
				failed.Add(1)
				logf("mention %d: %d %v %.200s", i, code, err, body)
				return
			}
			posted.Add(1)
		}()
	}
	tick.Stop()
	wg.Wait()
	deadline := time.Now().Add(*wait)
	for rcv.distinct() < int(posted.Load()) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	lat, dups, missing := rcv.latencies(sent)

	fmt.Printf("\n== bots: %d people, concurrency %d, %d x %s per kind of post, app %s\n", len(users), *conc, *runs, *dur, t.Where)
	var hookOK, browserOK int64
	var hookT, browserT time.Duration
	for i := range hooks {
		hooks[i].print()
		browsers[i].print()
		hookOK, hookT = hookOK+hooks[i].ok, hookT+hooks[i].elapsed
		browserOK, browserT = browserOK+browsers[i].ok, browserT+browsers[i].elapsed
	}
	hookRate, browserRate := float64(hookOK)/hookT.Seconds(), float64(browserOK)/browserT.Seconds()
	fmt.Printf("incoming-webhook posts %.0f/s, browser posts %.0f/s, same room: hook/browser = %.2f\n", hookRate, browserRate, hookRate/browserRate)
	fmt.Printf("outgoing deliveries: %d mentions posted (%d failed), %d delivered once, %d repeats, %d missing after %s, %d bad signatures\n",
		posted.Load(), failed.Load(), len(lat), dups, missing, *wait, rcv.badSignatures.Load())
	fmt.Printf("delivery latency, mention posted -> receiver: %s\n", lat.summary())
	t.printLogCounts(ctx)
	if missing > 0 || rcv.badSignatures.Load() > 0 || failed.Load() > 0 || hookOK == 0 || browserOK == 0 {
		return fmt.Errorf("%d deliveries missing, %d bad signatures, %d mentions not posted, %d hook and %d browser posts",
			missing, rcv.badSignatures.Load(), failed.Load(), hookOK, browserOK)
	}
	return nil
}

// formValue posts form to path as a plain form and returns the value of
// the input whose id is the page's one-time secret (a token, an
// address).
func formValue(ctx context.Context, u *user, path string, form url.Values, id string) (string, error) {
	code, body, err := u.post(ctx, path, form, false)
	if err != nil || code != http.StatusOK {
		return "", fmt.Errorf("POST %s: %d %v %.300s", path, code, err, body)
	}
	input := regexp.MustCompile(`<input[^>]*\bid="` + regexp.QuoteMeta(id) + `"[^>]*>`).FindString(body)
	m := regexp.MustCompile(`\bvalue="([^"]*)"`).FindStringSubmatch(input)
	if m == nil || m[1] == "" {
		return "", fmt.Errorf("POST %s: no #%s in the page", path, id)
	}
	return html.UnescapeString(m[1]), nil
}

// deliveryReceiver is a bot's server: it checks each delivery's
// signature and notes when each mention ("ping N") first arrived.
type deliveryReceiver struct {
	url           string
	srv           *http.Server
	secret        atomic.Pointer[string]
	badSignatures atomic.Int64
	mu            sync.Mutex
	arrived       map[int]time.Time
	repeats       int
}

var pingText = regexp.MustCompile(`ping (\d+)$`)

func startDeliveryReceiver() (*deliveryReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &deliveryReceiver{url: "http://" + ln.Addr().String() + "/hook", arrived: map[int]time.Time{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *deliveryReceiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	ts := req.Header.Get("X-KillrChat-Request-Timestamp")
	secret := r.secret.Load()
	mac := hmac.New(sha256.New, []byte(*secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute ||
		!hmac.Equal([]byte("v0="+hex.EncodeToString(mac.Sum(nil))), []byte(req.Header.Get("X-KillrChat-Signature"))) {
		r.badSignatures.Add(1)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var d struct{ Message struct{ Text string } }
	if err := json.Unmarshal(body, &d); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	if m := pingText.FindStringSubmatch(d.Message.Text); m != nil {
		n, _ := strconv.Atoi(m[1])
		r.mu.Lock()
		if _, seen := r.arrived[n]; seen {
			r.repeats++
		} else {
			r.arrived[n] = at
		}
		r.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK) // no body: no reply
}

func (r *deliveryReceiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrived)
}

// latencies are each delivered mention's time from its post, with the
// repeats and the mentions posted but not delivered.
func (r *deliveryReceiver) latencies(sent []time.Time) (lat durations, repeats, missing int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range sent {
		if s.IsZero() {
			continue
		}
		at, ok := r.arrived[i]
		if !ok {
			missing++
			continue
		}
		lat = append(lat, at.Sub(s))
	}
	return lat, r.repeats, missing
}

func (r *deliveryReceiver) close() { _ = r.srv.Close() }

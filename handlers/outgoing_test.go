package handlers_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/push/outgoing"
)

func liveAccounts(logins ...string) live.Invalidation { return live.Invalidation{Accounts: logins} }

// receiver is a bot's endpoint in the test: it checks every signature
// and answers by the script for a message's text.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret string
	mu     sync.Mutex
	got    []delivery
	// script answers the n-th delivery (from 0) of a text: status,
	// reply body and content type, and how long to sleep first.
	script func(text string, n int) (int, string, time.Duration)
	counts map[string]int
}

type delivery struct {
	text, id string
	retry    string
}

func newReceiver(t *testing.T, script func(string, int) (int, string, time.Duration)) *receiver {
	r := &receiver{t: t, script: script, counts: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	ts, err := strconv.ParseInt(req.Header.Get("X-KillrChat-Request-Timestamp"), 10, 64)
	r.mu.Lock()
	secret := r.secret
	r.mu.Unlock()
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute ||
		req.Header.Get("X-KillrChat-Signature") != outgoing.Sign(secret, ts, body) {
		r.t.Errorf("a delivery with a bad signature: %q at %q", req.Header.Get("X-KillrChat-Signature"), req.Header.Get("X-KillrChat-Request-Timestamp"))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p struct {
		Message struct {
			ID, Text, HTML, Permalink string
		}
		Conversation struct {
			ID      string
			PostURL string `json:"post_url"`
		}
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Message.HTML == "" || p.Conversation.PostURL == "" || p.Message.Permalink == "" {
		r.t.Errorf("a delivery lacks what it should carry: %s", body)
	}
	r.mu.Lock()
	n := r.counts[p.Message.Text]
	r.counts[p.Message.Text]++
	r.got = append(r.got, delivery{text: p.Message.Text, id: p.Message.ID, retry: req.Header.Get("X-KillrChat-Retry-Num")})
	r.mu.Unlock()
	status, reply, sleep := r.script(p.Message.Text, n)
	time.Sleep(sleep)
	if reply != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, reply)
}

// of are the deliveries of text.
func (r *receiver) of(text string) []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []delivery
	for _, d := range r.got {
		if d.text == text {
			out = append(out, d)
		}
	}
	return out
}

func (r *receiver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// within waits for cond, failing after a generous minute.
func within(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The outgoing tests do not run in parallel: the delivery queue is one
// for the keyspace, so an instance of one test would take another's
// deliveries, and one stopped at its test's end abandons an attempt to
// the lease's expiry (a second first attempt), or refuses loopback.

// allowLoopback turns the delivery queue on with 127.0.0.1 allowed.
func allowLoopback(c *handlers.Config) {
	c.Outgoing.Off = false
	c.Outgoing.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
}

// outgoingOn turns the delivery queue on, with no address allowed.
func outgoingOn(c *handlers.Config) { c.Outgoing.Off = false }

// setEndpoint has admin point bot's outgoing webhook at endpoint and
// gives r the secret shown.
func setEndpoint(t *testing.T, admin *client, bot, endpoint string, r *receiver) {
	t.Helper()
	p := admin.post("/admin/bots/"+bot+"/endpoint", url.Values{"endpoint": {endpoint}})
	secret, _ := p.doc.Find("#new-token").Attr("value")
	if p.StatusCode != http.StatusOK || !strings.HasPrefix(secret, "kcs_") {
		t.Fatalf("set endpoint: %d %q %s", p.StatusCode, secret, text(p, ".notice"))
	}
	r.mu.Lock()
	r.secret = secret
	r.mu.Unlock()
}

// repliesIn counts the bot's messages with text in room.
func repliesIn(t *testing.T, room, bot, text string) int {
	t.Helper()
	r, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := db.MessagesBefore(ctxT(t), r, chat.ID{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		if m.Author.Login == bot && m.Content == text {
			n++
		}
	}
	return n
}

// TestOutgoingWebhook: a mention gives one signed delivery and its
// reply; 500, 500, 200 gives 3 deliveries and one reply; a receiver
// that sleeps 8 s gets a retry and the room one reply; a message that
// does not mention the bot, and the bot's own, are not delivered.
func TestOutgoingWebhook(t *testing.T) {
	a := newApp(t, nil, nil, allowLoopback)
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	bot, _ := newBot(t, admin)
	room := createRoom(t, admin)
	if p := admin.post("/rooms/"+room+"/members", url.Values{"login": {bot}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("add bot: %d", p.StatusCode)
	}
	rcv := newReceiver(t, func(text string, n int) (int, string, time.Duration) {
		switch {
		case strings.HasSuffix(text, "flaky"):
			if n < 2 {
				return http.StatusInternalServerError, "", 0
			}
			return http.StatusOK, "third time", 0
		case strings.HasSuffix(text, "slow"):
			if n == 0 {
				return http.StatusOK, "slow ok", 8 * time.Second
			}
			return http.StatusOK, "slow ok", 0
		}
		return http.StatusOK, "hello back", 0
	})
	setEndpoint(t, admin, bot, rcv.srv.URL+"/hook", rcv)

	t.Run("Mention", func(t *testing.T) {
		postMessage(t, admin, room, "@"+bot+" hello")
		within(t, "the reply", func() bool { return repliesIn(t, room, bot, "hello back") == 1 })
		if got := rcv.of("@" + bot + " hello"); len(got) != 1 || got[0].retry != "" {
			t.Fatalf("deliveries: %+v", got)
		}
	})
	t.Run("RetriedTwiceOneReply", func(t *testing.T) {
		postMessage(t, admin, room, "@"+bot+" flaky")
		within(t, "the reply", func() bool { return repliesIn(t, room, bot, "third time") == 1 })
		got := rcv.of("@" + bot + " flaky")
		if len(got) != 3 || got[0].retry != "" || got[1].retry != "1" || got[2].retry != "2" {
			t.Fatalf("deliveries: %+v", got)
		}
	})
	t.Run("SlowSuccessOneReply", func(t *testing.T) {
		postMessage(t, admin, room, "@"+bot+" slow")
		within(t, "the retry", func() bool { return len(rcv.of("@"+bot+" slow")) == 2 })
		within(t, "the reply", func() bool { return repliesIn(t, room, bot, "slow ok") >= 1 })
		// The first attempt's answer comes after its time-out: it
		// must not post a second reply.
		time.Sleep(9 * time.Second)
		if n := repliesIn(t, room, bot, "slow ok"); n != 1 {
			t.Fatalf("%d replies", n)
		}
		if got := rcv.of("@" + bot + " slow"); got[1].retry != "1" {
			t.Fatalf("the retry's number: %+v", got)
		}
	})
	t.Run("NotMentioned", func(t *testing.T) {
		before := rcv.total()
		postMessage(t, admin, room, "no bot here")
		postMessage(t, admin, room, "@"+bot+" marker")
		within(t, "the marker", func() bool { return len(rcv.of("@"+bot+" marker")) == 1 })
		if n := rcv.total() - before; n != 1 {
			t.Fatalf("%d deliveries, want only the marker's", n)
		}
		if len(rcv.of("hello back")) != 0 {
			t.Fatal("the bot's own message was delivered to it")
		}
	})
	// Last: it moves the endpoint. An endpoint that redirects (here to
	// the receiver, which 127.0.0.1 being allowed it could reach) is
	// not followed, and its 3xx is not retried.
	t.Run("RedirectNotFollowed", func(t *testing.T) {
		var hits atomic.Int32
		redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			http.Redirect(w, r, rcv.srv.URL+"/hook", http.StatusTemporaryRedirect)
		}))
		defer redirect.Close()
		setEndpoint(t, admin, bot, redirect.URL+"/hook", rcv)
		postMessage(t, admin, room, "@"+bot+" redirected")
		within(t, "the delivery settled", func() bool {
			ds, err := db.Deliveries(ctxT(t), chat.DeliveryHour(time.Now()), chat.ID{})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				if d.Bot == bot && strings.Contains(string(d.Body), "redirected") {
					return d.Done
				}
			}
			return false
		})
		if n := len(rcv.of("@" + bot + " redirected")); n != 0 || hits.Load() != 1 {
			t.Fatalf("the redirect was followed %d times; the endpoint was asked %d times, want once", n, hits.Load())
		}
	})
}

// TestOutgoingQueuedSurvivesRestart: a delivery queued by an instance
// that stops before sending it is sent by the next one.
func TestOutgoingQueuedSurvivesRestart(t *testing.T) {
	first := newApp(t, nil, nil, allowLoopback, func(c *handlers.Config) { c.Outgoing.Off = true })
	admin := first.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	bot, _ := newBot(t, admin)
	room := createRoom(t, admin)
	if p := admin.post("/rooms/"+room+"/members", url.Values{"login": {bot}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("add bot: %d", p.StatusCode)
	}
	rcv := newReceiver(t, func(string, int) (int, string, time.Duration) { return http.StatusOK, "", 0 })
	setEndpoint(t, admin, bot, rcv.srv.URL, rcv)
	postMessage(t, admin, room, "@"+bot+" queued")
	first.srv.Shutdown()
	first.Close()
	if rcv.total() != 0 {
		t.Fatal("the stopped instance delivered")
	}
	newApp(t, nil, nil, allowLoopback)
	within(t, "the delivery after the restart", func() bool { return len(rcv.of("@"+bot+" queued")) == 1 })
}

// TestOutgoingOnceAcrossInstances: with two instances reading the
// queue, 100 mentions give 100 deliveries, not 200.
func TestOutgoingOnceAcrossInstances(t *testing.T) {
	ns := startNATS(t, -1)
	var logsA, logsB syncBuffer
	a := instance(t, ns.ClientURL(), &logsA, allowLoopback)
	instance(t, ns.ClientURL(), &logsB, allowLoopback)
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	bot, _ := newBot(t, admin)
	room := createRoom(t, admin)
	if p := admin.post("/rooms/"+room+"/members", url.Values{"login": {bot}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("add bot: %d", p.StatusCode)
	}
	rcv := newReceiver(t, func(string, int) (int, string, time.Duration) { return http.StatusOK, "", 0 })
	setEndpoint(t, admin, bot, rcv.srv.URL, rcv)
	const n = 100
	for i := range n {
		postMessage(t, admin, room, "@"+bot+" number "+strconv.Itoa(i))
	}
	within(t, "100 deliveries", func() bool { return rcv.total() >= n })
	time.Sleep(3 * time.Second) // a second delivery would come now
	if got := rcv.total(); got != n {
		t.Fatalf("%d deliveries of %d mentions", got, n)
	}
}

// TestOutgoingRefusesPrivateAddresses: without the allowance, endpoints
// at loopback, private, link-local and metadata addresses, and a name
// of loopback, are refused when set and when delivered, and no
// connection reaches a listener there.
func TestOutgoingRefusesPrivateAddresses(t *testing.T) {
	a := newApp(t, nil, nil, outgoingOn)
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	bot, _ := newBot(t, admin)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	var reached int
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			reached++
			mu.Unlock()
			c.Close()
		}
	}()
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	for _, ep := range []string{
		"http://127.0.0.1:" + strconv.Itoa(port), "http://[::1]:" + strconv.Itoa(port), "http://10.0.0.1/hook",
		"http://169.254.169.254/latest/meta-data/", "http://localhost:" + strconv.Itoa(port), "ftp://bot.example.com/",
	} {
		p := admin.post("/admin/bots/"+bot+"/endpoint", url.Values{"endpoint": {ep}})
		if p.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d", ep, p.StatusCode)
		}
	}
	// At delivery time too: an endpoint stored before (or whose name
	// now resolves elsewhere) is checked again.
	room := createRoom(t, admin)
	if p := admin.post("/rooms/"+room+"/members", url.Values{"login": {bot}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("add bot: %d", p.StatusCode)
	}
	if _, err := db.SetBotEndpoint(ctxT(t), bot, "http://127.0.0.1:"+strconv.Itoa(port)+"/hook"); err != nil {
		t.Fatal(err)
	}
	a.srv.App().Invalidate(ctxT(t), liveAccounts(bot))
	postMessage(t, admin, room, "@"+bot+" are you there")
	within(t, "the delivery settled", func() bool {
		ds, err := db.Deliveries(ctxT(t), chat.DeliveryHour(time.Now()), chat.ID{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Bot == bot {
				return d.Done
			}
		}
		return false
	})
	conns.Wait()
	mu.Lock()
	defer mu.Unlock()
	if reached != 0 {
		t.Fatalf("%d connections reached the listener", reached)
	}
}

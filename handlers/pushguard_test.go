package handlers_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
)

// tap is a TCP listener that counts the connections it gets and closes
// them at once: a push that reaches it is one that should not have.
type tap struct {
	net.Listener
	got atomic.Int64
}

func listenTap(t *testing.T, network, address string) *tap {
	t.Helper()
	l, err := net.Listen(network, address)
	if err != nil {
		t.Fatalf("listen %s: %v", address, err)
	}
	tp := &tap{Listener: l}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			tp.got.Add(1)
			conn.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return tp
}

func (tp *tap) port() int { return tp.Addr().(*net.TCPAddr).Port }

// TestWebPushRefusesPrivateAddresses (issue 37, fault 2): on an instance
// without --push-allow-http-loopback, endpoints at internal addresses, in
// every spelling, are refused with 422 and stored for nobody; rows stored
// before (or by a race) make no connection when a DM is pushed: the
// listener on 127.0.0.1 and [::1] gets none.
func TestWebPushRefusesPrivateAddresses(t *testing.T) {
	v4 := listenTap(t, "tcp4", "127.0.0.1:0")
	v6 := listenTap(t, "tcp6", "[::1]:0")
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.Push.Backoff = time.Millisecond })
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	keys := newBrowser(t, newPushService(t), "/k").form()
	p4, p6 := v4.port(), v6.port()
	atTap := []string{
		fmt.Sprintf("https://127.0.0.1:%d/x", p4),
		fmt.Sprintf("https://localhost:%d/x", p4),
		fmt.Sprintf("https://2130706433:%d/x", p4),
		fmt.Sprintf("https://0x7f000001:%d/x", p4),
		fmt.Sprintf("https://127.1:%d/x", p4),
		fmt.Sprintf("https://[::1]:%d/x", p6),
		fmt.Sprintf("https://[::ffff:127.0.0.1]:%d/x", p4),
		fmt.Sprintf("https://0.0.0.0:%d/x", p4),
		fmt.Sprintf("https://app.localhost:%d/x", p4),
		fmt.Sprintf("http://127.0.0.1:%d/x", p4),
	}
	elsewhere := []string{
		"https://169.254.169.254/latest", "https://10.0.0.1/x", "https://192.168.1.1/x", "https://172.16.0.1/x",
		"https://100.64.0.1/x", "https://metadata.google.internal/x", "https://[fd00::1]/x", "https://[fe80::1%25eth0]/x",
		"https://[::ffff:10.0.0.1]/x", "https://[2002:a00:1::]/x", "https://[64:ff9b::a9fe:a9fe]/x", "https://metadata/x",
	}
	for _, endpoint := range append(append([]string{}, atTap...), elsewhere...) {
		form := url.Values{"endpoint": {endpoint}, "p256dh": keys["p256dh"], "auth": keys["auth"]}
		if p := bob.post("/push/subscriptions", form); p.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", endpoint, p.StatusCode)
		}
	}
	if subs, _ := db.PushSubscriptions(ctxT(t), bob.login); len(subs) != 0 {
		t.Errorf("subscriptions at internal addresses stored: %v", subs)
	}
	// Rows stored before this check (or by a name later rebound) are
	// refused when the push is made.
	for _, endpoint := range atTap {
		sub := chat.PushSubscription{Endpoint: endpoint, P256dh: keys["p256dh"][0], Auth: keys["auth"][0]}
		if err := db.SavePushSubscription(ctxT(t), bob.login, sub); err != nil {
			t.Fatal(err)
		}
	}
	postDM(t, ada, dmAddress(t, ada.login, bob.login), "are you in?")
	a.srv.Push().Flush()
	if n, n6 := v4.got.Load(), v6.got.Load(); n != 0 || n6 != 0 {
		t.Errorf("the listeners on 127.0.0.1 and [::1] got %d and %d connections, want none", n, n6)
	}
}

// TestWebPushNoRedirects (issue 37, fault 2): a push service that answers
// 302 to another address is not followed (the push failed), so the
// target gets nothing, on 127.0.0.1 (which this instance may reach) or on
// 127.0.0.2 (which it may not).
func TestWebPushNoRedirects(t *testing.T) {
	a := newApp(t, nil, nil, withPush)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	for _, target := range []*tap{listenTap(t, "tcp4", "127.0.0.1:0"), listenTap(t, "tcp4", "127.0.0.2:0")} {
		var hops atomic.Int64
		hop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hops.Add(1)
			http.Redirect(w, r, "http://"+target.Addr().String()+"/metadata", http.StatusFound)
		}))
		t.Cleanup(hop.Close)
		phone := newBrowser(t, &pushService{Server: hop}, "/hop")
		if p := bob.post("/push/subscriptions", phone.form()); p.StatusCode != http.StatusNoContent {
			t.Fatalf("subscribe: %d %s", p.StatusCode, p.body)
		}
		postDM(t, ada, dmAddress(t, ada.login, bob.login), "hop")
		a.srv.Push().Flush()
		if n := hops.Load(); n != 1 {
			t.Errorf("%d pushes to the redirecting service, want 1", n)
		}
		if n := target.got.Load(); n != 0 {
			t.Errorf("the redirect's target %s got %d connections, want none", target.Addr(), n)
		}
		if p := bob.post("/push/subscriptions/delete", url.Values{"endpoint": {phone.endpoint}}); p.StatusCode != http.StatusNoContent {
			t.Fatalf("unsubscribe: %d", p.StatusCode)
		}
	}
}

// TestWebPushSubscriptionsCapped (issue 37, fault 2): a person keeps at
// most 10 subscriptions, the oldest dropped, and a message makes at most
// 10 requests for them; fields out of bounds are refused.
func TestWebPushSubscriptionsCapped(t *testing.T) {
	ps := newPushService(t)
	a := newApp(t, nil, nil, withPush)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	var endpoints []string
	for i := range 12 {
		b := newBrowser(t, ps, fmt.Sprintf("/cap%02d", i))
		if p := bob.post("/push/subscriptions", b.form()); p.StatusCode != http.StatusNoContent {
			t.Fatalf("subscribe %d: %d %s", i, p.StatusCode, p.body)
		}
		endpoints = append(endpoints, b.endpoint)
		time.Sleep(2 * time.Millisecond) // created_at is in milliseconds
	}
	subs, err := db.PushSubscriptions(ctxT(t), bob.login)
	if err != nil || len(subs) != 10 {
		t.Fatalf("%d subscriptions stored (%v), want 10", len(subs), err)
	}
	for _, s := range subs {
		if s.Endpoint == endpoints[0] || s.Endpoint == endpoints[1] {
			t.Errorf("the oldest subscription %s was kept", s.Endpoint)
		}
	}
	postDM(t, ada, dmAddress(t, ada.login, bob.login), "how many phones?")
	a.srv.Push().Flush()
	total := 0
	for i := range 12 {
		total += len(ps.take(fmt.Sprintf("/cap%02d", i)))
	}
	if total != 10 {
		t.Errorf("one DM made %d pushes, want 10", total)
	}
	keys := newBrowser(t, ps, "/k").form()
	for name, bad := range map[string]url.Values{
		"long endpoint": {"endpoint": {ps.URL + "/" + strings.Repeat("a", 1000)}, "p256dh": keys["p256dh"], "auth": keys["auth"]},
		"long key":      {"endpoint": {ps.URL + "/k"}, "p256dh": {strings.Repeat("A", 10_000)}, "auth": keys["auth"]},
		"long auth":     {"endpoint": {ps.URL + "/k"}, "p256dh": keys["p256dh"], "auth": {strings.Repeat("A", 10_000)}},
		"user info":     {"endpoint": {strings.Replace(ps.URL, "//", "//u:p@", 1) + "/k"}, "p256dh": keys["p256dh"], "auth": keys["auth"]},
		"space":         {"endpoint": {ps.URL + "/k l"}, "p256dh": keys["p256dh"], "auth": keys["auth"]},
	} {
		if p := bob.post("/push/subscriptions", bad); p.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", name, p.StatusCode)
		}
	}
}

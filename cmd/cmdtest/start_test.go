package cmdtest_test

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/cmd/cmdtest"
	"github.com/killrchat/killrchat/store/storetest"
)

// forwarder stands between the app and Cassandra: until open, it cuts
// every connection at once (a reset), as a node that is not up yet.
type forwarder struct {
	ln       net.Listener
	upstream string
	opened   atomic.Bool
	refused  atomic.Int64
	mu       sync.Mutex
	// ports are the local ports of the connections it made to Cassandra.
	ports map[int]bool
}

func newForwarder(t *testing.T, upstream string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{ln: ln, upstream: upstream, ports: map[int]bool{}}
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !f.opened.Load() {
				f.refused.Add(1)
				_ = c.(*net.TCPConn).SetLinger(0)
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.ports[up.LocalAddr().(*net.TCPAddr).Port] = true
			f.mu.Unlock()
			conns.Store(c, true)
			conns.Store(up, true)
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			go pipe(up, c)
			go pipe(c, up)
		}
	}()
	return f
}

func (f *forwarder) addr() string { return f.ln.Addr().String() }

func (f *forwarder) forwarded(port int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ports[port]
}

func testLog(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// TestPushAfterCassandraComesUp: the program starts while Cassandra does
// not answer (a forwarder that resets every connection); once it answers
// and /readyz says ready, /push/key answers 200 within 10 s and a direct
// message brings a push to the local push service. It failed before the
// VAPID keys were set up once the store connects: /push/key answered 503
// for the life of the process.
func TestPushAfterCassandraComesUp(t *testing.T) {
	fwd := newForwarder(t, net.JoinHostPort(storetest.Hosts()[0], "9042"))
	ks := storetest.Keyspace("cmd")
	t.Cleanup(func() {
		if err := storetest.DropKeyspace(ks); err != nil {
			t.Logf("drop keyspace %s: %v", ks, err)
		}
	})
	var pushes struct {
		sync.Mutex
		got []http.Header
	}
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pushes.Lock()
		if r.URL.Path == "/bob" {
			pushes.got = append(pushes.got, r.Header.Clone())
		}
		pushes.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer ps.Close()

	m, base, err := cmdtest.Start(testLog(t), append(cmdtest.Flags(ks, hex.EncodeToString([]byte(strings.Repeat("s", 32)))),
		"--cassandra-hosts", fwd.addr(), "--push-allow-http-loopback", "--auth-rate", "1000")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })

	time.Sleep(2 * time.Second)
	if code, _ := get(t, http.DefaultClient, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before Cassandra answers: %d, want 503", code)
	}
	if fwd.refused.Load() == 0 {
		t.Fatal("the app did not try Cassandra through the forwarder")
	}
	fwd.opened.Store(true)

	// Connected, it migrates a fresh keyspace: minutes on a busy node.
	if err := cmdtest.WaitReady(base, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	ready := time.Now()
	ada, adaLogin := signUp(t, base, "ada")
	bob, bobLogin := signUp(t, base, "bob")
	var key string
	for {
		code, body := get(t, bob, base+"/push/key")
		if code == http.StatusOK {
			key = strings.TrimSpace(body)
			break
		}
		if time.Since(ready) > 10*time.Second {
			t.Fatalf("/push/key: %d %.120q 10 s after /readyz said ready, want 200", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("/push/key answered 200 %v after /readyz said ready", time.Since(ready).Round(time.Millisecond))

	if code := post(t, bob, base, "/push/subscriptions", newSubscription(t, ps.URL+"/bob")); code != http.StatusNoContent {
		t.Fatalf("subscribe: %d", code)
	}
	address, err := chat.DMAddress([]string{adaLogin, bobLogin})
	if err != nil {
		t.Fatal(err)
	}
	if code := post(t, ada, base, "/dm/"+address+"/messages", url.Values{"content": {"lunch?"}}); code != http.StatusSeeOther {
		t.Fatalf("post a DM: %d", code)
	}
	for {
		pushes.Lock()
		got := pushes.got
		pushes.Unlock()
		if len(got) > 0 {
			if auth := got[0].Get("Authorization"); !strings.Contains(auth, "k="+key) {
				t.Errorf("the push's Authorization %q is not signed with the key /push/key gave", auth)
			}
			break
		}
		if time.Since(ready) > 30*time.Second {
			t.Fatal("no push reached the push service")
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkForwarded(t, fwd, ks)
}

// checkForwarded checks that every connection of the app's session (those
// on keyspace ks) came through the forwarder: gocql reached the node it
// discovered at the port --cassandra-hosts named, not at 9042.
func checkForwarded(t *testing.T, fwd *forwarder, ks string) {
	t.Helper()
	sess, err := (&storetest.DB{Keyspace: "system_views"}).Session()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	iter := sess.Query(`SELECT port, keyspace_name FROM system_views.clients`).Iter()
	var port, n int
	var keyspace string
	for iter.Scan(&port, &keyspace) {
		if keyspace != ks {
			continue
		}
		n++
		if !fwd.forwarded(port) {
			t.Errorf("a connection on %s from port %d did not come through the forwarder", ks, port)
		}
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("no connection on %s in system_views.clients", ks)
	}
}

var logins atomic.Int64

// signUp returns a client logged in as a new person named after name,
// and the person's login.
func signUp(t *testing.T, base, name string) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	l := fmt.Sprintf("%s%d", name, logins.Add(1))
	form := url.Values{"login": {l}, "password": {"password1"}, "password_confirm": {"password1"},
		"firstname": {name}, "lastname": {"Test"}}
	if code := post(t, c, base, "/signup", form); code != http.StatusSeeOther {
		t.Fatalf("sign up %s: %d", l, code)
	}
	return c, l
}

// newSubscription is a browser's push subscription to endpoint: its
// P-256 key and auth secret, as the Push API gives them.
func newSubscription(t *testing.T, endpoint string) url.Values {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return url.Values{"endpoint": {endpoint}, "p256dh": {base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes())},
		"auth": {base64.RawURLEncoding.EncodeToString(auth)}}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func page(t *testing.T, c *http.Client, u string) *goquery.Document {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// post submits form with the CSRF token a page gives c now.
func post(t *testing.T, c *http.Client, base, path string, form url.Values) int {
	t.Helper()
	token := ""
	for _, p := range []string{"/profile", "/login"} {
		if tok, ok := page(t, c, base+p).Find(`meta[name="csrf-token"]`).Attr("content"); ok && tok != "" {
			token = tok
			break
		}
	}
	form.Set("_csrf", token)
	resp, err := c.PostForm(base+path, form)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

package handlers_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
)

// cutProxy forwards a local port to Cassandra and can be cut and restored,
// to play Cassandra going down and coming back.
type cutProxy struct {
	port   int
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newCutProxy(t *testing.T) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p := &cutProxy{port: port, target: net.JoinHostPort(storetest.Hosts()[0], "9042"), conns: map[net.Conn]bool{}}
	t.Cleanup(p.down)
	return p
}

func (p *cutProxy) up(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p.port))
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *cutProxy) pipe(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(u, c); u.Close() }()
	_, _ = io.Copy(c, u)
	c.Close()
}

// down closes the listener and every open connection.
func (p *cutProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func waitStatus(t *testing.T, c *client, path string, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var got int
	for time.Now().Before(deadline) {
		if got = c.get(path).StatusCode; got == want {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s stayed %d, want %d within %v", path, got, want, within)
}

// TestCassandraDown starts the app while Cassandra is unreachable, then
// brings Cassandra up, down and up again: /readyz and the pages answer 503
// with a readable page while it is down, and the app recovers by itself.
func TestCassandraDown(t *testing.T) {
	proxy := newCutProxy(t)
	st := store.New(store.Config{Hosts: []string{"127.0.0.1"}, Port: proxy.port, Keyspace: db.Keyspace, Timeout: 2 * time.Second})
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	connected := make(chan error, 1)
	go func() { connected <- st.ConnectWithRetry(ctx) }()

	a := newApp(t, st, nil)
	c := a.client(t)
	if p := c.get("/readyz"); p.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz while down: %d", p.StatusCode)
	}
	p := c.post("/login", url.Values{"login": {"someone"}, "password": {"password1"}})
	if p.StatusCode != http.StatusServiceUnavailable || text(p, ".error-page") == "" {
		t.Fatalf("login while down: %d %q", p.StatusCode, p.body)
	}
	if p.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}

	proxy.up(t)
	select {
	case err := <-connected:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("did not connect after Cassandra came up")
	}
	waitStatus(t, c, "/readyz", http.StatusOK, 30*time.Second)
	login := unique("survivor")
	if p := c.post("/signup", signupForm(login, "password1")); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign up once up: %d", p.StatusCode)
	}

	proxy.down()
	waitStatus(t, c, "/readyz", http.StatusServiceUnavailable, 30*time.Second)
	p = c.get("/")
	if p.StatusCode != http.StatusServiceUnavailable || text(p, ".error-page p") == "" {
		t.Fatalf("page while down: %d %q", p.StatusCode, text(p, "main"))
	}
	// Not the logged-out sidebar: people took it for being logged out
	// (issue 39).
	if n := p.doc.Find(`.sidebar a[href="/login"], .sidebar a[href="/signup"]`).Length(); n != 0 {
		t.Errorf("the page while down offers to log in or sign up (%d links)", n)
	}

	proxy.up(t)
	waitStatus(t, c, "/readyz", http.StatusOK, 60*time.Second)
	waitStatus(t, c, "/", http.StatusOK, 30*time.Second)
	if errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal("context cancelled")
	}
}

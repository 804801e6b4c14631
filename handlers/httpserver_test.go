package handlers_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/handlers/routes"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/static"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/web/metrics"
	"github.com/killrchat/killrchat/web/server"
)

// servedApp is an app instance behind the server main.go runs: its
// timeouts and connection cap, on a real listener.
type servedApp struct {
	*app
	limiter *server.ConnLimiter
}

// newServedApp starts the app with lim; log receives the app's records
// (discarded when nil).
func newServedApp(t *testing.T, lim server.Limits, log *slog.Logger, tls bool, opts ...appOption) *servedApp {
	t.Helper()
	cfg := handlers.Config{SessionKey: testKey, AuthRate: 1000, Static: static.Files, RoomsPerPage: 10}
	for _, o := range opts {
		o(&cfg)
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	hub := live.NewLocalHub()
	e := echo.New()
	e.IPExtractor = echo.ExtractIPDirect()
	cfg.Indexer = func(log *slog.Logger, perSecond float64, off bool, closing <-chan struct{}) handlers.Indexer {
		return store.NewIndexer(db.Store, log, perSecond, off, closing)
	}
	srv := handlers.New(db.Store, metrics.New(), hub, cfg, log)
	routes.Register(e, srv, db.Store)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, limited := server.New(ln, e, lim)
	ts := httptest.NewUnstartedServer(e)
	ts.Listener.Close()
	ts.Listener = limited
	ts.Config = hs
	if tls {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(func() {
		srv.Shutdown()
		ts.Close()
	})
	cl, _ := limited.(*server.ConnLimiter)
	return &servedApp{app: &app{Server: ts, srv: srv, hub: hub}, limiter: cl}
}

func (a *servedApp) host() string {
	u, _ := url.Parse(a.URL)
	return u.Host
}

// closedWithin reports whether the server closes conn within d, reading
// (and discarding) whatever it sends meanwhile; every tick, write (if set)
// is called, as a client still talking would.
func closedWithin(conn net.Conn, d time.Duration, write func() error) bool {
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, conn)
		close(closed)
	}()
	deadline := time.After(d)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			return true
		case <-deadline:
			conn.Close()
			<-closed
			return false
		case <-tick.C:
			if write != nil && write() != nil {
				// A write fails once the server has closed its end.
				select {
				case <-closed:
				case <-time.After(time.Second):
				}
				return true
			}
		}
	}
}

// TestSlowBodyIsCutOff: a POST whose body trickles in (a byte at a time)
// is closed by the server once ReadTimeout passes, however long the
// client keeps sending.
func TestSlowBodyIsCutOff(t *testing.T) {
	lim := server.Limits{ReadHeaderTimeout: 500 * time.Millisecond, ReadTimeout: time.Second,
		WriteTimeout: 2 * time.Second, IdleTimeout: 5 * time.Second, MaxConns: 100}
	a := newServedApp(t, lim, nil, false)
	conn, err := net.Dial("tcp", a.host())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nlogin=", a.host())
	if !closedWithin(conn, 15*time.Second, func() error { _, err := conn.Write([]byte("a")); return err }) {
		t.Fatal("the server kept a trickling POST open for 15 s (ReadTimeout is 1 s)")
	}
}

// TestIdleKeepAliveIsClosed: a keep-alive connection with no further
// request is closed after IdleTimeout.
func TestIdleKeepAliveIsClosed(t *testing.T) {
	lim := server.Limits{ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: 500 * time.Millisecond, MaxConns: 100}
	a := newServedApp(t, lim, nil, false)
	conn, err := net.Dial("tcp", a.host())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", a.host())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("healthz: %d, close=%v", resp.StatusCode, resp.Close)
	}
	if !closedWithin(conn, 10*time.Second, nil) {
		t.Fatal("an idle keep-alive connection was still open after 10 s (IdleTimeout is 500 ms)")
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// healthz asks /healthz on a new connection.
func healthz(a *servedApp, within time.Duration) error {
	c := &http.Client{Timeout: within, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(a.URL + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s", resp.Status)
	}
	return nil
}

// TestConnCapEvictsIdle: with the cap at N and N idle connections open
// (some that sent nothing, some kept alive after a request), /healthz on a
// new connection is still answered, the server never holds more than N
// connections, and ten times N more idle connections leave it so.
func TestConnCapEvictsIdle(t *testing.T) {
	const capN = 20
	lim := server.Limits{ReadHeaderTimeout: 30 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxConns: capN}
	a := newServedApp(t, lim, nil, false)
	before := openFDs(t)

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	open := func(n int) {
		for i := range n {
			c, err := net.Dial("tcp", a.host())
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			if i%2 == 0 { // a keep-alive connection after one request
				fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", a.host())
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			if open := a.limiter.Open(); open > capN {
				t.Fatalf("%d connections open, cap %d", open, capN)
			}
		}
	}
	open(capN)
	waitOpen(t, a, capN)
	if err := healthz(a, 5*time.Second); err != nil {
		t.Fatalf("at the cap with %d idle connections: %v", capN, err)
	}
	open(10 * capN)
	if err := healthz(a, 5*time.Second); err != nil {
		t.Fatalf("after %d more idle connections: %v", 10*capN, err)
	}
	if open := a.limiter.Open(); open > capN {
		t.Fatalf("%d connections open, cap %d", open, capN)
	}
	if a.limiter.Evicted() < 10*capN {
		t.Errorf("%d idle connections evicted, want at least %d", a.limiter.Evicted(), 10*capN)
	}
	// Client and server side of each connection live in this process:
	// the server's side holds at most capN descriptors (+1 being accepted).
	if grown := openFDs(t) - before; grown > len(conns)+capN+10 {
		t.Errorf("descriptors grew by %d for %d client connections", grown, len(conns))
	}
}

func waitOpen(t *testing.T, a *servedApp, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for a.limiter.Open() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", a.limiter.Open(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnCapWaitsForBusy: when all N connections are busy with a request
// (slow bodies), a new connection waits rather than pushing the server
// over its cap, and is answered once a slot frees.
func TestConnCapWaitsForBusy(t *testing.T) {
	const capN = 5
	lim := server.Limits{ReadHeaderTimeout: time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 5 * time.Second, IdleTimeout: time.Minute, MaxConns: capN}
	a := newServedApp(t, lim, nil, false)
	var wg sync.WaitGroup
	for range capN {
		conn, err := net.Dial("tcp", a.host())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\nx", a.host())
		wg.Add(1)
		go func() {
			defer wg.Done()
			closedWithin(conn, 20*time.Second, func() error { _, err := conn.Write([]byte("x")); return err })
		}()
	}
	waitOpen(t, a, capN)
	if err := healthz(a, 15*time.Second); err != nil {
		t.Fatalf("healthz was not answered once a slot freed: %v", err)
	}
	if open := a.limiter.Open(); open > capN {
		t.Fatalf("%d connections open, cap %d", open, capN)
	}
	wg.Wait()
}

// TestLiveStreamOutlivesTimeouts: a live stream lifts the server's read
// and write deadlines, so it still delivers after both have passed.
func TestLiveStreamOutlivesTimeouts(t *testing.T) {
	lim := server.Limits{ReadHeaderTimeout: time.Second, ReadTimeout: time.Second,
		WriteTimeout: time.Second, IdleTimeout: time.Minute, MaxConns: 100}
	streams := newServedApp(t, lim, nil, false)
	// Sign-up (bcrypt, under -race) may take longer than these timeouts:
	// everything but the stream goes through an instance without them,
	// sharing the database and the hub.
	a := newApp(t, nil, streams.hub)
	poster, reader := a.signedUp(t, unique("poster")), a.signedUp(t, unique("reader"))
	room := roomWith(t, poster, reader)
	s := reader.on(streams.app).subscribe(t, room, "")
	if s.status != http.StatusOK {
		t.Fatalf("stream: %d", s.status)
	}
	time.Sleep(2500 * time.Millisecond)
	postMessage(t, poster, room, "after the deadlines")
	if _, ev := s.nextMessage(t, 10*time.Second); !strings.Contains(ev.data, "after the deadlines") {
		t.Fatalf("got %q", ev.data)
	}
}

// TestStreamWritesUnderTheConnectionCap: behind the server main.go runs,
// whose connection cap wraps every connection, a live stream is still
// written by the fan-out itself (the figures of e2e/load sse are of that
// path), and gets its room's messages.
func TestStreamWritesUnderTheConnectionCap(t *testing.T) {
	lim := server.DefaultLimits()
	lim.MaxConns = 50
	a := newServedApp(t, lim, nil, false)
	alice, bob := a.signedUp(t, unique("alice")), a.signedUp(t, unique("bob"))
	room := roomWith(t, alice, bob)
	s := alice.subscribe(t, room, "")
	defer s.close()
	eventually(t, "the stream written by the fan-out", func() bool { return a.srv.Live().DirectStreams() == 1 })
	postMessage(t, bob, room, "through the cap")
	allReceive(t, []*stream{s}, "through the cap")
}

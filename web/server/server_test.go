package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/web/server"
)

// served is a server.New on a loopback port.
type served struct {
	addr    string
	limiter *server.ConnLimiter // nil without a cap
}

// serve starts h under lim and stops it when the test ends.
func serve(t *testing.T, h http.Handler, lim server.Limits) served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, l := server.New(ln, h, lim)
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	cl, _ := l.(*server.ConnLimiter)
	return served{addr: ln.Addr().String(), limiter: cl}
}

// ok answers 200 "ok".
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

// dial opens a connection that the test closes when it ends.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends one keep-alive GET on c and reads the answer.
func get(c net.Conn, r *bufio.Reader, path string) (string, error) {
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// closedWithin reports whether the server closed c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// waitOpen waits until the limiter counts n open connections.
func waitOpen(t *testing.T, l *server.ConnLimiter, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); l.Open() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", l.Open(), n)
		}
	}
}

var generous = server.Limits{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
	WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute}

func TestNoCap(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hs, l := server.New(ln, ok, generous)
	if l != ln || hs.ConnState != nil {
		t.Fatal("with MaxConns 0 the listener is wrapped")
	}
	if hs.ReadHeaderTimeout != generous.ReadHeaderTimeout || hs.ReadTimeout != generous.ReadTimeout ||
		hs.WriteTimeout != generous.WriteTimeout || hs.IdleTimeout != generous.IdleTimeout {
		t.Fatalf("timeouts not taken: %+v", hs)
	}
}

func TestDefaultLimits(t *testing.T) {
	t.Parallel()
	lim := server.DefaultLimits()
	if lim.ReadHeaderTimeout <= 0 || lim.ReadTimeout <= 0 || lim.WriteTimeout <= 0 || lim.IdleTimeout <= 0 {
		t.Fatalf("a default timeout is off: %+v", lim)
	}
	if lim.MaxConns < 10 || lim.MaxConns != server.DefaultMaxConns() {
		t.Fatalf("MaxConns = %d, DefaultMaxConns = %d", lim.MaxConns, server.DefaultMaxConns())
	}
}

// TestCapClosesTheLongestIdle: at the cap, a new connection makes room by
// closing the connection idle the longest; the others keep working.
func TestCapClosesTheLongestIdle(t *testing.T) {
	t.Parallel()
	lim := generous
	lim.MaxConns = 2
	s := serve(t, ok, lim)

	oldest, newer := dial(t, s.addr), dial(t, s.addr)
	oldestR, newerR := bufio.NewReader(oldest), bufio.NewReader(newer)
	for _, c := range []struct {
		conn net.Conn
		r    *bufio.Reader
	}{{oldest, oldestR}, {newer, newerR}} {
		if body, err := get(c.conn, c.r, "/"); err != nil || body != "ok" {
			t.Fatalf("first request: %q, %v", body, err)
		}
		time.Sleep(20 * time.Millisecond) // oldest has been idle longer
	}
	waitOpen(t, s.limiter, 2)

	third := dial(t, s.addr)
	if body, err := get(third, bufio.NewReader(third), "/"); err != nil || body != "ok" {
		t.Fatalf("a new connection at the cap: %q, %v", body, err)
	}
	if !closedWithin(oldest, 5*time.Second) {
		t.Fatal("the longest idle connection was not closed")
	}
	if body, err := get(newer, newerR, "/"); err != nil || body != "ok" {
		t.Fatalf("the newer idle connection: %q, %v; only the longest idle goes", body, err)
	}
	if s.limiter.Evicted() != 1 || s.limiter.Open() > 2 {
		t.Fatalf("evicted %d, open %d; want 1 and at most 2", s.limiter.Evicted(), s.limiter.Open())
	}
}

// TestCapClosesSilentConnections: a connection that has sent nothing yet
// counts as idle, so sockets opened and left silent cannot lock visitors
// out.
func TestCapClosesSilentConnections(t *testing.T) {
	t.Parallel()
	lim := generous
	lim.MaxConns = 3
	s := serve(t, ok, lim)
	var silent []net.Conn
	for range 3 {
		silent = append(silent, dial(t, s.addr))
	}
	waitOpen(t, s.limiter, 3)
	for i := range 3 {
		c := dial(t, s.addr)
		if body, err := get(c, bufio.NewReader(c), "/"); err != nil || body != "ok" {
			t.Fatalf("visitor %d: %q, %v", i, body, err)
		}
		if s.limiter.Open() > 3 {
			t.Fatalf("%d open, cap 3", s.limiter.Open())
		}
	}
	if !closedWithin(silent[0], 5*time.Second) {
		t.Fatal("the first silent connection is still open")
	}
}

// TestCapWaitsWhenAllAreBusy: when every connection is inside a request,
// a new one is not served until one of them ends.
func TestCapWaitsWhenAllAreBusy(t *testing.T) {
	t.Parallel()
	release, entered := make(chan struct{}), make(chan struct{}, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
	lim := generous
	lim.MaxConns = 2
	s := serve(t, h, lim)
	busy := make(chan error, 2)
	for range 2 {
		c := dial(t, s.addr)
		go func() { _, err := get(c, bufio.NewReader(c), "/slow"); busy <- err }()
	}
	<-entered
	<-entered

	waiting := dial(t, s.addr)
	answered := make(chan string, 1)
	go func() { body, _ := get(waiting, bufio.NewReader(waiting), "/"); answered <- body }()
	select {
	case body := <-answered:
		t.Fatalf("answered %q over the cap while both connections were busy", body)
	case <-time.After(300 * time.Millisecond):
	}
	if s.limiter.Evicted() != 0 {
		t.Fatalf("a busy connection was evicted")
	}
	close(release)
	for range 2 {
		if err := <-busy; err != nil {
			t.Fatalf("a busy request: %v", err)
		}
	}
	// The busy ones are idle keep-alive connections now: room is made.
	select {
	case body := <-answered:
		if body != "ok" {
			t.Fatalf("got %q", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting connection was not served once the others were done")
	}
}

// TestCloseStopsAWaitingAccept: closing the listener ends an Accept that
// waits for room.
func TestCloseStopsAWaitingAccept(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := server.LimitConns(ln, 1)
	first := make(chan net.Conn, 1)
	go func() { c, _ := l.Accept(); first <- c }()
	dial(t, ln.Addr().String())
	held := <-first
	defer held.Close()
	// held is idle (nothing marks it busy without a server), so mark it
	// busy as the server would once a request starts.
	l.ConnState(held, http.StateActive)

	accepted := make(chan error, 1)
	go func() { _, err := l.Accept(); accepted <- err }()
	dial(t, ln.Addr().String())
	time.Sleep(100 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-accepted:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
	if err := held.Close(); err != nil || l.Open() != 0 {
		t.Fatalf("close: %v, open %d", err, l.Open())
	}
}

// TestTimeouts: each of the server's timeouts closes the connection that
// overstays it.
func TestTimeouts(t *testing.T) {
	t.Parallel()
	short := server.Limits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 600 * time.Millisecond,
		WriteTimeout: 5 * time.Second, IdleTimeout: 300 * time.Millisecond, MaxConns: 10}
	for _, tc := range []struct {
		name string
		send func(c net.Conn, r *bufio.Reader) error
		// trickle keeps writing a byte at a time
		trickle bool
	}{
		{name: "ReadHeaderTimeout", send: func(c net.Conn, _ *bufio.Reader) error {
			_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: te")
			return err
		}},
		{name: "ReadTimeout", trickle: true, send: func(c net.Conn, _ *bufio.Reader) error {
			_, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\nx")
			return err
		}},
		{name: "IdleTimeout", send: func(c net.Conn, r *bufio.Reader) error {
			_, err := get(c, r, "/")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, ok, short)
			c := dial(t, s.addr)
			if err := tc.send(c, bufio.NewReader(c)); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				if tc.trickle {
					if _, err := c.Write([]byte("x")); err != nil {
						return // the server closed its end
					}
				}
				if closedWithin(c, 100*time.Millisecond) {
					return
				}
			}
			t.Fatalf("still open after 5 s")
		})
	}
}

// TestLiftDeadlines: a handler that lifts its deadlines (a live stream)
// writes past the WriteTimeout; one that does not is cut off.
func TestLiftDeadlines(t *testing.T) {
	t.Parallel()
	e := echo.New()
	stream := func(lift bool) echo.HandlerFunc {
		return func(c echo.Context) error {
			if lift {
				server.LiftDeadlines(c)
			}
			c.Response().Header().Set("Content-Type", "text/plain")
			c.Response().WriteHeader(http.StatusOK)
			for i := range 4 {
				if _, err := fmt.Fprintf(c.Response(), "tick %d\n", i); err != nil {
					return nil
				}
				c.Response().Flush()
				time.Sleep(200 * time.Millisecond)
			}
			return nil
		}
	}
	e.GET("/lifted", stream(true))
	e.GET("/bounded", stream(false))
	lim := server.Limits{ReadHeaderTimeout: time.Second, ReadTimeout: 300 * time.Millisecond,
		WriteTimeout: 300 * time.Millisecond, IdleTimeout: time.Second, MaxConns: 10}
	s := serve(t, e, lim)
	read := func(path string) string {
		resp, err := http.Get("http://" + s.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := read("/lifted"); strings.Count(got, "tick") != 4 {
		t.Errorf("lifted: %q, want 4 ticks", got)
	}
	if got := read("/bounded"); strings.Count(got, "tick") == 4 {
		t.Errorf("bounded: %q, want it cut off by the WriteTimeout", got)
	}
}

package live

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/sse"
)

// streamPair is a loopback TCP connection whose server side sends into
// small buffers, so that a client that does not read fills it at once.
func streamPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	small := func(opt int) func(_, _ string, rc syscall.RawConn) error {
		return func(_, _ string, rc syscall.RawConn) error {
			var err error
			_ = rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, 4096) })
			return err
		}
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			rc, _ := c.(syscall.Conn).SyscallConn()
			_ = small(syscall.SO_SNDBUF)("", "", rc)
		}
		accepted <- c
	}()
	client, err = (&net.Dialer{Control: small(syscall.SO_RCVBUF)}).Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// testEvent is a message event of about size bytes, numbered i.
func testEvent(i, size int) *Event {
	id := chat.IDAt(time.Unix(1700000000, int64(i)*1000))
	ev := Event{Kind: KindMessage, ID: id, Message: &chat.Message{ID: id}, HTML: []byte(fmt.Sprintf("<li>%d %s</li>", i, strings.Repeat("x", size)))}
	ev.frame = encodeEvent(ev)
	return &ev
}

// readEvents reads n events' data lines from c.
func readEvents(t *testing.T, c net.Conn, n int) []string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var got []string
	for len(got) < n && sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			got = append(got, data)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("after %d events: %v", len(got), err)
	}
	return got
}

// TestDirectWriterKeepsOrderWhenTheSocketIsFull: events the socket does
// not take at once wait for the stream's goroutine, and those that come
// meanwhile queue behind them, so a slow reader gets every event, in
// order, and the fan-out never waits for it.
func TestDirectWriterKeepsOrderWhenTheSocketIsFull(t *testing.T) {
	server, client := streamPair(t)
	w, err := newDirectWriter(&eventWriter{Conn: &sse.Conn{Net: server}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.flush(nil); err != nil { // attached: nothing queued before
		t.Fatal(err)
	}
	const n = 40
	start := time.Now()
	for i := 0; i < n; i++ {
		if !w.Deliver(testEvent(i, 4000)) {
			t.Fatalf("event %d: dropped, with %d queued", i, len(w.pending))
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("delivering %d events to a full socket took %v: the fan-out waited", n, d)
	}
	w.mu.Lock()
	queued := len(w.pending)
	w.mu.Unlock()
	if queued == 0 {
		t.Fatal("no event waited: the socket took 160 KB at once, so this test shows nothing")
	}
	t.Logf("%d of %d events waited for the stream's goroutine", queued, n)

	// The stream's goroutine: it writes what waits whenever it is woken.
	done := make(chan error, 1)
	go func() {
		for {
			if err := w.flush(nil); err != nil {
				done <- err
				return
			}
			select {
			case <-w.wake:
			case <-time.After(5 * time.Second):
				done <- nil
				return
			}
		}
	}()
	// Events delivered while it writes go behind the waiting ones.
	for i := n; i < n+10; i++ {
		if !w.Deliver(testEvent(i, 4000)) {
			t.Fatalf("event %d dropped", i)
		}
	}
	got := readEvents(t, client, n+10)
	for i, data := range got {
		if !strings.HasPrefix(data, fmt.Sprintf("<li>%d x", i)) {
			t.Fatalf("event %d is %.20q", i, data)
		}
	}
	if len(got) != n+10 {
		t.Fatalf("got %d events, want %d", len(got), n+10)
	}
	// With nothing left waiting, the fan-out writes directly again.
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		idle := !w.busy && len(w.pending) == 0
		w.mu.Unlock()
		if idle || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !w.Deliver(testEvent(n+10, 10)) {
		t.Fatal("dropped")
	}
	w.mu.Lock()
	direct := len(w.pending) == 0 && !w.busy
	w.mu.Unlock()
	if !direct {
		t.Fatal("a small event to an empty socket waited instead of being written")
	}
	if got := readEvents(t, client, 1); len(got) != 1 || !strings.HasPrefix(got[0], fmt.Sprintf("<li>%d x", n+10)) {
		t.Fatalf("last event %q", got)
	}
}

// TestDirectWriterDropsAStalledReader: a reader that takes nothing while
// more than a queue's worth of events wait is dropped (its page resumes
// from its last event id), and nothing is written to it after the gap.
func TestDirectWriterDropsAStalledReader(t *testing.T) {
	server, _ := streamPair(t)
	w, err := newDirectWriter(&eventWriter{Conn: &sse.Conn{Net: server}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = w.flush(nil)
	dropped := -1
	for i := 0; i < 200; i++ {
		if !w.Deliver(testEvent(i, 4000)) {
			dropped = i
			break
		}
	}
	if dropped < 0 {
		t.Fatal("200 events of 4 KB to a reader that reads nothing: never dropped")
	}
	w.mu.Lock()
	before := len(w.pending)
	w.mu.Unlock()
	if !w.Deliver(testEvent(dropped+1, 10)) {
		t.Fatal("a dropped writer refused again: the hub drops once")
	}
	w.mu.Lock()
	after := len(w.pending)
	w.mu.Unlock()
	if after != before {
		t.Fatal("an event after the drop was queued: the reader would get it past a gap")
	}
	if err := w.flush(nil); err == nil {
		t.Fatal("flush of a dropped writer succeeded: the stream would go on")
	}
}

// TestDirectWriterSkipsReplayed: a message the replay already wrote (an
// other instance's, published late) is not written again.
func TestDirectWriterSkipsReplayed(t *testing.T) {
	server, client := streamPair(t)
	ev0, ev1 := testEvent(0, 10), testEvent(1, 10)
	w, err := newDirectWriter(&eventWriter{Conn: &sse.Conn{Net: server}}, map[chat.ID]struct{}{ev0.Message.ID: {}})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.flush(nil)
	w.Deliver(ev0)
	w.Deliver(ev1)
	if got := readEvents(t, client, 1); len(got) != 1 || !strings.HasPrefix(got[0], "<li>1 x") {
		t.Fatalf("got %q, want only event 1", got)
	}
}

// TestDirectWriterWritesNothingOnceClosed: the fan-out writes to the
// socket's descriptor number, so once the stream has ended and its
// connection is closed, a late delivery must not reach whatever socket
// the kernel gives that number to next (another person's stream).
func TestDirectWriterWritesNothingOnceClosed(t *testing.T) {
	server, _ := streamPair(t)
	w, err := newDirectWriter(&eventWriter{Conn: &sse.Conn{Net: server}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.flush(nil); err != nil {
		t.Fatal(err)
	}
	fd := w.fd
	w.close() // the stream's end: the writer first, then the connection
	server.Close()
	// Open sockets until one gets the closed one's number.
	mine, peer := -1, -1
	for range 50 {
		p, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Close(p[0]); syscall.Close(p[1]) })
		if p[0] == fd || p[1] == fd {
			mine, peer = p[0], p[1]
			if p[1] == fd {
				mine, peer = p[1], p[0]
			}
			break
		}
	}
	if mine < 0 {
		t.Fatalf("no new socket got descriptor %d back", fd)
	}
	if !w.Deliver(testEvent(1, 100)) {
		t.Fatal("a closed writer refused an event")
	}
	if err := syscall.SetNonblock(peer, true); err != nil {
		t.Fatal(err)
	}
	if n, err := syscall.Read(peer, make([]byte, 1)); n > 0 || err != syscall.EAGAIN {
		t.Fatalf("the socket that took the closed stream's descriptor %d got %d bytes (%v)", mine, n, err)
	}
}

// wrapped is a connection as the server's connection cap (web/server's
// ConnLimiter) hands it over: not a syscall.Conn itself, but saying what
// it wraps. handlers' TestStreamWritesUnderTheConnectionCap checks that the
// cap's own wrapper says so.
type wrapped struct{ net.Conn }

func (c wrapped) NetConn() net.Conn { return c.Conn }

// TestDirectWriterUnderTheConnectionCap: the fan-out sees through the
// wrapper to write to the socket itself, not falling back to a goroutine
// per stream.
func TestDirectWriterUnderTheConnectionCap(t *testing.T) {
	server, client := streamPair(t)
	w, err := newDirectWriter(&eventWriter{Conn: &sse.Conn{Net: wrapped{server}}}, nil)
	if err != nil {
		t.Fatalf("no direct writer under the cap: %v", err)
	}
	if err := w.flush(nil); err != nil {
		t.Fatal(err)
	}
	if !w.Deliver(testEvent(7, 100)) {
		t.Fatal("refused")
	}
	if got := readEvents(t, client, 1); !strings.Contains(got[0], "<li>7 ") {
		t.Fatalf("read %q", got)
	}
}

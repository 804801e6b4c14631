package hangup

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/killrchat/killrchat/live/sse"
)

// capped is a connection as the server's connection cap hands it over:
// not a syscall.Conn itself, but saying what it wraps.
type capped struct{ net.Conn }

func (c capped) NetConn() net.Conn { return c.Conn }

// open is a loopback connection watched by w, and its client's end.
func open(t *testing.T, w *Watcher) (*Entry, chan struct{}, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	gone := make(chan struct{})
	return w.Add(&sse.Conn{Net: capped{server}}, gone, nil), gone, client
}

// TestWatcherNoticesAClosedClient: a connection whose client closes its
// end is told (its gone channel closes); one removed first is not, and
// neither is one whose client stays. On Linux the sockets are watched by
// epoll, not polled.
func TestWatcherNoticesAClosedClient(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	w := New(stop)
	leaving, leavingGone, leavingClient := open(t, w)
	removed, removedGone, removedClient := open(t, w)
	_, stayingGone, _ := open(t, w)
	if runtime.GOOS == "linux" {
		w.mu.Lock()
		watched, polled := len(w.watched), len(w.polled)
		w.mu.Unlock()
		if watched != 3 || polled != 0 {
			t.Fatalf("%d connections watched by epoll and %d polled, want 3 and 0", watched, polled)
		}
	}
	w.Remove(removed)
	removedClient.Close()
	leavingClient.Close()
	select {
	case <-leavingGone:
	case <-time.After(10 * time.Second):
		t.Fatal("a closed client not noticed in 10 s")
	}
	w.Remove(leaving) // the stream's end, after its gone
	select {
	case <-removedGone:
		t.Fatal("a removed connection was told its client left")
	case <-stayingGone:
		t.Fatal("a connection whose client stays was told it left")
	case <-time.After(2 * Check):
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.watched)+len(w.polled) != 1 {
		t.Fatalf("%d connections still watched, want 1", len(w.watched)+len(w.polled))
	}
}

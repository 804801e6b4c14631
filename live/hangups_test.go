package live

import (
	"runtime"
	"testing"
	"time"

	"github.com/killrchat/killrchat/live/sse"
)

// TestHangupsNoticeAClosedClient: a stream whose client closes its end is
// told (its gone channel closes); one removed first is not, and neither
// is one whose client stays. On Linux the sockets are watched by epoll,
// not polled.
func TestHangupsNoticeAClosedClient(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	h := newHangups(stop)
	type pair struct {
		e      *eventWriter
		client interface{ Close() error }
	}
	open := func() pair {
		server, client := streamPair(t)
		e := &eventWriter{Conn: &sse.Conn{Net: wrapped{server}}, gone: make(chan struct{})}
		h.add(e)
		return pair{e, client}
	}
	leaving, removed, staying := open(), open(), open()
	if runtime.GOOS == "linux" {
		h.mu.Lock()
		watched, polled := len(h.watched), len(h.polled)
		h.mu.Unlock()
		if watched != 3 || polled != 0 {
			t.Fatalf("%d streams watched by epoll and %d polled, want 3 and 0", watched, polled)
		}
	}
	h.remove(removed.e)
	removed.client.Close()
	leaving.client.Close()
	select {
	case <-leaving.e.gone:
	case <-time.After(10 * time.Second):
		t.Fatal("a closed client not noticed in 10 s")
	}
	h.remove(leaving.e) // the stream's end, after its gone
	select {
	case <-removed.e.gone:
		t.Fatal("a removed stream was told its client left")
	case <-staying.e.gone:
		t.Fatal("a stream whose client stays was told it left")
	case <-time.After(2 * hangupCheck):
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.watched)+len(h.polled) != 1 {
		t.Fatalf("%d streams still watched, want 1", len(h.watched)+len(h.polled))
	}
}

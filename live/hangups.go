package live

import (
	"sync"
	"time"
)

// hangups notices clients that close their stream's connection. A
// hijacked stream connection has no reader (one would cost a goroutine
// per connection). Where the system has epoll (see hangups_linux.go),
// every such socket is registered, for its peer's end only, with an epoll
// instance of the engine's own, and one goroutine waits on it: a closed
// tab is noticed at once, and 10,000 open streams cost nothing while
// nobody leaves. Elsewhere, or for a socket that epoll refuses, one
// goroutine looks at each socket every hangupCheck, without blocking,
// skipping those the fan-out wrote to since its last look (the write
// after a closed tab's fails, and ends the stream). Either way the
// stream's gone channel is closed, and it gives its place under the caps
// back.
type hangups struct {
	mu sync.Mutex
	// polled are the streams looked at every hangupCheck.
	polled map[*eventWriter]struct{}
	// watch is the epoll of the streams in watched, by their id; nil
	// where there is none.
	watch   *peerWatch
	watched map[uint64]*eventWriter
	next    uint64
	start   sync.Once
	stop    <-chan struct{}
}

// hangupCheck is how often hangups looks at the polled streams.
const hangupCheck = time.Second

func newHangups(stop <-chan struct{}) *hangups {
	return &hangups{polled: map[*eventWriter]struct{}{}, watched: map[uint64]*eventWriter{}, stop: stop}
}

func (h *hangups) add(e *eventWriter) {
	h.start.Do(func() {
		h.watch = newPeerWatch()
		if h.watch != nil {
			go h.waitWatched()
		}
		go h.poll()
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watch != nil {
		h.next++
		if fd, ok := h.watch.add(e, h.next); ok {
			e.hangupID, e.hangupFD = h.next, fd
			h.watched[h.next] = e
			return
		}
	}
	h.polled[e] = struct{}{}
}

// remove stops watching e; call it before its connection is closed (the
// epoll is told while the descriptor is still the stream's).
func (h *hangups) remove(e *eventWriter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.hangupID != 0 {
		h.watch.remove(e.hangupFD)
		delete(h.watched, e.hangupID)
		e.hangupID = 0
		return
	}
	delete(h.polled, e)
}

// hungUp closes the gone channels of the watched streams with these ids
// (those still watched: a stream removed meanwhile is left alone).
func (h *hangups) hungUp(ids []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		if e := h.watched[id]; e != nil {
			close(e.gone)
			delete(h.watched, id)
		}
	}
}

func (h *hangups) poll() {
	t := time.NewTicker(hangupCheck)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		for e := range h.polled {
			if e.wrote.Swap(false) {
				continue // written to since the last look (see eventWriter.wrote)
			}
			if e.PeerClosed() {
				close(e.gone)
				delete(h.polled, e)
			}
		}
		h.mu.Unlock()
	}
}

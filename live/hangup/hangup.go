package hangup

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Conn is a taken-over connection (live/sse's Conn).
type Conn interface {
	// Raw is the socket under it, or an error if there is none.
	Raw() (syscall.RawConn, error)
	// PeerClosed says, without waiting, whether the client closed its end.
	PeerClosed() bool
}

// Check is how often the polled connections are looked at.
const Check = time.Second

// Watcher watches the connections added to it until stop is closed.
type Watcher struct {
	mu sync.Mutex
	// polled are the connections looked at every Check.
	polled map[*Entry]struct{}
	// watch is the epoll of the connections in watched, by their id; nil
	// where there is none.
	watch   *peerWatch
	watched map[uint64]*Entry
	next    uint64
	start   sync.Once
	stop    <-chan struct{}
}

// Entry is one watched connection; its fields are guarded by the
// watcher's mu.
type Entry struct {
	c     Conn
	gone  chan struct{}
	wrote *atomic.Bool
	id    uint64 // its epoll registration (0: polled)
	fd    int
}

// New returns a watcher; its goroutines start with the first Add.
func New(stop <-chan struct{}) *Watcher {
	return &Watcher{polled: map[*Entry]struct{}{}, watched: map[uint64]*Entry{}, stop: stop}
}

// Add watches c: gone is closed once its client has closed its end.
// wrote, if not nil, is set by each write to c; polling clears it and
// skips a connection written to since its last look.
func (w *Watcher) Add(c Conn, gone chan struct{}, wrote *atomic.Bool) *Entry {
	w.start.Do(func() {
		w.watch = newPeerWatch()
		if w.watch != nil {
			go w.waitWatched()
		}
		go w.poll()
	})
	e := &Entry{c: c, gone: gone, wrote: wrote}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watch != nil {
		w.next++
		if fd, ok := w.watch.add(c, w.next); ok {
			e.id, e.fd = w.next, fd
			w.watched[e.id] = e
			return e
		}
	}
	w.polled[e] = struct{}{}
	return e
}

// Remove stops watching e; call it before its connection is closed (the
// epoll is told while the descriptor is still the stream's).
func (w *Watcher) Remove(e *Entry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.id != 0 {
		w.watch.remove(e.fd)
		delete(w.watched, e.id)
		e.id = 0
		return
	}
	delete(w.polled, e)
}

// hungUp closes the gone channels of the watched connections with these
// ids (those still watched: one removed meanwhile is left alone).
func (w *Watcher) hungUp(ids []uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if e := w.watched[id]; e != nil {
			close(e.gone)
			delete(w.watched, id)
		}
	}
}

func (w *Watcher) poll() {
	t := time.NewTicker(Check)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		w.mu.Lock()
		for e := range w.polled {
			if e.wrote != nil && e.wrote.Swap(false) {
				continue // written to since the last look
			}
			if e.c.PeerClosed() {
				close(e.gone)
				delete(w.polled, e)
			}
		}
		w.mu.Unlock()
	}
}

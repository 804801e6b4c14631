// This file owns how a live stream whose connection it holds (hijacked,
// see startStream) gets its room's events: the hub's fan-out writes each
// event to the socket itself, without blocking, and the stream's own
// goroutine wakes only for what cannot go at once (a client that reads
// slowly), for heartbeats and the person's other conversations, and for
// the stream's end. A room of 10,000 streams thus costs a message one
// write per stream and no goroutine switch.

package live

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/sse"
)

// directWriter is a stream's Sink. While the stream's goroutine writes
// (busy) or frames wait (pending), the fan-out queues behind them, so the
// stream's bytes go out in order whoever writes them.
type directWriter struct {
	// The fields a delivery reads come first, so that they share the
	// cache lines of eventWriter.wrote (the writer lives in its
	// eventWriter, see eventWriter.direct): a room of 10,000 streams
	// reads them once a stream per message, from memory the other
	// streams pushed out of the cache.
	mu     sync.Mutex
	busy   bool // the stream's goroutine is writing
	failed bool // a write failed: the client is gone
	closed bool // the stream ended
	last   bool // the room was deleted: the stream ends once it is out
	wide   bool // out.wide
	// fd is the socket's descriptor, for the fan-out's writes. It is
	// open while the writer is: the stream's connection is closed only
	// after close (liveDirect's deferred close runs before the stream's
	// ends), and every write holds mu and checks closed first. Writing
	// to it directly, not through the net.Conn, spares each delivery the
	// descriptor's lock and the poller's state.
	fd      int
	events  uint64      // events written or queued, for the heartbeat
	pending net.Buffers // frames for the stream's goroutine to write
	// sent are the replayed ids that may come live as well (see
	// roomEvents); read only once the writer is attached.
	sent map[chat.ID]struct{}
	out  *eventWriter // its conn is the stream's socket
	// wake tells the stream's goroutine to look at the writer.
	wake chan struct{}
}

// newDirectWriter returns the Sink of a hijacked stream's connection,
// busy: the stream's goroutine writes what was queued before it attached,
// then the fan-out writes the rest.
func newDirectWriter(out *eventWriter, sent map[chat.ID]struct{}) (*directWriter, error) {
	raw, err := out.Raw() // under the server's connection cap's wrapper
	if err != nil {
		return nil, err
	}
	w := &out.direct
	*w = directWriter{out: out, fd: -1, wide: out.wide, sent: sent, wake: make(chan struct{}, 1), busy: true}
	if err := raw.Control(func(fd uintptr) { w.fd = int(fd) }); err != nil {
		return nil, err
	}
	return w, nil
}

// Deliver writes ev now if it can, or queues it for the stream's goroutine
// (see Sink).
func (w *directWriter) Deliver(ev *Event) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.failed || w.last {
		return true
	}
	if _, dup := w.sent[idOf(ev)]; dup {
		return true
	}
	// A personal stream carries other conversations on: its page leaves
	// the deleted room.
	w.last = ev.Kind == KindRoomDeleted && !w.wide
	w.events++
	frame := ev.frameFor(w.wide)
	if w.busy || len(w.pending) > 0 {
		if len(w.pending) >= subscriberQueue {
			w.failed = true
			return false // stalled: the stream is dropped and resumes
		}
		w.pending = append(w.pending, frame)
		w.poke()
		return true
	}
	n, err := w.tryWrite(frame)
	if n > 0 && !w.out.wrote.Load() {
		w.out.wrote.Store(true)
	}
	switch {
	case err != nil:
		w.failed = true
		w.poke()
	case n < len(frame):
		w.pending = append(w.pending, frame[n:])
		w.poke()
	case w.last:
		w.poke()
	}
	return true
}

// tryWrite writes frame without waiting, as far as the socket takes it;
// the caller holds mu and found the writer open. The socket is
// non-blocking (the runtime's poller set it so), so the write returns at
// once; it is a raw system call because it cannot block. What the socket
// does not take now (it is full) is left for the stream's goroutine.
func (w *directWriter) tryWrite(frame []byte) (int, error) {
	n := 0
	for n < len(frame) {
		m, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(w.fd), uintptr(unsafe.Pointer(&frame[n])), uintptr(len(frame)-n))
		switch errno {
		case 0:
			n += int(m)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return n, nil
		default:
			return n, errno
		}
	}
	return n, nil
}

func (w *directWriter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// errStreamOver ends a stream whose room was deleted, once the deletion
// is written.
var errStreamOver = errors.New("sse: the room was deleted")

// flush writes, from the stream's goroutine, frame (if any) and then
// everything queued, waiting for a slow client up to writeTimeout a write;
// the fan-out writes directly again once nothing is left.
func (w *directWriter) flush(frame []byte) error {
	w.mu.Lock()
	if len(frame) > 0 {
		w.pending = append(w.pending, frame)
	}
	for {
		if w.failed {
			w.mu.Unlock()
			return net.ErrClosed
		}
		if len(w.pending) == 0 {
			break
		}
		bufs := w.pending
		w.pending, w.busy = nil, true
		w.mu.Unlock()
		err := w.out.Net.SetWriteDeadline(time.Now().Add(writeTimeout))
		if err == nil {
			_, err = bufs.WriteTo(w.out.Net)
		}
		if err == nil {
			// Clear it, or the fan-out's writes would find it passed.
			err = w.out.Net.SetWriteDeadline(time.Time{})
		}
		w.mu.Lock()
		if err != nil {
			w.failed = true
		}
	}
	w.busy = false
	last := w.last
	w.mu.Unlock()
	if last {
		return errStreamOver
	}
	return nil
}

// close stops the fan-out writing to the stream.
func (w *directWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.pending = nil
	w.mu.Unlock()
}

// liveDirect is liveEvents for a hijacked stream: the fan-out writes the
// subscriptions' events through w, and this goroutine writes the rest.
func (s *Engine) liveDirect(out *eventWriter, st *Stream, sent map[chat.ID]struct{}) {
	w, err := newDirectWriter(out, sent)
	if err != nil {
		s.liveEvents(out, st, sent, nil)
		return
	}
	s.direct.Add(1)
	defer s.direct.Add(-1)
	defer w.close()
	// The replay's writes set deadlines: none may be left for the
	// fan-out's.
	if out.Net.SetWriteDeadline(time.Time{}) != nil {
		return
	}
	st.attach(w)
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	sig := st.who.signals
	var watchC <-chan Unread
	if st.watch != nil {
		watchC = st.watch.C
	}
	var frame []byte
	var seen uint64 // events by the last heartbeat
	for {
		if err := w.flush(frame); err != nil {
			return // the client is gone or stalled, or the room was deleted
		}
		frame = nil
		select {
		case <-s.closing:
			return
		case <-st.replaced:
			return
		case <-sig.ended.c:
			// Left the room, logged out, or lost the session: the page is
			// told why its stream ends (the fan-out writes nothing more).
			_ = w.flush(st.endFrame(&out.Buf))
			return
		case <-sig.dropped.c:
			s.log.Info("sse: dropped a subscriber that fell behind", "room", st.label())
			return
		case <-out.gone:
			return // the client closed the connection
		case <-w.wake:
		case <-tick.C:
			// A stream that got events since the last tick needs none.
			w.mu.Lock()
			events := w.events
			w.mu.Unlock()
			if events == seen {
				frame = sse.CommentFrame(&out.Buf, "keep-alive")
			}
			seen = events
		case other := <-watchC:
			frame = st.unreadFrame(&out.Buf, other)
		}
	}
}

package hangup

import (
	"syscall"
	"time"
)

// peerWatch is an epoll instance that reports sockets whose peer closed
// its end (EPOLLRDHUP; a reset comes as EPOLLHUP or EPOLLERR, which epoll
// always reports). Registering only those events, the socket's data (a
// client has nothing to send) wakes nobody.
type peerWatch struct {
	fd     int
	closed bool // guarded by the watcher's mu
}

func newPeerWatch() *peerWatch {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	return &peerWatch{fd: fd}
}

// add registers c's socket under id and returns its descriptor; false if
// it has none or epoll refuses it. The caller holds the watcher's mu.
func (w *peerWatch) add(c Conn, id uint64) (int, bool) {
	if w.closed {
		return 0, false
	}
	raw, err := c.Raw()
	if err != nil {
		return 0, false
	}
	fd, ctlErr := -1, error(nil)
	err = raw.Control(func(s uintptr) {
		fd = int(s)
		// The event's data is the id, not the descriptor, which the
		// system gives to another socket once this one is closed.
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | -syscall.EPOLLET, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
		ctlErr = syscall.EpollCtl(w.fd, syscall.EPOLL_CTL_ADD, fd, &ev)
	})
	if err != nil || ctlErr != nil {
		return 0, false
	}
	return fd, true
}

// remove unregisters a socket, which must still be open. The caller
// holds the watcher's mu.
func (w *peerWatch) remove(fd int) {
	if !w.closed {
		_ = syscall.EpollCtl(w.fd, syscall.EPOLL_CTL_DEL, fd, nil)
	}
}

// waitWatched waits for hang-ups until stop. It wakes every Check to
// look at stop, and only it closes the epoll, between two
// waits, so that no wait or registration ever uses a number the system
// has given to another file.
func (h *Watcher) waitWatched() {
	events := make([]syscall.EpollEvent, 256)
	var ids []uint64
	for {
		select {
		case <-h.stop:
			h.mu.Lock()
			h.watch.closed = true
			_ = syscall.Close(h.watch.fd)
			h.mu.Unlock()
			return
		default:
		}
		n, err := syscall.EpollWait(h.watch.fd, events, int(Check/time.Millisecond))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return // cannot happen with a valid epoll; the streams still end at their next write or heartbeat
		}
		ids = ids[:0]
		for _, ev := range events[:n] {
			ids = append(ids, uint64(uint32(ev.Fd))|uint64(uint32(ev.Pad))<<32)
		}
		if len(ids) > 0 {
			h.hungUp(ids)
		}
	}
}

// This file owns the HTTP server's connection limits: the read, write and
// idle timeouts, and the cap on open connections that keeps the process
// below its file-descriptor limit.

package server

import (
	"container/list"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
)

// Limits bound what one connection may hold on to.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included, so a
	// body sent a byte at a time is cut off.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the
	// end of its response. Live streams lift both deadlines (LiftDeadlines).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection this long after its
	// last response.
	IdleTimeout time.Duration
	// MaxConns caps open connections (0: no cap).
	MaxConns int
}

// DefaultLimits are the limits used when no flag says otherwise.
func DefaultLimits() Limits {
	return Limits{
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       20 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxConns:          DefaultMaxConns(),
	}
}

// DefaultMaxConns sizes the connection cap from the process's open-file
// limit, keeping a tenth of it (at least 100) for everything that is not
// a client: Cassandra and NATS sockets, the metrics listener, files.
func DefaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 1000
	}
	n := int(min(lim.Cur, 1<<24))
	return max(n-max(n/10, 100), 10)
}

// New serves h on ln with lim's timeouts and connection cap. The
// returned listener is the one to pass to Serve; it is a *ConnLimiter
// when lim.MaxConns > 0.
func New(ln net.Listener, h http.Handler, lim Limits) (*http.Server, net.Listener) {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
	}
	if lim.MaxConns <= 0 {
		return hs, ln
	}
	cl := LimitConns(ln, lim.MaxConns)
	hs.ConnState = cl.ConnState
	return hs, cl
}

// LiftDeadlines removes the server's read and write deadlines from this
// request's connection: for a live stream, which lasts as long as the
// page is open and sets its own deadline on every write. Call it after the
// request's checks, before the long part starts. It can only fail for a
// ResponseWriter without deadlines (a test recorder), which has none to
// lift, so errors are ignored.
func LiftDeadlines(c echo.Context) {
	rc := http.NewResponseController(c.Response())
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}

// ConnLimiter is a listener that holds at most max connections open. At
// the cap it makes room by closing the connection that has been idle the
// longest (a keep-alive connection between requests, or one that has sent
// nothing yet), so idle sockets cannot lock out new visitors; only when
// every connection is busy with a request does it wait, until one of
// them ends its request (and is closed then) or closes.
// Unlike netutil.LimitListener it never leaves a new visitor queued behind
// idle connections until their idle timeout.
type ConnLimiter struct {
	net.Listener
	slots chan struct{} // one token per open connection
	mu    sync.Mutex
	idle  *list.List // of *limitedConn, longest idle first
	// nowIdle says a connection turned idle, to an Accept that waits
	// for room: it can evict that one instead of waiting for its end.
	nowIdle chan struct{}
	done    chan struct{}
	once    sync.Once
	evicted atomic.Int64
}

// LimitConns wraps ln. Set the server's ConnState to the limiter's, so it
// knows which connections are idle.
func LimitConns(ln net.Listener, max int) *ConnLimiter {
	return &ConnLimiter{Listener: ln, slots: make(chan struct{}, max), idle: list.New(),
		nowIdle: make(chan struct{}, 1), done: make(chan struct{})}
}

// Open is the number of open connections.
func (l *ConnLimiter) Open() int { return len(l.slots) }

// Evicted is how many idle connections were closed to make room.
func (l *ConnLimiter) Evicted() int64 { return l.evicted.Load() }

// Accept takes the next connection once there is room for it.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for taken := false; !taken; {
		select {
		case l.slots <- struct{}{}:
			taken = true
		default:
			l.evictIdle()
			select {
			case l.slots <- struct{}{}:
				taken = true
			case <-l.nowIdle: // a busy connection finished its request
			case <-l.done:
				c.Close()
				return nil, net.ErrClosed
			}
		}
	}
	lc := &limitedConn{Conn: c, l: l}
	l.setIdle(lc, true) // idle until its first byte arrives
	return lc, nil
}

// Close stops Accept, including one waiting for room.
func (l *ConnLimiter) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// ConnState tracks which connections are idle; it is the http.Server's
// ConnState hook.
func (l *ConnLimiter) ConnState(c net.Conn, st http.ConnState) {
	// Ours first: a limitedConn has NetConn too, and unwrapping it would
	// hide it, leaving every connection idle (and so evictable) for life.
	lc, ok := c.(*limitedConn)
	if tc, wraps := c.(interface{ NetConn() net.Conn }); !ok && wraps {
		lc, ok = tc.NetConn().(*limitedConn) // a TLS listener wraps ours
	}
	if !ok {
		return
	}
	l.setIdle(lc, st == http.StateNew || st == http.StateIdle)
}

func (l *ConnLimiter) setIdle(lc *limitedConn, idle bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.elem != nil {
		l.idle.Remove(lc.elem)
		lc.elem = nil
	}
	if idle && !lc.closed {
		lc.elem = l.idle.PushBack(lc)
		select {
		case l.nowIdle <- struct{}{}:
		default:
		}
	}
}

// evictIdle closes the longest idle connection, if there is one. A
// request may start on it at that very moment; the client then sees a
// closed keep-alive connection, which browsers and Go's client retry.
func (l *ConnLimiter) evictIdle() {
	l.mu.Lock()
	front := l.idle.Front()
	l.mu.Unlock()
	if front == nil {
		return
	}
	l.evicted.Add(1)
	front.Value.(*limitedConn).Close()
}

// limitedConn gives its slot back when it is closed.
type limitedConn struct {
	net.Conn
	l    *ConnLimiter
	once sync.Once
	// elem and closed are guarded by l.mu.
	elem   *list.Element
	closed bool
}

// NetConn is the connection it wraps (a live stream looks at its socket).
func (c *limitedConn) NetConn() net.Conn { return c.Conn }

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.closed = true
		if c.elem != nil {
			c.l.idle.Remove(c.elem)
			c.elem = nil
		}
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return err
}

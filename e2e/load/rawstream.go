package main

// A lean stream subscriber for the sse subcommand: its own TCP connection
// and HTTP request, and an event scanner that allocates nothing per event.
// With 10,000 subscribers on the same two cores as the app, the load
// generator's cost per event is part of every latency it measures:
// net/http's client (two goroutines a connection) and a line reader that
// allocates a string a line cost about twice this.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// rawStream is an open event stream.
type rawStream struct {
	conn       net.Conn
	buf        []byte // unread bytes are buf[start:end]
	start, end int
}

// dialStream opens room's event stream at base with jar's cookies.
func dialStream(ctx context.Context, base, room string, jar http.CookieJar) (*rawStream, error) {
	u, err := url.Parse(base + "/rooms/" + room + "/events")
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	var cookies []string
	for _, c := range jar.Cookies(u) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nCookie: %s\r\n\r\n",
		u.RequestURI(), u.Host, strings.Join(cookies, "; "))
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Time{})
	if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) > 0 {
		conn.Close()
		return nil, fmt.Errorf("GET %s: %d, transfer encoding %v (the scanner reads an identity body)", u, resp.StatusCode, resp.TransferEncoding)
	}
	s := &rawStream{conn: conn, buf: make([]byte, 8192)}
	// What the header reader read past the head is the stream's start.
	s.end, _ = br.Read(s.buf[:br.Buffered()])
	return s, nil
}

// streamPoller reads many streams with epoll, a goroutine per processor,
// rather than a goroutine per stream: a stream costs one read a wake-up,
// where Go's poller costs a read that finds nothing, a park and a
// goroutine switch on top. Only the load generator reads this way.
type streamPoller struct {
	loops []int // epoll descriptors
	byFD  []atomic.Pointer[polled]
	next  atomic.Uint32
}

// polled is one stream under a poller. mu is held while its buffer is
// read or dispatched: add dispatches what came with the response head
// while a loop may already see the descriptor (a number an ended stream
// had, whose event was still in another loop's batch).
type polled struct {
	mu    sync.Mutex
	fd    int
	s     *rawStream
	fn    func(ev []byte, at time.Time) bool
	ended chan error // gets the stream's end: nil when fn stopped it or stop was called
}

func newStreamPoller(ctx context.Context, loops int) (*streamPoller, error) {
	p := &streamPoller{byFD: make([]atomic.Pointer[polled], 1<<16)}
	for range loops {
		ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return nil, err
		}
		p.loops = append(p.loops, ep)
		go p.run(ctx, ep)
	}
	return p, nil
}

// add hands s to the poller, which calls fn with each event's bytes (its
// lines up to the blank one, valid only during the call) and when they
// were read, until fn returns false, the stream ends or ctx ends. The
// stream's net.Conn is closed: the poller reads a duplicate of its socket.
func (p *streamPoller) add(s *rawStream, fn func(ev []byte, at time.Time) bool) (<-chan error, error) {
	sc, err := s.conn.(syscall.Conn).SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	if cerr := sc.Control(func(f uintptr) { fd, err = syscall.Dup(int(f)) }); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	s.conn.Close() // Go's poller lets go of it; the duplicate stays non-blocking
	if fd >= len(p.byFD) {
		syscall.Close(fd)
		return nil, fmt.Errorf("descriptor %d over the poller's table", fd)
	}
	pd := &polled{fd: fd, s: s, fn: fn, ended: make(chan error, 1)}
	p.byFD[fd].Store(pd)
	// Events already read with the response head go first.
	pd.mu.Lock()
	more := pd.dispatch(time.Now())
	pd.mu.Unlock()
	if !more {
		p.end(0, pd, nil)
		return pd.ended, nil
	}
	ep := p.loops[int(p.next.Add(1))%len(p.loops)]
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		p.end(0, pd, err)
	}
	return pd.ended, nil
}

func (p *streamPoller) end(ep int, pd *polled, err error) {
	if errors.Is(err, errStopped) {
		err = nil
	}
	if !p.byFD[pd.fd].CompareAndSwap(pd, nil) {
		return // ended already
	}
	if ep != 0 {
		_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, pd.fd, nil)
	}
	syscall.Close(pd.fd)
	pd.ended <- err
}

// dispatch calls fn for each whole event buffered; false means fn stopped.
func (pd *polled) dispatch(at time.Time) bool {
	s := pd.s
	for {
		i := bytes.Index(s.buf[s.start:s.end], []byte("\n\n"))
		if i < 0 {
			break
		}
		ev := s.buf[s.start : s.start+i+1]
		s.start += i + 2
		if !pd.fn(ev, at) {
			return false
		}
	}
	if s.start > 0 {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	}
	if s.end == len(s.buf) {
		s.buf = append(s.buf, make([]byte, len(s.buf))...)
	}
	return true
}

func (p *streamPoller) run(ctx context.Context, ep int) {
	runtime.LockOSThread()
	events := make([]syscall.EpollEvent, 256)
	for ctx.Err() == nil {
		n, err := syscall.EpollWait(ep, events, 100)
		if err != nil && err != syscall.EINTR {
			return
		}
		at := time.Now()
		for _, e := range events[:max(n, 0)] {
			pd := p.byFD[e.Fd].Load()
			if pd == nil {
				continue
			}
			if err := p.read(ep, pd, at); err != nil {
				p.end(ep, pd, err)
			}
		}
	}
	// The run is over: end what is left on this loop.
	for i := range p.byFD {
		if pd := p.byFD[i].Load(); pd != nil {
			p.end(ep, pd, nil)
		}
	}
}

// read reads what pd's socket holds and dispatches its whole events; an
// error (io.EOF at the end) or errStopped says the stream is over.
func (p *streamPoller) read(ep int, pd *polled, at time.Time) error {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	s := pd.s
	r, err := syscall.Read(pd.fd, s.buf[s.end:])
	switch {
	case err == syscall.EAGAIN || err == syscall.EINTR:
		return nil
	case err != nil:
		return err
	case r == 0:
		return io.EOF
	}
	s.end += r
	if !pd.dispatch(at) {
		return errStopped
	}
	return nil
}

// errStopped is a stream its fn stopped: it ends with nil.
var errStopped = errors.New("stopped")

// eventName is the event's event: field, or "".
func eventName(ev []byte) []byte {
	if bytes.HasPrefix(ev, []byte("event: ")) {
		ev = ev[len("event: "):]
	} else if i := bytes.Index(ev, []byte("\nevent: ")); i >= 0 {
		ev = ev[i+len("\nevent: "):]
	} else {
		return nil
	}
	if j := bytes.IndexByte(ev, '\n'); j >= 0 {
		ev = ev[:j]
	}
	return ev
}

// seqOfBytes is seqOf for an event's bytes.
func seqOfBytes(ev []byte) int {
	i := bytes.Index(ev, []byte(seqMark))
	if i < 0 {
		return -1
	}
	n, digits := 0, 0
	for _, c := range ev[i+len(seqMark):] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
		digits++
	}
	if digits == 0 {
		return -1
	}
	return n
}

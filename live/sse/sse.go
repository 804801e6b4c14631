// A stream's connection is hijacked from net/http where it can be, so the
// fan-out can write to it without a goroutine per stream waiting on a
// ResponseWriter (live's direct writer); where it cannot (HTTP/2, a test
// recorder) the stream writes through the ResponseWriter and flushes.

package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// ErrFieldBreak refuses an event name or comment that would end its line.
var ErrFieldBreak = errors.New("sse: event name or comment contains a line break")

// Conn is the connection of one stream.
type Conn struct {
	// Net is the hijacked connection, or nil when the stream writes
	// through the ResponseWriter.
	Net net.Conn
	// Buf is scratch space for the frames the stream's owner encodes; a
	// frame in it is valid until the next Send.
	Buf bytes.Buffer

	w            io.Writer
	rc           *http.ResponseController
	bufs         net.Buffers // frames queued for the next send
	writeTimeout time.Duration
}

// Start writes the stream's response head (status 200 and the headers
// set so far) and a first comment, and returns the connection; committed
// is called once the response is hijacked (for the logs and metrics,
// which no longer see it). Each later write waits at most writeTimeout.
func Start(res http.ResponseWriter, committed func(), writeTimeout time.Duration) (*Conn, error) {
	if conn, rw, err := http.NewResponseController(res).Hijack(); err == nil {
		committed()
		// net/http keeps the connection's read and write buffers (8 KiB)
		// until the handler returns, and never uses them again once
		// hijacked; the stream writes to the connection itself.
		*rw.Reader, *rw.Writer = bufio.Reader{}, bufio.Writer{}
		c := &Conn{Net: conn, writeTimeout: writeTimeout}
		c.Buf.WriteString("HTTP/1.1 200 OK\r\n")
		h := res.Header().Clone()
		// No length and no chunking: the body ends when the connection
		// closes, which for a stream is the only end there is.
		h.Set("Connection", "close")
		_ = h.Write(&c.Buf)
		c.Buf.WriteString("\r\n: connected\n\n")
		c.Queue(c.Buf.Bytes())
		if err := c.Send(); err != nil {
			conn.Close()
			return nil, err
		}
		return c, nil
	}
	res.WriteHeader(http.StatusOK)
	c := &Conn{w: res, rc: http.NewResponseController(res), writeTimeout: writeTimeout}
	if err := c.Comment("connected"); err != nil {
		return nil, err
	}
	return c, nil
}

// Close closes a hijacked connection (net/http closes the others).
func (c *Conn) Close() {
	if c.Net != nil {
		c.Net.Close()
	}
}

// Queue adds a frame to the next send; the frame may be shared with other
// streams, so it is written as it is and never changed.
func (c *Conn) Queue(frame []byte) {
	if len(frame) > 0 {
		c.bufs = append(c.bufs, frame)
	}
}

// Send writes the queued frames.
func (c *Conn) Send() error {
	if len(c.bufs) == 0 {
		return nil
	}
	defer func() {
		clear(c.bufs[:cap(c.bufs)])
		c.bufs = c.bufs[:0]
	}()
	if c.Net != nil {
		if err := c.Net.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil {
			return err
		}
		bufs := c.bufs // WriteTo consumes its receiver
		_, err := bufs.WriteTo(c.Net)
		return err
	}
	if err := c.rc.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	for _, b := range c.bufs {
		if _, err := c.w.Write(b); err != nil {
			return err
		}
	}
	return c.rc.Flush()
}

// Comment writes a comment line (text of ours, without a line break).
func (c *Conn) Comment(text string) error {
	if strings.ContainsAny(text, "\r\n") {
		return ErrFieldBreak
	}
	c.Queue(CommentFrame(&c.Buf, text))
	return c.Send()
}

// Raw is the socket under a hijacked connection, through the wrappers
// that say what they wrap (NetConn, as the server's connection cap's
// does): errors.ErrUnsupported when there is none.
func (c *Conn) Raw() (syscall.RawConn, error) {
	nc := c.Net
	for nc != nil {
		if sc, ok := nc.(syscall.Conn); ok {
			return sc.SyscallConn()
		}
		u, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		nc = u.NetConn()
	}
	return nil, errors.ErrUnsupported
}

// PeerClosed says whether the client has closed a hijacked connection:
// nothing reads it (a read would take a goroutine per connection), so
// the caller looks, without waiting, whether the end of the stream from
// the client has arrived. Anything else (data, or nothing) counts as
// open.
func (c *Conn) PeerClosed() bool {
	raw, err := c.Raw()
	if err != nil {
		return false
	}
	closed := false
	_ = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil
		return true // never wait for readiness
	})
	return closed
}

// AppendEvent writes one event to buf. A zero id writes no id line (the
// client keeps the id it has) and an empty name no event line (SSE's
// default event, "message" in a browser). The id is a timeuuid and the
// name one of ours (checked by the callers that take a name from
// elsewhere), so neither can hold a line break; data is any text,
// written as data lines split wherever a parser ends a line.
func AppendEvent(buf *bytes.Buffer, id chat.ID, name string, data []byte) {
	appendID(buf, id)
	if name != "" {
		buf.WriteString("event: ")
		buf.WriteString(name)
		buf.WriteByte('\n')
	}
	WriteData(buf, data)
	buf.WriteByte('\n')
}

// AppendWide writes one event of a stream that carries several
// conversations: the name always given, and the conversation as the first
// data line, before data. Conversation ids are names and logins, which
// hold no line break.
func AppendWide(buf *bytes.Buffer, id chat.ID, name, conv string, data []byte) {
	appendID(buf, id)
	buf.WriteString("event: ")
	buf.WriteString(name)
	buf.WriteString("\ndata: ")
	buf.WriteString(conv)
	buf.WriteByte('\n')
	WriteData(buf, data)
	buf.WriteByte('\n')
}

func appendID(buf *bytes.Buffer, id chat.ID) {
	if id != (chat.ID{}) {
		buf.WriteString("id: ")
		buf.WriteString(id.String())
		buf.WriteByte('\n')
	}
}

// WriteData writes data as "data:" lines. The SSE parsers of browsers and
// of htmx end a line at "\r\n", at a lone "\r" and at "\n", so the data is
// split at each of the three: a "\r" left inside a line would end it
// there, and the rest of a message (say "\r\revent: room-deleted") would
// be read as fields of the stream. The reader joins the lines with "\n",
// which is all a line break in the data can come out as.
func WriteData(buf *bytes.Buffer, data []byte) {
	for {
		buf.WriteString("data: ")
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			buf.Write(data)
			buf.WriteByte('\n')
			return
		}
		buf.Write(data[:i])
		buf.WriteByte('\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
}

// CommentFrame is a comment line in buf, for text of ours (no line
// break).
func CommentFrame(buf *bytes.Buffer, text string) []byte {
	buf.Reset()
	fmt.Fprintf(buf, ": %s\n\n", text)
	return buf.Bytes()
}

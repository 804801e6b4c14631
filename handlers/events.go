// This file owns the live room stream (server-sent events). A connection
// first receives, from Cassandra, every message after the id it saw last
// (Last-Event-ID, or ?after= on a page's first connect), then the live
// ones: each exactly once and, for this instance's messages, in id order.
//
// The stream is written here rather than by r3labs/sse's server: that
// server parses Last-Event-ID as a number (ours are timeuuids), fans out
// with blocking sends (one stalled client holds up the rest of its
// stream), and drops events published before its subscriber registers.
// The tests read our streams with r3labs/sse's own event reader.
package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gocql/gocql"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/views"
)

const (
	// heartbeat is how often an idle stream gets a comment line, so
	// proxies keep it open and dead connections are noticed.
	heartbeat = 15 * time.Second
	// writeTimeout bounds one write to a client; a client that reads
	// nothing for this long is disconnected (it reconnects and replays).
	writeTimeout = 10 * time.Second
	// replayLimit bounds one catch-up; a client that missed more is told
	// to reload the page instead.
	replayLimit = 5000
)

func (s *Server) roomEvents(c echo.Context) error {
	r, err := s.roomOr404(c)
	if err != nil {
		return err
	}
	if !r.HasParticipant(mustUser(c).Login) {
		return store.ErrNotParticipant
	}
	after := c.Request().Header.Get("Last-Event-ID")
	if after == "" {
		after = c.QueryParam("after")
	}
	var since gocql.UUID
	if after != "" {
		if since, err = store.ParseMessageID(after); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "Last-Event-ID must be a message id.")
		}
	}
	liftDeadlines(c) // a stream outlives the server's read and write timeouts

	// Subscribe and take the room's bound at one instant: this instance's
	// messages below it are in Cassandra, the ones above will arrive live.
	sub, bound := s.seq.subscribe(r.Name, func() *Subscription { return s.hub.Subscribe(r.Name) })
	defer sub.Close()
	s.metrics.SSEConnections.Inc()
	defer s.metrics.SSEConnections.Dec()

	h := c.Response().Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK)
	out := &eventWriter{w: c.Response(), rc: http.NewResponseController(c.Response())}
	ctx := c.Request().Context()
	if out.comment("connected") != nil {
		return nil
	}

	sent := map[gocql.UUID]struct{}{}
	if since != zeroID {
		out.last = since
		backlog, cut, err := s.db.MessagesAfter(ctx, r, since, replayLimit)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("sse: replay", "room", r.Name, "err", err)
			}
			return nil // the client reconnects with the same id and tries again
		}
		if cut {
			_ = out.event("reload", []byte("too many messages missed"))
			return nil
		}
		for _, m := range backlog {
			if !s.beforeBound(m.ID, bound) {
				continue // published after we subscribed: it comes live
			}
			html, err := renderString(ctx, views.MessageItem(m))
			if err != nil {
				return nil
			}
			if out.message(m.ID, html) != nil {
				return nil
			}
			sent[m.ID] = struct{}{}
		}
	}

	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		case <-sub.Dropped:
			s.log.Info("sse: dropped a subscriber that fell behind", "room", r.Name)
			return nil
		case <-tick.C:
			err = out.comment("keep-alive")
		case ev := <-sub.C:
			switch ev.Kind {
			case EventMessage:
				if _, dup := sent[ev.Message.ID]; dup {
					continue
				}
				err = out.message(ev.Message.ID, ev.HTML)
			case EventParticipants:
				err = out.event("", ev.HTML)
			case EventRoomDeleted:
				_ = out.event(EventRoomDeleted, []byte("/?notice=room-deleted"))
				return nil
			}
		}
		if err != nil {
			return nil // the client is gone or stalled past writeTimeout
		}
	}
}

// eventWriter writes server-sent events, each flushed at once and each
// write bounded by writeTimeout.
type eventWriter struct {
	w  io.Writer
	rc *http.ResponseController
	// last is the newest message id sent: every event carries it, so the
	// browser's Last-Event-ID never goes backwards or blank.
	last gocql.UUID
	buf  bytes.Buffer
}

func (e *eventWriter) message(id gocql.UUID, html []byte) error {
	if later(id, e.last) {
		e.last = id
	}
	return e.event("", html)
}

func (e *eventWriter) event(name string, data []byte) error {
	e.buf.Reset()
	if e.last != zeroID {
		fmt.Fprintf(&e.buf, "id: %s\n", e.last)
	}
	if name != "" {
		fmt.Fprintf(&e.buf, "event: %s\n", name)
	}
	for _, line := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		e.buf.WriteString("data: ")
		e.buf.Write(line)
		e.buf.WriteByte('\n')
	}
	e.buf.WriteByte('\n')
	return e.flush()
}

func (e *eventWriter) comment(text string) error {
	e.buf.Reset()
	fmt.Fprintf(&e.buf, ": %s\n\n", text)
	return e.flush()
}

func (e *eventWriter) flush() error {
	if err := e.rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := e.w.Write(e.buf.Bytes()); err != nil {
		return err
	}
	return e.rc.Flush()
}

// later orders timeuuids by time, then by their other bytes.
func later(a, b gocql.UUID) bool {
	if ta, tb := a.Timestamp(), b.Timestamp(); ta != tb {
		return ta > tb
	}
	return bytes.Compare(a[8:], b[8:]) > 0
}

func renderString(ctx context.Context, comp interface {
	Render(context.Context, io.Writer) error
}) ([]byte, error) {
	var buf bytes.Buffer
	err := comp.Render(ctx, &buf)
	return buf.Bytes(), err
}

// Shutdown ends every live stream so the HTTP server can stop.
func (s *Server) Shutdown() {
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
}

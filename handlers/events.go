// This file owns the live room stream (server-sent events). Each connection
// first receives, from Cassandra, every message after the id it saw last
// (Last-Event-ID or ?after=), then the live ones, each exactly once.
package handlers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
	"github.com/labstack/echo/v4"
	"github.com/r3labs/sse/v2"

	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/views"
)

const (
	// heartbeat is how often an idle stream gets a comment line, so
	// proxies keep it open and dead connections are noticed.
	heartbeat = 15 * time.Second
	// replayLimit bounds one catch-up; a client that missed more is told to
	// reload the page instead.
	replayLimit = 5000
	// streamBuffer is the per-connection queue inside the SSE library.
	streamBuffer = 16
)

var connSeq atomic.Uint64

// newEventServer is the r3labs/sse server. Each connection gets a stream
// of its own, so a stalled client blocks only its own stream; the library's
// in-memory replay is off (it grows without bound, and Cassandra is the log).
func newEventServer() *sse.Server {
	srv := sse.New()
	srv.AutoReplay = false
	srv.AutoStream = false
	srv.SplitData = true
	srv.BufferSize = streamBuffer
	srv.Headers = map[string]string{"X-Accel-Buffering": "no"}
	return srv
}

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

	// Subscribe before reading the backlog, so nothing falls in between;
	// what arrives twice is filtered by id below.
	sub := s.hub.Subscribe(r.Name)
	defer sub.Close()
	s.metrics.SSEConnections.Inc()
	defer s.metrics.SSEConnections.Dec()

	id := "c" + strconv.FormatUint(connSeq.Add(1), 36)
	stream := s.events.CreateStream(id)
	defer s.events.RemoveStream(id)

	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	req := c.Request().Clone(ctx)
	req.Header.Del("Last-Event-ID") // the library would parse it as a number
	q := req.URL.Query()
	q.Set("stream", id)
	req.URL.RawQuery = q.Encode()

	go func() {
		// Ends the connection when the pump stops (client fell behind,
		// room deleted, or server shutting down).
		defer cancel()
		s.pump(ctx, stream, id, r, since, sub)
	}()
	s.events.ServeHTTP(c.Response(), req)
	_ = stream
	return nil
}

// pump feeds one connection: the backlog from Cassandra, then live events.
func (s *Server) pump(ctx context.Context, _ *sse.Stream, id string, r store.Room, since gocql.UUID, sub *Subscription) {
	last := since.String()
	if since == zeroID {
		last = ""
	}
	send := func(ev *sse.Event, wait bool) bool {
		if wait {
			s.events.Publish(id, ev)
			return true
		}
		return s.events.TryPublish(id, ev)
	}
	sent := map[gocql.UUID]struct{}{}
	if since != zeroID {
		backlog, cut, err := s.db.MessagesAfter(ctx, r, since, replayLimit)
		if err != nil {
			s.log.Warn("sse: replay", "room", r.Name, "err", err)
			return // the client reconnects and tries again
		}
		if cut {
			send(&sse.Event{ID: []byte(last), Event: []byte("reload"), Data: []byte("reload")}, true)
			return
		}
		for _, m := range backlog {
			data, err := s.messageHTML(ctx, m)
			if err != nil {
				s.log.Error("sse: render", "err", err)
				return
			}
			last = m.ID.String()
			sent[m.ID] = struct{}{}
			send(&sse.Event{ID: []byte(last), Data: data}, true)
		}
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		var ev *sse.Event
		select {
		case <-ctx.Done():
			return
		case <-sub.Dropped:
			s.log.Info("sse: dropped a subscriber that fell behind", "room", r.Name)
			return
		case <-tick.C:
			ev = &sse.Event{Comment: []byte("keep-alive")}
		case re := <-sub.C:
			switch re.Kind {
			case EventMessage:
				if _, dup := sent[re.Message.ID]; dup {
					continue
				}
				data, err := s.messageHTML(ctx, *re.Message)
				if err != nil {
					s.log.Error("sse: render", "err", err)
					return
				}
				last = re.Message.ID.String()
				ev = &sse.Event{ID: []byte(last), Data: data}
			case EventParticipants:
				data, err := renderString(ctx, views.Participants(r.Name, re.Participants, true))
				if err != nil {
					return
				}
				ev = &sse.Event{ID: []byte(last), Data: data}
			case EventRoomDeleted:
				send(&sse.Event{ID: []byte(last), Event: []byte(EventRoomDeleted), Data: []byte("/?notice=room-deleted")}, true)
				return
			default:
				continue
			}
		}
		if !send(ev, false) {
			s.log.Info("sse: dropped a stalled connection", "room", r.Name)
			return
		}
	}
}

func (s *Server) messageHTML(ctx context.Context, m store.Message) ([]byte, error) {
	return renderString(ctx, views.MessageItem(m))
}

func renderString(ctx context.Context, comp interface {
	Render(context.Context, io.Writer) error
}) ([]byte, error) {
	var buf bytes.Buffer
	err := comp.Render(ctx, &buf)
	return buf.Bytes(), err
}

// Shutdown closes every live stream so the HTTP server can stop.
func (s *Server) Shutdown() { s.events.Close() }

// This file owns the live room stream (server-sent events). A connection
// first receives, from Cassandra and a page at a time, every message after
// the id it saw last (Last-Event-ID, or ?after= on a page's first
// connect), then the live ones: each exactly once and, for this instance's
// messages, in id order. It ends when its reader leaves the room, logs out
// or loses the session (see streams.go for that and for the limits).
//
// The stream is written here rather than by r3labs/sse's server: that
// server parses Last-Event-ID as a number (ours are timeuuids), fans out
// with blocking sends (one stalled client holds up the rest of its
// stream), and drops events published before its subscriber registers.
// The tests read our streams with r3labs/sse's own event reader, and with
// the HTML standard's parser, which ends lines at a lone "\r" too.
package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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
	// replayPage is how many messages a replay reads from Cassandra at a
	// time; each page is written out before the next is read, so a replay
	// holds one page in memory, whatever its client's reading speed.
	replayPage = 50
	// replayTimeout bounds how long one replay keeps its slot (see
	// replaySlots): a client that reads too slowly to finish in time is
	// disconnected and resumes, by its Last-Event-ID, where it got to.
	replayTimeout = 30 * time.Second
)

// roomEvents is the live stream of a room or a DM.
func (s *Server) roomEvents(c echo.Context) error {
	me := mustUser(c)
	after := c.Request().Header.Get("Last-Event-ID")
	if after == "" {
		after = c.QueryParam("after")
	}
	var since gocql.UUID
	if after != "" {
		var err error
		if since, err = store.ParseMessageID(after); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "Last-Event-ID must be a message id.")
		}
	}
	liftDeadlines(c) // a stream outlives the server's read and write timeouts

	// Caps per user and per client IP: a stream over them is refused, and
	// the ones already open are left alone.
	closeStream, byUser, ok := s.streams.open(me.Login, c.RealIP())
	if !ok {
		c.Response().Header().Set("Retry-After", streamRetryAfter)
		if byUser {
			return echo.NewHTTPError(http.StatusTooManyRequests,
				"You have too many live pages open. Close some tabs, then reload this page.")
		}
		return echo.NewHTTPError(http.StatusTooManyRequests,
			"Too many live pages are open from your address. Close some tabs, then reload this page.")
	}
	defer closeStream()

	ctx := c.Request().Context()
	// A replay holds one of the replay slots until it is written out.
	replaying := since != zeroID
	if replaying && !s.replays.take(ctx) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return s.refuseReplay(c)
	}
	endReplay := func() {
		if replaying {
			replaying = false
			s.replays.give()
		}
	}
	defer endReplay()

	// Subscribe before the room is read: a leave or a delete that the read
	// does not see yet is published later, and ends this subscription.
	// Subscribing takes the room's bound at the same instant: this
	// instance's messages below it are in Cassandra, the ones above will
	// arrive live.
	who := Subscriber{Login: me.Login, Session: streamSession(session(c).ID)}
	subscribe := func(room string) (*Subscription, int64) {
		return s.seq.subscribe(room, func() *Subscription { return s.hub.Subscribe(room, who) })
	}
	key := conversationKey(c)
	sub, bound := subscribe(key)
	defer func() { sub.Close() }()
	cv, err := s.conversationOf(c)
	if err != nil {
		return err
	}
	if !cv.member(me.Login) {
		return store.ErrNotParticipant
	}
	if cv.ID != key {
		// The room answered to another spelling of its name; its events
		// are published under the stored one.
		sub.Close()
		sub, bound = subscribe(cv.ID)
	}
	inConversation(c, cv.Place.Conversation())
	ctx = c.Request().Context()
	// The same stream tells the page when another of this person's
	// conversations gets a message (see ConversationWatch): one stream per tab.
	watch := s.watchOthers(ctx, me.Login, cv.ID)
	defer watch.Close()
	s.metrics.SSEConnections.Inc()
	defer s.metrics.SSEConnections.Dec()

	h := c.Response().Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK)
	out := &eventWriter{w: c.Response(), rc: http.NewResponseController(c.Response())}
	if out.comment("connected") != nil {
		return nil
	}

	// sent holds the replayed ids that may come live as well: other
	// instances' only, since this instance's below the bound were
	// published before the subscription.
	sent := map[gocql.UUID]struct{}{}
	if since != zeroID {
		out.last = since
		if !s.replay(ctx, out, cv.Place, since, bound, sent) {
			return nil
		}
		endReplay()
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
		case <-sub.Ended:
			return nil // left the room, logged out, or lost the session
		case <-sub.Dropped:
			s.log.Info("sse: dropped a subscriber that fell behind", "room", cv.ID)
			return nil
		case <-tick.C:
			err = out.comment("keep-alive")
		case conv := <-watch.C:
			if conv != cv.ID {
				err = out.event("unread", []byte(conv))
			}
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

// replay writes the messages of in after since that lie below bound (see
// sequencer), page by page: a page is read, written, and only then is the
// next one read. It returns false when the stream must end: the client is
// gone or too slow, the database failed (the client reconnects with the
// same id and tries again), or more was missed than a replay gives, and
// the client was told to reload the page.
func (s *Server) replay(ctx context.Context, out *eventWriter, in store.Place, since gocql.UUID, bound int64, sent map[gocql.UUID]struct{}) bool {
	deadline := time.Now().Add(replayTimeout)
	cursor, replayed := since, 0
	for first := true; ; first = false {
		page, more, err := s.db.MessagesAfter(ctx, in, cursor, replayPage)
		if err == nil && first && more {
			// More than a page missed: find out, by ids alone, whether it
			// is too much to replay before sending any of it.
			var n int
			if n, err = s.db.CountMessagesAfter(ctx, in, since, replayLimit+1); err == nil && n > replayLimit {
				_ = out.event("reload", []byte("too many messages missed"))
				return false
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("sse: replay", "room", in.Conversation().ID, "err", err)
			}
			return false
		}
		for _, m := range page {
			cursor = m.ID
			if !s.beforeBound(m.ID, bound) {
				continue // published after we subscribed: it comes live
			}
			html, err := renderString(ctx, views.MessageItem(m))
			if err != nil {
				return false
			}
			if out.message(m.ID, html) != nil {
				return false
			}
			if !s.db.MadeHere(m.ID) {
				sent[m.ID] = struct{}{}
			}
			replayed++
		}
		switch {
		case !more:
			return true
		case replayed > replayLimit:
			// The room gains messages faster than this client reads them.
			_ = out.event("reload", []byte("too many messages missed"))
			return false
		case time.Now().After(deadline):
			return false
		}
	}
}

// refuseReplay answers a replay that found no free slot in time: 503 with
// Retry-After. It renders the page itself rather than through
// handleError, which would log each refusal of an overload as an error.
func (s *Server) refuseReplay(c echo.Context) error {
	s.log.Debug("sse: refused a replay, every replay slot is busy", "room", conversationKey(c), "login", mustUser(c).Login)
	c.Response().Header().Set("Retry-After", replayRetryAfter)
	const status = http.StatusServiceUnavailable
	return s.render(c, status, views.Page{Title: http.StatusText(status)}, views.ErrorView(views.ErrorPage{
		Status: status, Title: http.StatusText(status),
		Message: "Too many pages are catching up at this moment. Please try again in a few seconds.",
	}))
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
	if store.Later(id, e.last) {
		e.last = id
	}
	return e.event("", html)
}

// errFieldBreak refuses an event name or comment that would end its line.
var errFieldBreak = errors.New("sse: event name or comment contains a line break")

// event writes one event. Its id is a timeuuid and its name one of ours,
// so neither can hold a line break (a name that does is refused); data is
// any text, written as data lines split wherever a parser ends a line.
func (e *eventWriter) event(name string, data []byte) error {
	if strings.ContainsAny(name, "\r\n") {
		return errFieldBreak
	}
	e.buf.Reset()
	if e.last != zeroID {
		fmt.Fprintf(&e.buf, "id: %s\n", e.last)
	}
	if name != "" {
		fmt.Fprintf(&e.buf, "event: %s\n", name)
	}
	writeData(&e.buf, data)
	e.buf.WriteByte('\n')
	return e.flush()
}

// writeData writes data as "data:" lines. The SSE parsers of browsers and
// of htmx end a line at "\r\n", at a lone "\r" and at "\n", so the data is
// split at each of the three: a "\r" left inside a line would end it
// there, and the rest of a message (say "\r\revent: room-deleted") would
// be read as fields of the stream. The reader joins the lines with "\n",
// which is all a line break in the data can come out as.
func writeData(buf *bytes.Buffer, data []byte) {
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

func (e *eventWriter) comment(text string) error {
	if strings.ContainsAny(text, "\r\n") {
		return errFieldBreak
	}
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

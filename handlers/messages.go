// This file owns posting messages and reading older pages of a room.
package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"

	"github.com/gocql/gocql"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/views"
)

var zeroID gocql.UUID

// olderLink is the link to the page before msgs, or "" at the room's start.
func olderLink(room string, msgs []store.Message, more bool) string {
	if !more || len(msgs) == 0 {
		return ""
	}
	return roomURL(room) + "/messages?before=" + url.QueryEscape(msgs[0].ID.String())
}

func (s *Server) postMessage(c echo.Context) error {
	r, err := s.roomOr404(c)
	if err != nil {
		return err
	}
	me := mustUser(c)
	if isMultipart(c.Request()) {
		return s.postFiles(c, r,
			func(ctx context.Context, draft func() (store.Message, error)) (store.Message, error) {
				return s.post(ctx, r, draft)
			},
			func(f views.Form) error { return s.composerError(c, r, me, f) },
			views.Composer(r.Name, views.Form{}), roomURL(r.Name)+"#composer")
	}
	content := c.FormValue("content")
	m, err := s.post(c.Request().Context(), r, func() (store.Message, error) { return s.db.DraftMessage(r, me, content) })
	if errors.Is(err, store.ErrInvalid) {
		return s.composerError(c, r, me, withErrors(views.Form{Values: map[string]string{"content": content}, Errors: map[string]string{}}, err))
	}
	if err != nil {
		return err
	}
	if isHTMX(c) {
		// The new message and a fresh composer; the live stream brings the
		// same element (same id) and the page keeps only one.
		return s.renderRaw(c, http.StatusOK, views.Posted(r.Name, m, views.Form{}))
	}
	return c.Redirect(http.StatusSeeOther, roomURL(r.Name)+"#composer")
}

// composerError answers a post the composer must show again, with f's
// errors: the composer alone for htmx, the room page otherwise.
func (s *Server) composerError(c echo.Context, r store.Room, me store.UserRef, f views.Form) error {
	if isHTMX(c) {
		return s.renderRaw(c, http.StatusUnprocessableEntity, views.Composer(r.Name, f))
	}
	v := views.RoomView{Room: r, Viewer: me, Participant: true, Creator: r.CreatorLogin == me.Login, Composer: f}
	var err error
	if v.Messages, v.Older, v.After, err = s.latest(c, r); err != nil {
		return err
	}
	return s.render(c, http.StatusUnprocessableEntity, views.Page{Title: r.DisplayName, Room: r.Name}, views.RoomPage(v))
}

// post drafts a message (giving it its id, in order), stores it, and
// publishes it once every message drafted before it in the room is settled.
// It renders the message here, outside the sequencer's lock, once for all
// the live streams. The draft's error is returned as it is.
func (s *Server) post(ctx context.Context, r store.Room, draft func() (store.Message, error)) (store.Message, error) {
	sl, err := s.seq.reserve(r.Name, draft)
	if err != nil {
		return store.Message{}, err
	}
	if err := s.db.SaveMessage(ctx, r, sl.msg); err != nil {
		s.seq.finish(sl, false)
		return store.Message{}, err
	}
	sl.html, _ = renderString(ctx, views.MessageItem(sl.msg)) // publish renders again (and logs) if this failed
	s.seq.finish(sl, true)
	return sl.msg, nil
}

// latest is the newest page of a room, the link to the page before, and
// where the page's live stream starts. The page shows only what lies below
// the room's bound (see sequencer), and its stream starts just below the
// bound, so a message still being written when the page was read is
// neither lost nor shown twice.
func (s *Server) latest(c echo.Context, r store.Room) (msgs []store.Message, older, after string, err error) {
	bound := s.seq.bound(r.Name)
	msgs, more, err := s.db.MessagesBefore(c.Request().Context(), r, zeroID, messagesPerPage)
	if err != nil {
		return nil, "", "", err
	}
	older = olderLink(r.Name, msgs, more)
	shown := msgs[:0]
	for _, m := range msgs {
		if s.beforeBound(m.ID, bound) {
			shown = append(shown, m)
		}
	}
	return shown, older, gocql.MaxTimeUUID(store.TimeOfTicks(bound - 1)).String(), nil
}

// beforeBound says whether a stored message lies on the "already
// published" side of bound. Messages of other instances are not ordered by
// this instance's bound, so they always count as published.
func (s *Server) beforeBound(id gocql.UUID, bound int64) bool {
	return id.Timestamp() < bound || !s.db.MadeHere(id)
}

func (s *Server) olderMessages(c echo.Context) error {
	before, err := store.ParseMessageID(c.QueryParam("before"))
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The link to older messages is malformed.")
	}
	r, err := s.roomOr404(c)
	if err != nil {
		return err
	}
	if !r.HasParticipant(mustUser(c).Login) {
		return store.ErrNotParticipant
	}
	msgs, more, err := s.db.MessagesBefore(c.Request().Context(), r, before, messagesPerPage)
	if err != nil {
		return err
	}
	v := views.OlderMessages{Room: r.Name, Title: r.DisplayName, Messages: msgs, Older: olderLink(r.Name, msgs, more)}
	if isHTMX(c) {
		return s.renderRaw(c, http.StatusOK, views.OlderPage(v))
	}
	return s.render(c, http.StatusOK, views.Page{Title: r.DisplayName + ": older messages", Room: r.Name}, views.OlderView(v))
}

// sequencer publishes each room's messages in the order of their ids, even
// though their inserts run concurrently and finish in any order. A client
// that resumes after the id it saw last therefore never misses a message
// of this instance that was still being written.
//
// It also gives live streams and pages their bound: every id this instance
// has drafted for a room but not yet published, and every id it drafts
// later, has a timestamp at or above the bound; everything below it is
// published (or failed) and so is in Cassandra.
type sequencer struct {
	mu      sync.Mutex
	pending map[string][]*slot
	publish func(RoomEvent)
	floor   func() int64
}

type slot struct {
	msg  store.Message
	html []byte
	done bool
	ok   bool
}

func newSequencer(publish func(RoomEvent), floor func() int64) *sequencer {
	return &sequencer{pending: map[string][]*slot{}, publish: publish, floor: floor}
}

// bound is the room's bound now (see sequencer).
func (q *sequencer) bound(room string) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.boundLocked(room)
}

func (q *sequencer) boundLocked(room string) int64 {
	if p := q.pending[room]; len(p) > 0 {
		return p[0].msg.ID.Timestamp()
	}
	return q.floor()
}

// subscribe subscribes to the room's events and takes its bound at the
// same instant: local messages below the bound were published before the
// subscription (read them from Cassandra), the others will be delivered.
func (q *sequencer) subscribe(room string, subscribe func() *Subscription) (*Subscription, int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return subscribe(), q.boundLocked(room)
}

// reserve drafts a message (giving it its id) and queues it for publication.
func (q *sequencer) reserve(room string, draft func() (store.Message, error)) (*slot, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	m, err := draft()
	if err != nil {
		return nil, err
	}
	sl := &slot{msg: m}
	q.pending[room] = append(q.pending[room], sl)
	return sl, nil
}

// finish marks a message stored (ok) or failed, and publishes every stored
// message at the head of the room's queue.
func (q *sequencer) finish(sl *slot, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	sl.done, sl.ok = true, ok
	queue := q.pending[sl.msg.Room]
	i := 0
	for ; i < len(queue) && queue[i].done; i++ {
		if queue[i].ok {
			m := queue[i].msg
			q.publish(RoomEvent{Kind: EventMessage, Room: m.Room, Message: &m, HTML: queue[i].html})
		}
	}
	if i == len(queue) {
		delete(q.pending, sl.msg.Room)
	} else {
		q.pending[sl.msg.Room] = queue[i:]
	}
}

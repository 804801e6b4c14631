// This file owns the route of a conversation's live stream: it parses the
// request, checks who asks and what they may see, and hands the stream to
// the live engine (package live), which replays what the page missed and
// then writes the live events.
package handlers

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
)

const (
	// streamRetryAfter is the Retry-After, in seconds, of a refused stream.
	streamRetryAfter = "10"
	// replayRetryAfter is the Retry-After, in seconds, of a replay refused
	// because too many run at once.
	replayRetryAfter = "2"
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
	web.LiftDeadlines(c) // a stream outlives the server's read and write timeouts

	// Caps per user and per client IP: a stream over them is refused, and
	// the ones already open are left alone.
	st, err := s.live.Open(me.Login, c.RealIP(), web.SessionDigest(session(c).ID), since)
	if err != nil {
		c.Response().Header().Set("Retry-After", streamRetryAfter)
		if errors.Is(err, live.ErrTooManyForUser) {
			return echo.NewHTTPError(http.StatusTooManyRequests,
				"You have too many live pages open. Close some tabs, then reload this page.")
		}
		return echo.NewHTTPError(http.StatusTooManyRequests,
			"Too many live pages are open from your address. Close some tabs, then reload this page.")
	}
	defer st.Close()
	st.OnEnd(s.endAtExpiry(me.Login, session(c).ID))
	if err := st.TakeReplay(c.Request().Context()); err != nil {
		if errors.Is(err, live.ErrReplaysBusy) {
			return s.refuseReplay(c)
		}
		return err
	}

	key := conversationKey(c)
	st.Subscribe(key)
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
		st.Subscribe(cv.ID)
	}
	inConversation(c, cv.Place.Conversation())
	ctx := c.Request().Context()
	st.Watch(s.watchOthers(ctx, me.Login, cv.ID))
	res := c.Response()
	st.Run(ctx, res, func() { res.Status, res.Committed = http.StatusOK, true }, cv.Place)
	return nil
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

// endAtExpiry ends the streams of session id when its row expires by its
// TTL: logout and revocations end them through the hub at once, but
// nothing tells of an expiry. It reads the session's TTL off the
// request's path, and again once that has passed (a session extended by
// another tab meanwhile is waited for again). It returns the func that
// stops it.
func (s *Server) endAtExpiry(login, id string) (stop func()) {
	if id == "" {
		return func() {}
	}
	var (
		mu      sync.Mutex
		timer   *time.Timer
		stopped bool
		check   func()
	)
	check = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ttl, err := s.db.SessionTTL(ctx, id)
		cancel()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case stopped:
			return
		case errors.Is(err, store.ErrNotFound):
			go s.endStreams(context.Background(), live.StreamEnd{Login: login, Sessions: []string{id}})
			return
		case err != nil:
			ttl = time.Minute // Cassandra is away: ask again later
		}
		timer = time.AfterFunc(ttl+time.Second, check)
	}
	mu.Lock()
	timer = time.AfterFunc(0, check)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
	}
}

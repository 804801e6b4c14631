package events

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web/server"
	"github.com/killrchat/killrchat/web/session"
)

const (
	// streamRetryAfter is the Retry-After, in seconds, of a refused stream.
	streamRetryAfter = "10"
	// replayRetryAfter is the Retry-After, in seconds, of a replay refused
	// because too many run at once.
	replayRetryAfter = "2"
)

// Streams opens and ends the live streams (live.Engine).
type Streams interface {
	Open(login, ip, session string, since chat.ID) (*live.Stream, error)
	OpenPersonal(login, ip, session, browser string) (*live.Stream, error)
	EndBrowser(login, browser string)
}

// Sessions says how long a session has left (store.Store).
type Sessions interface {
	SessionTTL(ctx context.Context, id string) (time.Duration, error)
}

// Members says when a person joined a room (store.Store).
type Members interface {
	JoinedAt(ctx context.Context, r chat.Room, login string) (time.Time, error)
}

// Ender ends the streams of sessions that are gone, on every instance
// (service.Service).
type Ender interface {
	SessionsEnded(ctx context.Context, login string, ids []string)
}

// Core is what the module uses of the HTTP core (handlers.Server): the
// conversation a request or a stream names, what it shows marked as read,
// the watch of a person's other conversations, rendering.
type Core interface {
	ConversationOf(c echo.Context) (handlers.Conversation, error)
	ConversationByID(ctx context.Context, login, id string) (handlers.Conversation, error)
	InConversation(c echo.Context, place chat.Place, msgs ...chat.Message)
	Mentioning(ctx context.Context, place chat.Place, msgs ...chat.Message) context.Context
	WatchOthers(ctx context.Context, login, open string) *live.ConversationWatch
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
}

// Deps are what the module is built from.
type Deps struct {
	Core     Core
	Streams  Streams
	Sessions Sessions
	Members  Members
	Ender    Ender
	Log      *slog.Logger
}

// routes are the live streams' routes.
type routes struct{ Deps }

// Register lists the routes of the live streams.
func Register(r handlers.Routes, d Deps) {
	s := routes{d}
	r.Auth.GET("/rooms/:room/events", s.roomEvents)
	r.Auth.GET("/dm/:logins/events", s.roomEvents, handlers.CanonicalDM)
	r.Auth.GET("/events", s.personalEvents)
	r.Auth.POST("/events/end", s.endPersonalEvents)
}

// roomEvents is the live stream of a room or a DM.
func (s routes) roomEvents(c echo.Context) error {
	me := handlers.MustUser(c)
	after := c.Request().Header.Get("Last-Event-ID")
	if after == "" {
		after = c.QueryParam("after")
	}
	var since chat.ID
	if after != "" {
		var err error
		if since, err = chat.ParseMessageID(after); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "Last-Event-ID must be a message id.")
		}
	}
	server.LiftDeadlines(c) // a stream outlives the server's read and write timeouts

	// Caps per user and per client IP: a stream over them is refused, and
	// the ones already open are left alone.
	st, err := s.Streams.Open(me.Login, c.RealIP(), session.Digest(handlers.Session(c).ID), since)
	if err != nil {
		return refuseStream(c, err)
	}
	defer st.Close()
	st.OnEnd(s.endAtExpiry(me.Login, handlers.Session(c).ID))
	if err := st.TakeReplay(c.Request().Context()); err != nil {
		if errors.Is(err, live.ErrReplaysBusy) {
			return s.refuseReplay(c)
		}
		return err
	}

	key := handlers.ConversationKey(c)
	st.Subscribe(key)
	cv, err := s.Core.ConversationOf(c)
	if err != nil {
		return err
	}
	if !cv.Member(me.Login) {
		return chat.ErrNotParticipant
	}
	if cv.ID != key {
		// The room answered to another spelling of its name; its events
		// are published under the stored one.
		st.Subscribe(cv.ID)
	}
	s.Core.InConversation(c, cv.Place)
	ctx := c.Request().Context()
	st.Resume(cv.ID, cv.Place, since, ctx)
	if err := s.changesFrom(ctx, st, cv.ID, cv.Room, me.Login, since); err != nil {
		return err
	}
	st.Watch(s.Core.WatchOthers(ctx, me.Login, cv.ID))
	res := c.Response()
	st.Run(ctx, res, func() { res.Status, res.Committed = http.StatusOK, true })
	return nil
}

// changesFrom has a stream that resumes a room from since (zero: it
// replays nothing) replay no change made before login joined the room:
// one read of login's row, for a resume only.
func (s routes) changesFrom(ctx context.Context, st *live.Stream, id string, room *chat.RoomFor, login string, since chat.ID) error {
	if since == (chat.ID{}) || room == nil {
		return nil
	}
	joined, err := s.Members.JoinedAt(ctx, room.Room, login)
	if err != nil {
		return err
	}
	if !joined.IsZero() {
		st.ChangesFrom(id, joined)
	}
	return nil
}

// refuseStream answers a stream over a cap: 429 with Retry-After.
func refuseStream(c echo.Context, err error) error {
	c.Response().Header().Set("Retry-After", streamRetryAfter)
	if errors.Is(err, live.ErrTooManyForUser) {
		return echo.NewHTTPError(http.StatusTooManyRequests,
			"You have too many live pages open. Close some tabs, then reload this page.")
	}
	return echo.NewHTTPError(http.StatusTooManyRequests,
		"Too many live pages are open from your address. Close some tabs, then reload this page.")
}

// carried is one conversation a personal stream is asked to carry, and
// the id after which the browser's copy of it ends (zero: from now).
type carried struct {
	id    string
	since chat.ID
}

// errBadCarried refuses a malformed ?c= or ?b= of GET /events.
var errBadCarried = echo.NewHTTPError(http.StatusBadRequest,
	"Each c= must be a conversation and the id it resumes after (id@cursor), and b= a short key.")

// parseCarried reads the ?c= values of GET /events: "<conversation>@<id>",
// or "<conversation>@" to start from now; each conversation once.
func parseCarried(values []string) ([]carried, error) {
	if len(values) > live.MaxPersonalConversations {
		return nil, echo.NewHTTPError(http.StatusBadRequest, "Too many conversations for one stream.")
	}
	out := make([]carried, 0, len(values))
	seen := map[string]bool{}
	for _, v := range values {
		id, after, ok := strings.Cut(v, "@")
		if !ok || seen[id] || !validConversationID(id) {
			return nil, errBadCarried
		}
		seen[id] = true
		f := carried{id: id}
		if after != "" {
			var err error
			if f.since, err = chat.ParseMessageID(after); err != nil {
				return nil, errBadCarried
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// validConversationID says whether id is a room's name or a DM's
// canonical "dm:" id.
func validConversationID(id string) bool {
	if address, ok := strings.CutPrefix(id, "dm:"); ok {
		canonical, _, err := chat.ParseDMAddress(address)
		return err == nil && canonical == address
	}
	return chat.ValidName(id) && chat.NameKey(id) == id
}

// validBrowserKey says whether b is a browser's key: up to 64 letters,
// digits, '-' and '_' ("" for none).
func validBrowserKey(b string) bool {
	if len(b) > 64 {
		return false
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// personalEvents is a browser's personal stream (GET /events): the
// person's own events ("unread": another of their conversations got a
// message), and the events of each conversation named by a ?c=, replayed
// from its own resume point. ?b= is the browser's key: a newer stream of
// the same browser replaces an older one on this instance, so the caps
// count browsers, not tabs. A conversation the person may not read, or
// that is gone, is refused on the stream itself (stream-end, or
// room-deleted, for that conversation), and the others carried on.
func (s routes) personalEvents(c echo.Context) error {
	me := handlers.MustUser(c)
	want, err := parseCarried(c.QueryParams()["c"])
	if err != nil {
		return err
	}
	browser := c.QueryParam("b")
	if !validBrowserKey(browser) {
		return errBadCarried
	}
	server.LiftDeadlines(c) // a stream outlives the server's read and write timeouts
	st, err := s.Streams.OpenPersonal(me.Login, c.RealIP(), session.Digest(handlers.Session(c).ID), browser)
	if err != nil {
		return refuseStream(c, err)
	}
	defer st.Close()
	st.OnEnd(s.endAtExpiry(me.Login, handlers.Session(c).ID))
	// Subscribe first, then read, as for a conversation's stream.
	for _, w := range want {
		st.Subscribe(w.id)
	}
	ctx := c.Request().Context()
	for _, w := range want {
		cv, err := s.Core.ConversationByID(ctx, me.Login, w.id)
		switch {
		case errors.Is(err, chat.ErrNotFound):
			st.Unsubscribe(w.id)
			st.Refuse(w.id, live.KindRoomDeleted)
		case err != nil:
			return err
		case !cv.Member(me.Login):
			st.Unsubscribe(w.id)
			st.Refuse(w.id, live.KindStreamEnd)
		default:
			st.Resume(w.id, cv.Place, w.since, s.Core.Mentioning(ctx, cv.Place))
			if err := s.changesFrom(ctx, st, cv.ID, cv.Room, me.Login, w.since); err != nil {
				return err
			}
		}
	}
	if err := st.TakeReplay(ctx); err != nil {
		if errors.Is(err, live.ErrReplaysBusy) {
			return s.refuseReplay(c)
		}
		return err
	}
	st.Watch(s.Core.WatchOthers(ctx, me.Login, ""))
	res := c.Response()
	st.Run(ctx, res, func() { res.Status, res.Committed = http.StatusOK, true })
	return nil
}

// endPersonalEvents answers POST /events/end (b=<browser key>): the
// browser's last page goes away, so its personal stream ends now rather
// than when its socket closes. A page that goes into the back-forward
// cache freezes a SharedWorker with its connection still open; the page
// sends this as a beacon. On this instance only: a stream held by another
// ends when the browser's next stream (same key) replaces it, or its
// socket closes.
func (s routes) endPersonalEvents(c echo.Context) error {
	browser := c.FormValue("b")
	if browser == "" || !validBrowserKey(browser) {
		return errBadCarried
	}
	s.Streams.EndBrowser(handlers.MustUser(c).Login, browser)
	return c.NoContent(http.StatusNoContent)
}

// refuseReplay answers a replay that found no free slot in time: 503 with
// Retry-After. It renders the page itself rather than through
// handleError, which would log each refusal of an overload as an error.
func (s routes) refuseReplay(c echo.Context) error {
	s.Log.Debug("sse: refused a replay, every replay slot is busy", "room", handlers.ConversationKey(c), "login", handlers.MustUser(c).Login)
	c.Response().Header().Set("Retry-After", replayRetryAfter)
	const status = http.StatusServiceUnavailable
	return s.Core.Render(c, status, views.Page{Title: http.StatusText(status)}, views.ErrorView(views.ErrorPage{
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
func (s routes) endAtExpiry(login, id string) (stop func()) {
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
		ttl, err := s.Sessions.SessionTTL(ctx, id)
		cancel()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case stopped:
			return
		case errors.Is(err, chat.ErrNotFound):
			go s.Ender.SessionsEnded(context.Background(), login, []string{id})
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

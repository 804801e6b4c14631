// This file owns posting messages and reading older pages of a
// conversation, a room or a DM alike.

package handlers

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/live/fence"
	"github.com/killrchat/killrchat/push"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
)

var zeroID chat.ID

// olderLink is the link to the page before msgs in the conversation at
// base, or "" at its start.
func olderLink(base string, msgs []chat.Message, more bool) string {
	if !more || len(msgs) == 0 {
		return ""
	}
	return base + "/messages?before=" + url.QueryEscape(msgs[0].ID.String())
}

func (s *Server) postMessage(c echo.Context) error {
	// A text post in a room holds a pass from before its check of the room
	// to the end of its writes, so it writes with no read (live/fence);
	// an upload, which may take minutes, does not hold one up that long
	// and is checked with a read after its write instead.
	var pass *fence.Pass
	if room := c.Param("room"); room != "" && !web.IsMultipart(c.Request()) {
		pass = s.hub.Enter(chat.NameKey(room))
		defer pass.Leave()
	}
	cv, err := s.ConversationOf(c)
	if err != nil {
		return err
	}
	me := MustUser(c)
	s.InConversation(c, cv.Place)
	if web.IsMultipart(c.Request()) {
		if s.uploadFiles == nil {
			return echo.NewHTTPError(http.StatusUnsupportedMediaType, "This server takes no files.")
		}
		return s.uploadFiles(c, cv.Place,
			func(f views.Form) error { return s.composerError(c, cv, f) },
			cv.URL+"#latest")
	}
	content := c.FormValue("content")
	clientID := c.FormValue("client_id")
	if !ValidClientID(clientID) {
		return echo.NewHTTPError(http.StatusBadRequest, "This message form is broken. Reload the page and send again.")
	}
	var html []byte // the message as the live streams got it, when this request stored it
	m, err := s.recent.post(c.Request().Context(), postKey{author: me.Login, room: cv.ID, clientID: clientID}, func(ctx context.Context) (chat.Message, error) {
		m, h, err := s.postRendered(ctx, cv.Place, pass, func() (chat.Message, error) { return s.db.DraftMessage(cv.Place, me, content) })
		html = h
		return m, err
	})
	if errors.Is(err, chat.ErrInvalid) {
		return s.composerError(c, cv, WithErrors(views.Form{Values: map[string]string{"content": content, "client_id": clientID}, Errors: map[string]string{}}, err))
	}
	if err != nil {
		return err
	}
	if IsHTMX(c) {
		// The new message and the next client_id; the live stream brings
		// the same element (same id) and the page keeps only one.
		item := views.MessageItem(m)
		if html != nil {
			// Rendered once, for the streams and for this answer.
			item = templ.Raw(string(html))
		}
		return s.RenderRaw(c, http.StatusOK, views.Posted(item, NewClientID()))
	}
	return c.Redirect(http.StatusSeeOther, cv.URL+"#latest")
}

// NewClientID is a composer's one-time id: 128 random bits.
func NewClientID() string {
	return rand.Text()
}

// ValidClientID accepts what newClientID makes, and "" from clients that
// send none (they get no protection against a repeated send).
func ValidClientID(id string) bool {
	if len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// postKey names one message a person meant to send: the composer's
// client_id, by this author, in this conversation (room is its id).
type postKey struct {
	author, room, clientID string
}

const (
	// recentPostTTL is how long a repeated send returns the first message.
	recentPostTTL = 10 * time.Minute
	// recentPostsMax bounds the memory of recent sends (~100 bytes each).
	recentPostsMax = 100_000
)

// recentPosts makes posting idempotent: a send that repeats an
// (author, room, client_id) seen in the last recentPostTTL returns the
// message the first one stored instead of storing another, and a repeat
// that arrives while the first is still being stored waits for it.
//
// It is per instance and in memory, bounded to max keys (the oldest go
// first): a retry that reaches another instance, or comes after a restart,
// stores the message again. The composer retries on the page it was sent
// from, which in practice talks to the same instance.
type recentPosts struct {
	mu    sync.Mutex
	byKey map[postKey]*recentPost
	order []*recentPost // oldest first, for expiry and the bound
	max   int
	ttl   time.Duration
	now   func() time.Time
}

type recentPost struct {
	key  postKey
	at   time.Time
	done chan struct{} // closed once msg and err are set
	msg  chat.Message
	err  error
}

func newRecentPosts(max int, ttl time.Duration, now func() time.Time) *recentPosts {
	return &recentPosts{byKey: map[postKey]*recentPost{}, max: max, ttl: ttl, now: now}
}

// post runs save once per key within the TTL and returns its message to
// every caller with that key. A failed save is forgotten, so a retry
// tries again. An empty client_id is never remembered.
func (rp *recentPosts) post(ctx context.Context, k postKey, save func(context.Context) (chat.Message, error)) (chat.Message, error) {
	if k.clientID == "" {
		return save(ctx)
	}
	for {
		rp.mu.Lock()
		now := rp.now()
		rp.expireLocked(now)
		e, ok := rp.byKey[k]
		if !ok {
			e = &recentPost{key: k, at: now, done: make(chan struct{})}
			rp.byKey[k] = e
			rp.order = append(rp.order, e)
			rp.mu.Unlock()
			e.msg, e.err = save(ctx)
			if e.err != nil {
				rp.forget(e)
			}
			close(e.done)
			return e.msg, e.err
		}
		rp.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return chat.Message{}, ctx.Err()
		}
		if e.err == nil {
			return e.msg, nil
		}
		// The first try failed and was forgotten: this one is a real retry.
	}
}

func (rp *recentPosts) forget(e *recentPost) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.byKey[e.key] == e {
		delete(rp.byKey, e.key)
	}
}

// expireLocked drops entries older than the TTL, and the oldest ones
// beyond the bound.
func (rp *recentPosts) expireLocked(now time.Time) {
	drop := 0
	for ; drop < len(rp.order); drop++ {
		e := rp.order[drop]
		if now.Sub(e.at) < rp.ttl && len(rp.order)-drop < rp.max {
			break
		}
		if rp.byKey[e.key] == e {
			delete(rp.byKey, e.key)
		}
	}
	if drop > 0 {
		rp.order = append([]*recentPost(nil), rp.order[drop:]...)
	}
}

// composerError answers a post the composer must show again, with f's
// errors: the error slot alone for htmx (the text box keeps what was
// typed), the room page otherwise.
func (s *Server) composerError(c echo.Context, cv conversation, f views.Form) error {
	if IsHTMX(c) {
		return s.RenderRaw(c, http.StatusUnprocessableEntity, views.ComposerRejected(f))
	}
	v := s.roomView(c, cv)
	v.Composer, v.Now = f, time.Now()
	var err error
	if v.Messages, v.Older, v.After, err = s.latest(c, cv); err != nil {
		return err
	}
	return s.Render(c, http.StatusUnprocessableEntity, views.Page{Title: cv.Title, Room: cv.ID, Composer: true}, views.RoomPage(v))
}

// Post drafts a message (giving it its id, in order), stores it, and
// publishes it once every message drafted before it in the conversation
// is settled.
// It renders the message here, outside the sequencer's lock, once for all
// the live streams. The draft's error is returned as it is.
func (s *Server) Post(ctx context.Context, in chat.Place, draft func() (chat.Message, error)) (chat.Message, error) {
	m, _, err := s.postRendered(ctx, in, nil, draft)
	return m, err
}

// postRendered is post, also returning the message rendered for the live
// streams (nil if rendering failed), which the poster's own answer reuses.
// A room post with a pass (see postMessage) writes with no read.
func (s *Server) postRendered(ctx context.Context, in chat.Place, pass *fence.Pass, draft func() (chat.Message, error)) (chat.Message, []byte, error) {
	sl, err := s.live.Reserve(in.Conversation().ID, draft)
	if err != nil {
		return chat.Message{}, nil, err
	}
	if err := s.save(ctx, in, pass, sl.Msg); err != nil {
		s.live.Finish(sl, false)
		return chat.Message{}, nil, err
	}
	// What other people's sidebars read when this message's event reaches
	// them is written before it is published: a DM's entry in its members'
	// lists (a first message makes the entry) and the mentions. A failure
	// there is logged, not returned: the message is stored, and the next
	// one sets the list right.
	conv, err := s.db.Mentionable(ctx, in, sl.Msg.Content)
	if err != nil {
		s.log.Warn("mentioned members", "conversation", conv.ID, "err", err)
	}
	if d, ok := in.(chat.DM); ok {
		if err := s.db.RecordDMMessage(ctx, d, sl.Msg); err != nil {
			s.log.Warn("dm list", "dm", conv.ID, "err", err)
		}
	}
	s.recordMentions(ctx, conv, sl.Msg)
	sl.HTML, _ = s.RenderString(views.WithMembers(ctx, conv.Members), views.MessageItem(sl.Msg)) // publish renders again (and logs) if this failed
	html := sl.HTML
	s.live.Finish(sl, true)
	// The index follows the post, off its path (see store.Indexer), and
	// so do the pushes to people away.
	s.indexer.Index(conv, sl.Msg)
	s.pushPosted(in, conv, sl.Msg)
	return sl.Msg, html, nil
}

// pushPosted hands m to the Web Push sender, which finds who is away and
// wants it (package push); only this instance, which stored m, does.
func (s *Server) pushPosted(in chat.Place, conv chat.Conversation, m chat.Message) {
	sender := s.Push()
	if sender == nil || m.System {
		return
	}
	name := m.Author.Name()
	if name == "" {
		name = m.Author.Login
	}
	pm := push.Message{Conversation: conv.ID, Author: m.Author.Login, AuthorName: name, ID: m.ID.String(),
		Text: live.NoticeText(&m), Mentioned: chat.Mentioned(m.Content, conv.Members), Members: conv.Members}
	switch p := in.(type) {
	case chat.Room:
		pm.Title, pm.Path = "#"+p.DisplayName, RoomURL(p.Name)
	case chat.DM:
		pm.Title, pm.Path = "a direct message", DMURL(p.Address)
	}
	sender.Posted(pm)
}

// save stores m. In a room, with a pass: with no read if the pass is
// held when it leaves (every fence found it, live/fence), and else read
// again after the write, as without one (store.ConfirmPost).
func (s *Server) save(ctx context.Context, in chat.Place, pass *fence.Pass, m chat.Message) error {
	r, isRoom := in.(chat.Room)
	if !isRoom || pass == nil {
		if isRoom {
			s.metrics.RoomPosts.WithLabelValues("read").Inc()
		}
		return s.db.SaveMessage(ctx, in, m)
	}
	err := s.db.SaveFencedMessage(ctx, in, m)
	held := pass.Leave()
	if err != nil || held {
		if err == nil {
			s.metrics.RoomPosts.WithLabelValues("fenced").Inc()
		}
		return err
	}
	s.metrics.RoomPosts.WithLabelValues("read").Inc()
	return s.db.ConfirmPost(ctx, r, m)
}

// latest is the newest page of a conversation, the link to the page before, and
// where the page's live stream starts. The page shows only what lies below
// the room's bound (see sequencer), and its stream starts just below the
// bound, so a message still being written when the page was read is
// neither lost nor shown twice.
func (s *Server) latest(c echo.Context, cv conversation) (msgs []chat.Message, older, after string, err error) {
	bound := s.live.Bound(cv.ID)
	msgs, more, err := s.db.MessagesBefore(c.Request().Context(), cv.Place, zeroID, messagesPerPage)
	if err != nil {
		return nil, "", "", err
	}
	older = olderLink(cv.URL, msgs, more)
	shown := msgs[:0]
	for _, m := range msgs {
		if s.live.BeforeBound(m.ID, bound) {
			shown = append(shown, m)
		}
	}
	return shown, older, chat.MaxIDAt(chat.TimeOfTicks(bound - 1)).String(), nil
}

func (s *Server) olderMessages(c echo.Context) error {
	before, err := chat.ParseMessageID(c.QueryParam("before"))
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The link to older messages is malformed.")
	}
	cv, err := s.ConversationOf(c)
	if err != nil {
		return err
	}
	if !cv.Member(MustUser(c).Login) {
		return chat.ErrNotParticipant
	}
	msgs, more, err := s.db.MessagesBefore(c.Request().Context(), cv.Place, before, messagesPerPage)
	if err != nil {
		return err
	}
	s.InConversation(c, cv.Place, msgs...)
	v := views.OlderMessages{Room: cv.ID, URL: cv.URL, Title: cv.Title, DM: cv.DM != nil, Messages: msgs, Older: olderLink(cv.URL, msgs, more), Now: time.Now()}
	if IsHTMX(c) {
		return s.RenderRaw(c, http.StatusOK, views.OlderPage(v))
	}
	return s.Render(c, http.StatusOK, views.Page{Title: cv.Title + ": older messages", Room: cv.ID}, views.OlderView(v))
}

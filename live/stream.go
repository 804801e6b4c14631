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

package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/hangup"
	"github.com/killrchat/killrchat/live/sse"
	"github.com/killrchat/killrchat/live/watermark"
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

// zeroID is the zero message id: no id.
var zeroID chat.ID

// Errors of Engine.Open.
var (
	// ErrTooManyForUser: the person holds the most streams allowed.
	ErrTooManyForUser = errors.New("live: too many streams for this person")
	// ErrTooManyForIP: the client address holds the most streams allowed.
	ErrTooManyForIP = errors.New("live: too many streams from this address")
	// ErrReplaysBusy: no replay slot came free in time.
	ErrReplaysBusy = errors.New("live: every replay slot is busy")
)

// Stream is one live stream, from its request's checks to its end: a
// conversation's (a room page's), or a browser's personal stream, which
// carries several conversations and the person's own events (see
// personal.go). What it takes (its place under the caps, a replay slot,
// its subscriptions, a watch) is given back by Close, or, once Run has
// handed the connection to a goroutine of the stream's own, when that
// ends.
type Stream struct {
	e   *Engine
	who Subscriber
	// since is where a conversation's stream resumes (zero: a fresh page).
	since chat.ID
	ends  streamEnds
	// feeds are the conversations it carries, in the order subscribed.
	feeds []*feed
	watch *ConversationWatch
	// personal streams write every event wide (see encodeWide), so the
	// browser knows each one's conversation; notices are what they say
	// first, about conversations they were refused; replaced is closed
	// when the same browser opened a newer personal stream.
	personal bool
	notices  [][]byte
	replaced <-chan struct{}
	// replaying is set while the stream holds a replay slot.
	replaying bool
}

// feed is one conversation a stream carries: its subscription, the bound
// taken with it (see sequencer), and where the client's copy of it ends.
type feed struct {
	conv  string
	sub   *Subscription
	bound int64
	in    chat.Place      // nil until Resume
	since chat.ID         // zero: nothing to replay
	ctx   context.Context // renders its replay (nil: Run's)
	// changesFrom is where a replay of changes starts at the earliest:
	// when the reader joined (see ChangesFrom).
	changesFrom chat.ID
}

// Open counts a new stream of login (whose session's digest is session)
// from ip, which resumes after since (zero: a fresh page). It is refused
// with ErrTooManyForUser or ErrTooManyForIP, the streams already open
// left alone.
func (e *Engine) Open(login, ip, session string, since chat.ID) (*Stream, error) {
	closeStream, byUser, ok := e.streams.open(login, ip, false)
	if !ok {
		if byUser {
			return nil, ErrTooManyForUser
		}
		return nil, ErrTooManyForIP
	}
	return e.newStream(login, session, since, closeStream), nil
}

func (e *Engine) newStream(login, session string, since chat.ID, closeStream func()) *Stream {
	st := &Stream{e: e, who: Subscriber{Login: login, Session: session, signals: newStreamSignals()}, since: since}
	st.ends.add(closeStream)
	st.ends.add(func() {
		for _, f := range st.feeds {
			f.sub.Close()
		}
	})
	return st
}

// TakeReplay takes a replay slot for a resuming stream, waiting a little
// for one: ErrReplaysBusy when none came free, ctx's error when it ended
// first. A stream with nothing to replay needs none.
func (st *Stream) TakeReplay(ctx context.Context) error {
	if !st.resumes() {
		return nil
	}
	if !st.e.replays.take(ctx) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return ErrReplaysBusy
	}
	st.replaying = true
	st.ends.add(st.endReplay)
	return nil
}

// resumes says whether the stream replays anything when it starts.
func (st *Stream) resumes() bool {
	if !st.personal {
		return st.since != zeroID
	}
	for _, f := range st.feeds {
		if f.since != zeroID {
			return true
		}
	}
	return false
}

func (st *Stream) endReplay() {
	if st.replaying {
		st.replaying = false
		st.e.replays.give()
	}
}

// Subscribe subscribes the stream to conversation's events: a
// conversation's stream in place of the one it had, a personal stream in
// addition to the others (in place of its own subscription to the same
// conversation). Subscribe before the conversation is read: a leave or a
// delete that the read does not see yet is published later, and ends
// this subscription. Subscribing takes the conversation's bound at the
// same instant: this instance's messages below it are in Cassandra, the
// ones above will arrive live.
func (st *Stream) Subscribe(conversation string) {
	f := &feed{conv: conversation, since: st.since}
	if st.personal {
		st.Unsubscribe(conversation)
		f.since = zeroID
	} else if len(st.feeds) > 0 {
		st.feeds[0].sub.Close()
		st.feeds = st.feeds[:0]
	}
	f.sub, f.bound = st.e.seq.subscribe(conversation, func() *Subscription { return st.e.hub.Subscribe(conversation, st.who) })
	st.feeds = append(st.feeds, f)
}

// Unsubscribe stops carrying conversation.
func (st *Stream) Unsubscribe(conversation string) {
	for i, f := range st.feeds {
		if f.conv == conversation {
			f.sub.Close()
			st.feeds = append(st.feeds[:i], st.feeds[i+1:]...)
			return
		}
	}
}

// Resume says where conversation is (it is read, and the reader is a
// member), and, for a personal stream, after which id its client's copy
// ends (zero: replay nothing); ctx renders its replayed messages.
func (st *Stream) Resume(conversation string, in chat.Place, since chat.ID, ctx context.Context) {
	for _, f := range st.feeds {
		if f.conv == conversation {
			f.in, f.ctx = in, ctx
			if st.personal {
				f.since = since
			}
		}
	}
}

// ChangesFrom says that the reader of conversation joined it at joined:
// a replay sends none of its changes (edits, deletes, reactions) made
// before then, which were not the reader's to see when they were made.
func (st *Stream) ChangesFrom(conversation string, joined time.Time) {
	for _, f := range st.feeds {
		if f.conv == conversation {
			f.changesFrom = chat.MinIDAt(joined)
		}
	}
}

// Watch has the stream tell its page when another of the person's
// conversations gets a message (see ConversationWatch).
func (st *Stream) Watch(w *ConversationWatch) {
	st.watch = w
	st.ends.add(w.Close)
}

// OnEnd has f run when the stream ends (with what Close gives back).
func (st *Stream) OnEnd(f func()) { st.ends.add(f) }

// Close gives back what the stream holds, unless Run handed it over.
func (st *Stream) Close() { st.ends.run() }

// Run writes the stream to w: its head, the replay of what it missed in
// each conversation it carries, then its live events, until it ends.
// committed is called once the connection is taken over from net/http
// (for the request's logs). Run returns once the connection is handed to
// the stream's own goroutine, or the stream has ended.
func (st *Stream) Run(ctx context.Context, w http.ResponseWriter, committed func()) {
	e := st.e
	e.open.Inc()
	st.ends.add(e.open.Dec)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	out, err := e.startStream(w, committed)
	if err != nil {
		return // the client is gone
	}
	out.wide = st.personal
	st.ends.add(func() { e.endStream(out) })
	for _, n := range st.notices {
		out.Queue(n)
	}
	if out.Send() != nil {
		return
	}

	// sent holds the replayed ids that may come live as well: other
	// instances' only, since this instance's below the bound were
	// published before the subscription.
	var sent map[chat.ID]struct{}
	for _, f := range st.feeds {
		if f.since == zeroID || f.in == nil {
			continue
		}
		if sent == nil {
			sent = map[chat.ID]struct{}{}
		}
		rctx := f.ctx
		if rctx == nil {
			rctx = ctx
		}
		if !e.replay(rctx, out, f.in, e.replayStart(f.since), f.since, f.changesFrom, f.bound, sent) {
			return
		}
	}
	st.endReplay()
	if len(sent) == 0 {
		sent = nil
	}

	if out.Net == nil {
		e.liveEvents(out, st, sent, ctx.Done())
		return
	}
	// The connection is hijacked: the stream needs nothing more of the
	// request, so the handler returns and a goroutine of the stream's own
	// carries on, while the hub's fan-out writes the room's events (see
	// liveDirect). Its stack starts small, and the request's objects (and
	// net/http's and echo's for it) go, which roughly halves what an idle
	// stream holds.
	live := st.ends.handOver()
	go func() {
		defer live.run()
		e.liveDirect(out, st, sent)
	}()
}

// label names the stream in logs: its conversation, or "personal".
func (st *Stream) label() string {
	if st.personal || len(st.feeds) == 0 {
		return "personal"
	}
	return st.feeds[0].conv
}

// attach sends the events of every subscription of st to sink.
func (st *Stream) attach(sink Sink) {
	for _, f := range st.feeds {
		f.sub.Attach(sink)
	}
}

// unreadFrame is the frame that tells st's page that a conversation got
// a message from someone else, or nil when the page needs none (its own
// conversation: the message comes on the stream). A personal stream's
// says who wrote what (see notice), for the page's notifications.
func (st *Stream) unreadFrame(buf *bytes.Buffer, u Unread) []byte {
	buf.Reset()
	if st.personal {
		sse.AppendWide(buf, zeroID, KindUnread, u.Conversation, notice(u.Message, st.who.Login))
		return buf.Bytes()
	}
	if u.Conversation == st.label() {
		return nil
	}
	sse.AppendEvent(buf, zeroID, KindUnread, []byte(u.Conversation))
	return buf.Bytes()
}

// noticeLength is how much of a message a notification shows.
const noticeLength = 100

// notice is what a notification of m shows login, as JSON: the message's
// id, its author, the first noticeLength characters of its text (plain
// text: a notification shows no HTML, and the page escapes nothing), and
// whether it mentions login.
func notice(m *chat.Message, login string) []byte {
	if m == nil {
		return nil
	}
	text := NoticeText(m)
	name := m.Author.Name()
	if name == "" {
		name = m.Author.Login
	}
	b, _ := json.Marshal(struct {
		ID      string `json:"id"`
		Author  string `json:"author"`
		Name    string `json:"name"`
		Text    string `json:"text"`
		Mention bool   `json:"mention"`
	}{m.ID.String(), m.Author.Login, name, text,
		len(chat.Mentioned(m.Content, map[string]chat.UserRef{login: {Login: login}})) > 0})
	return b
}

// NoticeText is what a notification of m says: the first noticeLength
// characters of its text, as plain text, or the file it sends.
func NoticeText(m *chat.Message) string {
	text := m.Content
	if m.Attachment != nil && strings.TrimSpace(text) == "" {
		text = "sent a file: " + m.Attachment.Name
	}
	if r := []rune(text); len(r) > noticeLength {
		text = string(r[:noticeLength]) + "…"
	}
	return text
}

// endFrame is the frame that tells st's page its stream ends: it left
// the room, logged out or lost the session. Its data is where the page
// goes (an account closed: the login page, with why), or nothing (it
// reconnects, and is refused what it may no longer see).
func (st *Stream) endFrame(buf *bytes.Buffer) []byte {
	buf.Reset()
	var goTo []byte
	if p := st.who.signals.goTo.Load(); p != nil {
		goTo = []byte(*p)
	}
	if st.personal {
		sse.AppendWide(buf, zeroID, KindStreamEnd, "", goTo)
	} else {
		sse.AppendEvent(buf, zeroID, KindStreamEnd, goTo)
	}
	return buf.Bytes()
}

// queueSink takes a stream's events for its own goroutine, when the
// fan-out cannot write them itself (the connection is not hijacked).
type queueSink chan *Event

func (q queueSink) Deliver(ev *Event) bool {
	select {
	case q <- ev:
		return true
	default:
		return false // the stream fell behind: it is dropped
	}
}

// liveEvents writes the stream's events, and the watch's news of the
// person's other conversations, to out until the stream ends; done is
// the request's end while the handler still runs (nil once the connection
// is hijacked: out.gone tells of a hang-up then).
func (s *Engine) liveEvents(out *eventWriter, st *Stream, sent map[chat.ID]struct{}, done <-chan struct{}) {
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	events := make(queueSink, subscriberQueue*max(1, len(st.feeds)))
	st.attach(events)
	sig := st.who.signals
	var watchC <-chan Unread
	if st.watch != nil {
		watchC = st.watch.C
	}
	for {
		var err error
		select {
		case <-done:
			return
		case <-s.closing:
			return
		case <-st.replaced:
			return
		case <-sig.ended.c:
			// Left the room, logged out, or lost the session: the page is
			// told why its stream ends, then it ends.
			out.Queue(st.endFrame(&out.Buf))
			_ = out.Send()
			return
		case <-sig.dropped.c:
			s.log.Info("sse: dropped a subscriber that fell behind", "room", st.label())
			return
		case <-out.gone:
			return // the client closed the connection
		case <-tick.C:
			err = out.Comment("keep-alive")
		case other := <-watchC:
			if frame := st.unreadFrame(&out.Buf, other); frame != nil {
				out.Queue(frame)
				err = out.Send()
			}
		case ev := <-events:
			// Whatever else is queued goes out in the same write.
			var end bool
			for {
				if _, dup := sent[idOf(ev)]; !dup {
					out.Queue(out.frameOf(ev))
				}
				if end = ev.Kind == KindRoomDeleted && !st.personal; end {
					break
				}
				select {
				case ev = <-events:
					continue
				default:
				}
				break
			}
			err = out.Send()
			if end {
				return
			}
		}
		if err != nil {
			return // the client is gone or stalled past writeTimeout
		}
	}
}

// streamEnds is what a stream undoes when it ends, last first.
type streamEnds []func()

func (e *streamEnds) add(f func()) { *e = append(*e, f) }

// run undoes them all, once.
func (e *streamEnds) run() {
	for i := len(*e) - 1; i >= 0; i-- {
		(*e)[i]()
	}
	*e = nil
}

// handOver moves them to the stream's own goroutine.
func (e *streamEnds) handOver() streamEnds {
	h := *e
	*e = nil
	return h
}

// idOf is the id of a message event or a change, or the zero id.
func idOf(ev *Event) chat.ID {
	if ev.Kind == KindMessage || IsChange(ev.Kind) {
		return ev.ID
	}
	return zeroID
}

// replayStart is where a resume from since starts: since itself. The
// client's id is a cursor (see live/watermark): the page has every message
// below it, from this instance and from every other, so the replay needs
// nothing before it, however late messages travel.
func (s *Engine) replayStart(since chat.ID) chat.ID { return since }

// replay writes the messages of in after since that lie below bound (see
// sequencer), page by page: a page is read, written, and only then is the
// next one read. It returns false when the stream must end: the client is
// gone or too slow, the database failed (the client reconnects with the
// same id and tries again), or more was missed than a replay gives, and
// the client was told to reload the page.
//
// It reads from start (see replayStart); only what comes after since
// counts towards the replay's limit.
func (s *Engine) replay(ctx context.Context, out *eventWriter, in chat.Place, start, since, changesFrom chat.ID, bound int64, sent map[chat.ID]struct{}) bool {
	deadline := time.Now().Add(replayTimeout)
	// The changes (edits, deletes, reactions) go between the messages, in
	// id order. They are read once, first: every change below mark0 is
	// stored by then, so a change's cursor, as a message's, is at most
	// mark0 (changes are published in order with messages, sequencer.go).
	mark0 := min(s.mark(), bound)
	changes, ok := s.replayChanges(ctx, out, in, later(start, changesFrom))
	if !ok {
		return false
	}
	after, replayed := start, 0
	for first := true; ; first = false {
		// Every message below mark is stored and published, so the page
		// read next holds all of them past the last one written: a replayed
		// message's id is a cursor no higher than mark (live/watermark).
		// This instance's messages at or above bound are not written here
		// but come live after the replay: the cursor stays below them too.
		mark := min(s.mark(), bound)
		page, more, err := s.src.MessagesAfter(ctx, in, after, replayPage)
		if err == nil && first && more {
			// More than a page missed: find out, by ids alone, whether it
			// is too much to replay before sending any of it.
			var n int
			if n, err = s.src.CountMessagesAfter(ctx, in, since, replayLimit+1); err == nil && n > replayLimit {
				_ = out.event(in.Conversation().ID, KindReload, []byte("too many messages missed"))
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
			after = m.ID
			if !s.BeforeBound(m.ID, bound) {
				continue // published after we subscribed: it comes live
			}
			if !s.sendChanges(ctx, out, in, &changes, m.ID, min(mark, mark0), bound, sent) {
				return false
			}
			html, err := s.render(ctx, m)
			if err != nil {
				return false
			}
			if out.message(in.Conversation().ID, watermark.Cursor(m.ID, mark), html) != nil {
				return false
			}
			if !s.src.MadeHere(m.ID) {
				sent[m.ID] = struct{}{}
			}
			if m.ID.After(since) {
				replayed++
			}
		}
		switch {
		case !more:
			return s.sendChanges(ctx, out, in, &changes, zeroID, mark0, bound, sent)
		case replayed > replayLimit:
			// The room gains messages faster than this client reads them.
			_ = out.event(in.Conversation().ID, KindReload, []byte("too many messages missed"))
			return false
		case time.Now().After(deadline):
			return false
		}
	}
}

// later is the later of two ids.
func later(a, b chat.ID) chat.ID {
	if b.After(a) {
		return b
	}
	return a
}

// replayChanges reads the changes (edits, deletes, reactions) that a
// replay from start sends between its messages, in id order. It returns
// false when the stream must end: the database failed, or more changes
// were missed than a replay gives, or older ones than the change log
// keeps, and the client was told to reload the page.
func (s *Engine) replayChanges(ctx context.Context, out *eventWriter, in chat.Place, start chat.ID) ([]chat.Change, bool) {
	if s.renderChange == nil {
		return nil, true
	}
	changes, more, err := s.src.ChangesAfter(ctx, in, start, replayLimit)
	if errors.Is(err, chat.ErrNotFound) || (err == nil && more) {
		_ = out.event(in.Conversation().ID, KindReload, []byte("too many changes missed"))
		return nil, false
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("sse: replay changes", "room", in.Conversation().ID, "err", err)
		}
		return nil, false
	}
	return changes, true
}

// sendChanges writes the changes at the head of *changes whose ids come
// before upTo (all of them when upTo is zero), taking them off the list,
// each with its cursor at most mark. Like a message, a change of this
// instance above bound comes live.
func (s *Engine) sendChanges(ctx context.Context, out *eventWriter, in chat.Place, changes *[]chat.Change,
	upTo chat.ID, mark, bound int64, sent map[chat.ID]struct{}) bool {
	for len(*changes) > 0 {
		ch := (*changes)[0]
		if upTo != zeroID && !upTo.After(ch.ID) {
			return true
		}
		*changes = (*changes)[1:]
		if !s.BeforeBound(ch.ID, bound) {
			continue
		}
		html, err := s.renderChange(ctx, in, ch)
		if err != nil {
			s.log.Error("sse: render a replayed change", "room", in.Conversation().ID, "err", err)
			return false
		}
		if out.replayed(in.Conversation().ID, watermark.Cursor(ch.ID, mark), ch.Kind, html) != nil {
			return false
		}
		if !s.src.MadeHere(ch.ID) {
			sent[ch.ID] = struct{}{}
		}
	}
	return true
}

// eventWriter writes one stream's server-sent events. Once the stream's
// response head is out it owns the connection (hijacked from net/http,
// see startStream): net/http's background reader is stopped, the stream's
// goroutine writes the replay, and then the hub's fan-out writes the
// room's events while that goroutine writes the rest (see direct.go); the
// events shared by the room's streams go out as they are, and each
// waiting write is bounded by writeTimeout. Where hijacking is not
// possible (HTTP/2, a test recorder) it writes through the ResponseWriter
// and flushes, from the stream's goroutine.
type eventWriter struct {
	*sse.Conn
	// gone is closed when the client closed the hijacked connection (see
	// hangups); nil otherwise, as net/http then cancels the request.
	gone chan struct{}
	// wrote is set by each write of the fan-out and cleared by hangups,
	// which does not look at a stream written since its last look: the
	// next write to a closed connection fails, and ends the stream.
	wrote atomic.Bool
	// hangup is the connection's place in the engine's hangups.
	hangup *hangup.Entry
	// wide is set for a personal stream: its events say their
	// conversation (see encodeWide).
	wide bool
	// direct is the stream's writer for the fan-out once the connection
	// is hijacked (see newDirectWriter), kept in the same allocation as
	// wrote, which each of its writes sets.
	direct directWriter
}

// startStream writes the stream's response head (status 200 and the
// headers set so far) and returns the writer of its events; endStream
// ends it.
func (s *Engine) startStream(res http.ResponseWriter, committed func()) (*eventWriter, error) {
	c, err := sse.Start(res, committed, writeTimeout)
	if err != nil {
		return nil, err
	}
	e := &eventWriter{Conn: c}
	if c.Net != nil {
		e.gone = make(chan struct{})
		e.hangup = s.hangups.Add(c, e.gone, &e.wrote)
	}
	return e, nil
}

// endStream closes a hijacked connection (net/http closes the others).
func (s *Engine) endStream(e *eventWriter) {
	if e.Net != nil {
		s.hangups.Remove(e.hangup)
		e.Close()
	}
}

// message writes one replayed message of conv, encoded for this stream
// alone.
func (e *eventWriter) message(conv string, id chat.ID, html []byte) error {
	return e.replayed(conv, id, KindMessage, html)
}

// replayed writes one replayed event of conv and kind with its id (a
// cursor), encoded for this stream alone.
func (e *eventWriter) replayed(conv string, id chat.ID, kind string, html []byte) error {
	e.Buf.Reset()
	if e.wide {
		sse.AppendWide(&e.Buf, id, kind, conv, html)
	} else {
		sse.AppendEvent(&e.Buf, id, wireName(kind), html)
	}
	e.Queue(e.Buf.Bytes())
	return e.Send()
}

// frameOf is the shared frame of ev that this stream writes.
func (e *eventWriter) frameOf(ev *Event) []byte { return ev.frameFor(e.wide) }

// frameFor is the shared frame of ev for a personal stream (wide) or a
// conversation's.
func (ev *Event) frameFor(wide bool) []byte {
	if wide {
		return ev.wideFrame()
	}
	return ev.frame
}

// event writes one event of conv without an id (the client keeps the
// last one).
func (e *eventWriter) event(conv, name string, data []byte) error {
	if strings.ContainsAny(name, "\r\n") {
		return sse.ErrFieldBreak
	}
	e.Buf.Reset()
	if e.wide {
		sse.AppendWide(&e.Buf, zeroID, name, conv, data)
	} else {
		sse.AppendEvent(&e.Buf, zeroID, name, data)
	}
	e.Queue(e.Buf.Bytes())
	return e.Send()
}

// encodeEvent is ev as the bytes every stream of its conversation
// writes: a message, and a change (edit, delete, reaction; a named event
// that static/app.js applies), carries its cursor (see live/watermark:
// where a resume starts, its own id unless an instance may still deliver
// a lower one); the other events carry none, so the client keeps the id
// it has.
func encodeEvent(ev Event) []byte {
	var buf bytes.Buffer
	sse.AppendEvent(&buf, frameID(&ev), wireName(ev.Kind), payloadOf(&ev))
	return buf.Bytes()
}

// frameID is the SSE id an event carries: a message's cursor (its own id
// when it has none), or none.
func frameID(ev *Event) chat.ID {
	id := idOf(ev)
	if id != zeroID && ev.cursor != zeroID {
		id = ev.cursor
	}
	return id
}

// encodeWide is ev as a personal stream writes it: the same id as
// encodeEvent's, the kind always named, and the conversation as the
// first line of the data, before the same payload. A personal stream
// carries several conversations; its client keeps a resume point per
// conversation from these.
func encodeWide(ev *Event) []byte {
	var buf bytes.Buffer
	sse.AppendWide(&buf, frameID(ev), ev.Kind, ev.Conversation, payloadOf(ev))
	return buf.Bytes()
}

// payloadOf is what an event's data says: its HTML, or, for a deleted
// room, where its pages go.
func payloadOf(ev *Event) []byte {
	if ev.Kind == KindRoomDeleted {
		return []byte("/?notice=room-deleted")
	}
	return ev.HTML
}

// wireName is the SSE event name of kind: the kind itself, but for the
// kinds whose data the page swaps in as it is, which go as SSE's default
// event (no event: line; a browser names it "message").
func wireName(kind string) string {
	switch kind {
	case KindMessage, KindParticipants:
		return ""
	}
	return kind
}

func renderString(ctx context.Context, comp interface {
	Render(context.Context, io.Writer) error
}) ([]byte, error) {
	var buf bytes.Buffer
	err := comp.Render(ctx, &buf)
	return buf.Bytes(), err
}

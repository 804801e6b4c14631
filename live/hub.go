// This file owns room events and their in-process fan-out: publish never
// blocks, each subscriber has a bounded queue, and a subscriber that falls
// behind is dropped (its page reconnects and catches up from Cassandra).
// The fan-out itself runs in a few goroutines of the hub's own (see
// fanShard), which hand each event to its subscribers' queues or, for a
// live stream, write it to the connection at once (see Sink).
// It also ends subscriptions on request (a user left a room, logged out, or
// lost a session), so that a stream stops delivering on every instance.

package live

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/fence"
	"github.com/killrchat/killrchat/live/watermark"
)

// Kinds of events. The SSE event name of an event is its kind; message
// and participants go as SSE's default event ("message"), whose data is
// HTML the page swaps in. Typing and presence are kinds to come: each is
// a constant here and a case in encode, and the writers, the fan-out and
// the hubs carry them as they are.
const (
	KindMessage      = "message"
	KindParticipants = "participants"
	KindUnread       = "unread"
	KindRoomDeleted  = "room-deleted"
	KindStreamEnd    = "stream-end"
	KindReload       = "reload"
	// KindEdit, KindDelete and KindReaction are changes of a message: each
	// has an id of its own (a timeuuid, ordered with the messages, see
	// IsChange), and its HTML says what the page changes.
	KindEdit     = "edit"
	KindDelete   = "delete"
	KindReaction = "reaction"
	// KindTyping says someone is typing in the conversation: never
	// stored, never replayed, gone from the page after a few seconds.
	KindTyping = "typing"
)

// IsChange says whether kind is a change of a message (an edit, a delete
// or a reaction): such an event carries its own id, as a message does, so
// a resumed stream replays it (see Source.ChangesAfter).
func IsChange(kind string) bool {
	return kind == KindEdit || kind == KindDelete || kind == KindReaction
}

// Event is something open pages of a conversation must learn: a kind, the
// conversation, and the id of the message it concerns (zero if none).
type Event struct {
	Kind         string        `json:"kind"`
	Conversation string        `json:"conversation"`
	ID           chat.ID       `json:"id"`
	Message      *chat.Message `json:"message,omitempty"`
	// Target is the message a change (see IsChange) is about; ID is the
	// change's own id.
	Target       chat.ID        `json:"target,omitempty"`
	Participants []chat.UserRef `json:"participants,omitempty"`
	// Total is how many participants the room has; Participants may be
	// only the first of them.
	Total int `json:"total,omitempty"`
	// Banner, on a participants event, is the room's new banner ("" for
	// none); nil when the banner did not change.
	Banner *string `json:"banner,omitempty"`
	// Watermark is, for a message its instance's sequencer published, that
	// instance's watermark as of its publication (see live/watermark).
	Watermark int64 `json:"watermark,omitempty"`
	// HTML is the event rendered once, by the instance that published it,
	// so that a thousand streams do not render it a thousand times.
	HTML []byte `json:"html,omitempty"`
	// frame is the event as server-sent event bytes, encoded once by the
	// hub of each instance (see LocalHub.Publish): every stream of the
	// room writes these very bytes.
	frame []byte
	// cursor is the SSE id the frame carries (see cursor).
	cursor chat.ID
	// wide is the event as a personal stream writes it (see encodeWide):
	// made once, by the first personal stream that writes it, and shared
	// by the rest. Nil for an event no hub published (a test's).
	wide *wideFrame
}

// wideFrame is an event's second encoding, made at most once.
type wideFrame struct {
	once  sync.Once
	frame []byte
}

// wideFrame is ev as every personal stream writes it, encoded the first
// time one asks.
func (ev *Event) wideFrame() []byte {
	if ev.wide == nil {
		return encodeWide(ev)
	}
	ev.wide.once.Do(func() { ev.wide.frame = encodeWide(ev) })
	return ev.wide.frame
}

// Hub carries room events to every subscriber, on this instance and, for a
// broker-backed hub, on the others.
type Hub interface {
	// Publish hands ev to the subscribers of its room without waiting for
	// any of them.
	Publish(ctx context.Context, ev Event) error
	// Subscribe starts receiving the events of room, for who.
	Subscribe(room string, who Subscriber) *Subscription
	// WatchConversations starts hearing which of conversations, and of
	// login's DMs, get a new message (see ConversationWatch).
	WatchConversations(conversations []string, login string) *ConversationWatch
	// EndStreams ends, on every instance, the subscriptions that end
	// matches; an error means other instances may not have heard of it.
	EndStreams(ctx context.Context, end StreamEnd) error
	// Watch calls onEnd for every StreamEnd this instance learns of (its
	// own and the other instances'), and onReset whenever events may have
	// been missed (a broker reconnect): caches keyed by what they name
	// are invalidated through it.
	Watch(onEnd func(StreamEnd), onReset func())
	// Invalidate tells every instance's caches that rows changed (see
	// Invalidation); an error means other instances may not have heard of
	// it, and their entries live out their TTL.
	Invalidate(ctx context.Context, inv Invalidation) error
	// WatchInvalidations calls f for every Invalidation, this instance's
	// own and the others'. Resets come through Watch.
	WatchInvalidations(f func(Invalidation))
	// WatchEvents calls heard with every event this instance's fan-out
	// gets (its own and the other instances'), in the fan-out's order,
	// under its lock (heard must not block); and gap(true) when events of
	// other instances may be missed from now on (the broker is lost),
	// gap(false) when they are heard again (it is back: what was missed
	// meanwhile is not).
	WatchEvents(heard func(Event), gap func(missing bool))
	// Enter lets a post of room in until its Pass leaves (see live/fence).
	Enter(room string) *fence.Pass
	// Fence drops what inv names from every instance's caches and returns
	// once no post of room that checked it before can still be writing
	// (see live/fence); an error means an instance did not answer in time,
	// and its posts check with a read.
	Fence(ctx context.Context, room string, inv Invalidation) error
	Close() error
}

// Subscriber is who a subscription serves, so that it can be ended when
// that person leaves the room or loses the session.
type Subscriber struct {
	Login string
	// Session stands for the login session that opened the stream. It is
	// a digest of the session id (see web/session's Digest), never the id
	// itself, which must not travel to the broker.
	Session string
	// signals, when set, are the stream's own: every subscription of a
	// stream that carries several conversations shares them, so that the
	// stream waits on two channels whatever their number.
	signals *streamSignals
}

// streamSignals are what ends a stream from the hub's side: one of its
// subscriptions fell behind (dropped), or an EndStreams matched one
// (ended).
type streamSignals struct {
	dropped, ended signal
	// goTo is where the stream's pages go once it ended, when the end
	// said (StreamEnd.Reason); the first end that says wins.
	goTo atomic.Pointer[string]
}

func newStreamSignals() *streamSignals {
	return &streamSignals{dropped: signal{c: make(chan struct{})}, ended: signal{c: make(chan struct{})}}
}

// signal is a channel closed once.
type signal struct {
	c    chan struct{}
	once sync.Once
}

func (s *signal) fire() { s.once.Do(func() { close(s.c) }) }

// StreamEnd says which open streams must end: those of Login, in Room
// ("" = every room), opened by one of Sessions (nil = by any session of
// Login), except those opened by the session Except ("" = none). Sessions
// and Except are session ids for Server.endStreams, digests in the hub.
type StreamEnd struct {
	Login string `json:"login"`
	Room  string `json:"room,omitempty"`
	// No omitempty: an empty list (no session) must not become nil (every
	// session) on the way through the broker.
	Sessions []string `json:"sessions"`
	Except   string   `json:"except,omitempty"`
	// Reason, when set, sends the pages of the ended streams to the login
	// page with the notice of that name (an account deactivated or
	// deleted, its sessions ended), instead of letting them reconnect.
	Reason string `json:"reason,omitempty"`
}

// GoTo is where the pages of the streams e ends go: the login page with
// e's notice, or "" (they reconnect). A reason that is not a plain word
// goes nowhere.
func (e StreamEnd) GoTo() string {
	if e.Reason == "" || len(e.Reason) > 40 {
		return ""
	}
	for _, r := range e.Reason {
		if (r < 'a' || r > 'z') && r != '-' {
			return ""
		}
	}
	return "/login?notice=" + e.Reason
}

func (e StreamEnd) matches(room string, who Subscriber) bool {
	if who.Login != e.Login || (e.Room != "" && e.Room != room) || (e.Except != "" && who.Session == e.Except) {
		return false
	}
	if e.Sessions == nil {
		return true
	}
	for _, s := range e.Sessions {
		if s == who.Session {
			return true
		}
	}
	return false
}

// subscriberQueue is how many events a subscriber may have waiting before
// it counts as stalled and is dropped. The queue holds pointers to events
// shared by every subscriber, so it costs 8 bytes a slot per connection.
const subscriberQueue = 64

// Subscription is one subscriber's queue of events.
type Subscription struct {
	// C delivers the events, in publication order. The events are shared
	// by every subscriber of the room: read them, never change them.
	C <-chan *Event
	// Dropped is closed when the subscriber fell behind and was dropped.
	Dropped <-chan struct{}
	// Ended is closed when an EndStreams matched the subscriber: it must
	// stop delivering at once.
	Ended <-chan struct{}

	c       chan *Event
	signals *streamSignals
	hub     *LocalHub
	shard   *fanShard
	room    string
	who     Subscriber
	// mu guards sink against the fan-out.
	mu   sync.Mutex
	sink Sink
	// stopped is set once the subscription is dropped or ended: the
	// fan-out delivers nothing to it after, so that a stream never gets
	// an event past a gap (a client would resume after it).
	stopped atomic.Bool
}

// A Sink takes a subscription's events in place of its channel: a live
// stream that owns its connection writes each event from the fan-out's
// goroutine, at once, with no goroutine of its own to wake per event.
type Sink interface {
	// Deliver takes the next event, in publication order, without
	// blocking; false means the subscriber cannot keep up, and it is
	// dropped as one whose queue is full.
	Deliver(ev *Event) bool
}

// Attach sends the subscription's events to sink from now on: first those
// queued in C, then every later one. Nothing more arrives on C.
func (s *Subscription) Attach(sink Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		select {
		case ev := <-s.c:
			if !sink.Deliver(ev) {
				s.drop()
				return
			}
		default:
			s.sink = sink
			return
		}
	}
}

// deliver hands ev to the subscriber, dropping it when it cannot keep up.
func (s *Subscription) deliver(ev *Event) {
	if s.stopped.Load() {
		return
	}
	s.mu.Lock()
	sink := s.sink
	if sink == nil {
		select {
		case s.c <- ev:
		default:
			s.drop()
		}
	}
	s.mu.Unlock()
	if sink != nil && !sink.Deliver(ev) {
		s.drop()
	}
}

// Close ends the subscription.
func (s *Subscription) Close() { s.hub.remove(s) }

func (s *Subscription) drop() {
	s.stopped.Store(true)
	s.signals.dropped.fire()
}

func (s *Subscription) end(goTo string) {
	s.stopped.Store(true)
	if goTo != "" {
		s.signals.goTo.CompareAndSwap(nil, &goTo)
	}
	s.signals.ended.fire()
}

// LocalHub is the in-process hub: the default when no broker is set up,
// and the local fan-out of the broker-backed hub.
type LocalHub struct {
	mu    sync.RWMutex
	rooms map[string]map[*Subscription]struct{}
	// shards run the fan-out; each subscription belongs to one of them.
	shards []*fanShard
	next   atomic.Uint32
	stop   chan struct{}
	closed sync.Once
	// watches are the conversation watches by key (see ConversationWatch).
	watches map[string]map[*ConversationWatch]struct{}
	// watchers are told of every StreamEnd and reset (see Hub.Watch).
	watchers []watcher
	// invalidated are told of every Invalidation (see Hub.Invalidate).
	invalidated []func(Invalidation)
	// heard and gaps are told of every event and gap (see
	// Hub.WatchEvents).
	heard []func(Event)
	gaps  []func(missing bool)
	// marks are the other instances' watermarks, and local this one's
	// (see live/watermark); nil local: an in-process hub with no engine.
	marks *watermark.Marks
	local func() int64
	// gate holds the posts in flight, per room (see live/fence).
	gate fence.Gate
}

type watcher struct {
	onEnd   func(StreamEnd)
	onReset func()
}

// Watch registers callbacks (see Hub.Watch); the in-process hub misses no
// event, so it never resets.
func (h *LocalHub) Watch(onEnd func(StreamEnd), onReset func()) {
	h.mu.Lock()
	h.watchers = append(h.watchers, watcher{onEnd, onReset})
	h.mu.Unlock()
}

// WatchEvents registers heard and gap (see Hub.WatchEvents); the
// in-process hub misses no event, so only a transport calls gap.
func (h *LocalHub) WatchEvents(heard func(Event), gap func(missing bool)) {
	h.mu.Lock()
	h.heard, h.gaps = append(h.heard, heard), append(h.gaps, gap)
	h.mu.Unlock()
}

// gap tells every event watcher whether events may be missed.
func (h *LocalHub) gap(missing bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, f := range h.gaps {
		f(missing)
	}
}

// resetWatchers tells every watcher that events may have been missed.
func (h *LocalHub) resetWatchers() {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, w := range h.watchers {
		w.onReset()
	}
}

// NewLocalHub returns an empty in-process hub, with a fan-out goroutine
// per processor (Close stops them).
func NewLocalHub() *LocalHub {
	h := &LocalHub{rooms: map[string]map[*Subscription]struct{}{}, watches: map[string]map[*ConversationWatch]struct{}{},
		stop: make(chan struct{}), marks: watermark.New()}
	for range runtime.GOMAXPROCS(0) {
		sh := &fanShard{wake: make(chan struct{}, 1), rooms: map[string]*shardRoom{}}
		h.shards = append(h.shards, sh)
		go sh.run(h.stop)
	}
	return h
}

// Publish hands ev, an event of this instance, to the fan-out, which
// delivers it to the conversation's subscribers; a full queue drops its
// subscriber instead of waiting. The event is encoded as stream bytes once
// here, and all the subscribers share it.
func (h *LocalHub) Publish(_ context.Context, ev Event) error {
	if ev.ID == zeroID && ev.Message != nil {
		ev.ID = ev.Message.ID
	}
	if ev.ID != zeroID {
		mark := int64(watermark.None)
		if ev.Watermark > 0 {
			mark = ev.Watermark
		}
		ev.cursor = watermark.Cursor(ev.ID, min(mark, h.marks.Min()))
	}
	h.fanOut(ev)
	return nil
}

// publishRemote hands ev, an event of instance from, to the fan-out, then
// takes note of the watermark it came with.
func (h *LocalHub) publishRemote(ev Event, from string) {
	if ev.ID != zeroID {
		mark := int64(watermark.None)
		if h.local != nil {
			mark = h.local()
		}
		ev.cursor = watermark.Cursor(ev.ID, min(mark, h.marks.Min()))
	}
	h.fanOut(ev)
	if ev.Watermark > 0 {
		h.heardMark(from, ev.Watermark)
	}
}

// heardMark takes note of instance from's watermark.
func (h *LocalHub) heardMark(from string, mark int64) {
	if h.marks.Heard(from, mark) {
		// It was forgotten, and may bring messages below cursors given
		// meanwhile: open pages resume, and get them (live/watermark).
		h.dropAll()
	}
}

// SetWatermark gives the hub this instance's watermark (the sequencer's);
// window is how far behind the clock cursors stay while other instances
// are not heard yet (see live/watermark), unused in process.
func (h *LocalHub) SetWatermark(local func() int64, _ time.Duration) { h.local = local }

// RemoteMark is the lowest watermark heard from other instances, or the
// highest timestamp when there are none.
func (h *LocalHub) RemoteMark() int64 { return h.marks.Min() }

// dropAll drops every subscription here: each page resumes by replay.
func (h *LocalHub) dropAll() {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, subs := range h.rooms {
		for sub := range subs {
			sub.drop()
		}
	}
}

// fanOut queues ev on every shard. It holds the hub's lock alone, so
// every shard, and so every subscriber, gets events in one order: the
// order their cursors were made in (an event of another instance whose
// cursor counts a message of this one must reach every stream after it).
func (h *LocalHub) fanOut(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.heard {
		f(ev)
	}
	if subs := h.rooms[ev.Conversation]; len(subs) > 0 {
		shared := &ev
		shared.frame = encodeEvent(ev)
		shared.wide = &wideFrame{}
		for _, sh := range h.shards {
			sh.publish(shared)
		}
	}
	if ev.Kind == KindMessage && ev.Message != nil && !ev.Message.System {
		for w := range h.watches[ev.Conversation] {
			w.notify(ev.Conversation, ev.Message)
		}
		if address, ok := strings.CutPrefix(ev.Conversation, "dm:"); ok {
			// A DM's members are in its id: each member's own key hears
			// it, so a DM that starts after the watch did is heard too.
			for _, login := range strings.Split(address, "+") {
				for w := range h.watches[userKey(login)] {
					w.notify(ev.Conversation, ev.Message)
				}
			}
		}
	}
}

// fanShard is one goroutine of the fan-out and the subscriptions it
// serves. Publishing and subscribing queue their work here, under the
// hub's lock, so each shard sees them in the hub's order: an event reaches
// every subscription made before it was published, in publication order.
// With one shard per processor a room of 10,000 live streams is written
// by every core at once, and a message costs its streams one write each,
// not a goroutine woken per stream.
type fanShard struct {
	mu      sync.Mutex
	ops     []shardOp
	events  int // events among ops
	wake    chan struct{}
	overrun map[string]bool // rooms whose events were not queued (see publish)
	// rooms are the shard's subscriptions; only its goroutine uses them.
	rooms map[string]*shardRoom
}

// shardRoom is a room's subscriptions on one shard, in the order they
// were made. The fan-out writes to them in that order, which is about the
// order their connections were accepted, and so the order the kernel
// allocated their sockets in: a message then walks the kernel's memory
// (and the readers' sockets) mostly forwards. Measured with floor's
// writer: the same writes in a random order (a map's) cost 9.2–9.5 µs a
// write against 6.6–7.2 µs in order.
type shardRoom struct {
	subs  []*Subscription // nil where one was removed, until compacted
	at    map[*Subscription]int
	holes int
}

func (r *shardRoom) add(sub *Subscription) {
	if _, ok := r.at[sub]; ok {
		return
	}
	r.at[sub] = len(r.subs)
	r.subs = append(r.subs, sub)
}

// remove takes sub out, keeping the others' order; the holes close once
// they are a quarter of the list.
func (r *shardRoom) remove(sub *Subscription) {
	i, ok := r.at[sub]
	if !ok {
		return
	}
	delete(r.at, sub)
	r.subs[i] = nil
	r.holes++
	if r.holes*4 < len(r.subs) {
		return
	}
	kept := r.subs[:0]
	for _, s := range r.subs {
		if s != nil {
			r.at[s] = len(kept)
			kept = append(kept, s)
		}
	}
	clear(r.subs[len(kept):])
	r.subs, r.holes = kept, 0
}

// shardOp is one of: an event to deliver, a subscription to add or
// remove, or a room whose subscribers to drop.
type shardOp struct {
	ev          *Event
	add, remove *Subscription
	drop        string
}

// shardBacklog is how many events a shard may have queued before a room's
// events are no longer queued and its subscribers on the shard are dropped
// instead (they reconnect and catch up from Cassandra): the fan-out is
// then more than a thousand events behind, and waiting would only grow it.
const shardBacklog = 1024

func (sh *fanShard) push(op shardOp) {
	sh.mu.Lock()
	sh.ops = append(sh.ops, op)
	sh.mu.Unlock()
	sh.signal()
}

// signal wakes the shard's goroutine, unless a wake-up is already due.
func (sh *fanShard) signal() {
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

func (sh *fanShard) publish(ev *Event) {
	sh.mu.Lock()
	if sh.events >= shardBacklog {
		if !sh.overrun[ev.Conversation] {
			if sh.overrun == nil {
				sh.overrun = map[string]bool{}
			}
			sh.overrun[ev.Conversation] = true
			sh.ops = append(sh.ops, shardOp{drop: ev.Conversation})
		}
	} else {
		sh.events++
		sh.ops = append(sh.ops, shardOp{ev: ev})
	}
	sh.mu.Unlock()
	sh.signal()
}

func (sh *fanShard) run(stop <-chan struct{}) {
	var batch []shardOp
	for {
		select {
		case <-stop:
			return
		case <-sh.wake:
		}
		for {
			sh.mu.Lock()
			batch, sh.ops = sh.ops, batch[:0]
			sh.events, sh.overrun = 0, nil
			sh.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			for _, op := range batch {
				sh.apply(op)
			}
			clear(batch)
		}
	}
}

func (sh *fanShard) apply(op shardOp) {
	switch {
	case op.ev != nil:
		if r := sh.rooms[op.ev.Conversation]; r != nil {
			for _, sub := range r.subs {
				if sub != nil {
					sub.deliver(op.ev)
				}
			}
		}
	case op.add != nil:
		r := sh.rooms[op.add.room]
		if r == nil {
			r = &shardRoom{at: map[*Subscription]int{}}
			sh.rooms[op.add.room] = r
		}
		r.add(op.add)
	case op.remove != nil:
		if r := sh.rooms[op.remove.room]; r != nil {
			r.remove(op.remove)
			if len(r.at) == 0 {
				delete(sh.rooms, op.remove.room)
			}
		}
	case op.drop != "":
		if r := sh.rooms[op.drop]; r != nil {
			for _, sub := range r.subs {
				if sub != nil {
					sub.drop()
				}
			}
		}
	}
}

// A ConversationWatch tells a person's live stream that one of their conversations,
// other than the one the stream shows, got a message from someone else,
// so the page refreshes its sidebar and title. It is the light side of
// the page's one stream (browsers allow 6 connections per host: one
// stream per tab, not two).
//
// Why this shape: a message is published once, to every instance (the
// NATS hub sends all events on one subject; nothing is sent per member),
// and each instance looks up, in memory, the watches of that
// conversation. A room is watched by its members' open pages; a DM by its
// members' own keys ("user:<login>", read from the DM's id), so a DM that
// starts after the page opened is heard too, and a 1,000-person room
// costs one broker message and a map lookup, not 1,000 messages. A watch
// carries no content, only the conversation id: the page reads its counts
// with GET /sidebar.
//
// A watch never drops its stream: when its queue is full the new id is
// dropped instead; the refresh that the queued ids cause reads the state
// after the dropped message was stored (messages are published once
// stored), so nothing is missed.
type ConversationWatch struct {
	// C delivers the conversations that got a message, with the message.
	C     <-chan Unread
	c     chan Unread
	login string
	keys  []string
	hub   *LocalHub
}

// watchQueue is how many conversation ids a watch holds for its stream.
const watchQueue = 16

func userKey(login string) string { return "user:" + login }

// PersonalKey is the conversation key of login's own events: each of
// their personal streams subscribes to it. An event of kind KindUnread
// published there, with no message, tells their pages that what they
// have read changed (they read a conversation in another tab).
func PersonalKey(login string) string { return userKey(login) }

// Unread is a message in a watched conversation: what the page's sidebar
// refreshes for, and what a notification shows. Message is shared by every
// watch: it is never changed.
type Unread struct {
	Conversation string
	Message      *chat.Message
}

func (w *ConversationWatch) notify(conversation string, m *chat.Message) {
	if m.Author.Login == w.login {
		return // one's own message leaves nothing unread
	}
	select {
	case w.c <- Unread{Conversation: conversation, Message: m}:
	default:
	}
}

// Close stops the watch.
func (w *ConversationWatch) Close() { w.hub.unwatch(w) }

// WatchConversations starts hearing the messages of conversations (rooms;
// DMs are heard through login's own key, whatever the list says).
func (h *LocalHub) WatchConversations(conversations []string, login string) *ConversationWatch {
	w := &ConversationWatch{c: make(chan Unread, watchQueue), login: login, hub: h}
	w.C = w.c
	w.keys = append(w.keys, userKey(login))
	for _, c := range conversations {
		if !strings.HasPrefix(c, "dm:") {
			w.keys = append(w.keys, c)
		}
	}
	h.mu.Lock()
	for _, k := range w.keys {
		if h.watches[k] == nil {
			h.watches[k] = map[*ConversationWatch]struct{}{}
		}
		h.watches[k][w] = struct{}{}
	}
	h.mu.Unlock()
	return w
}

func (h *LocalHub) unwatch(w *ConversationWatch) {
	h.mu.Lock()
	for _, k := range w.keys {
		delete(h.watches[k], w)
		if len(h.watches[k]) == 0 {
			delete(h.watches, k)
		}
	}
	h.mu.Unlock()
}

// Subscribe starts receiving the events of room, for who.
func (h *LocalHub) Subscribe(room string, who Subscriber) *Subscription {
	signals := who.signals
	if signals == nil {
		signals = newStreamSignals()
	}
	sub := &Subscription{c: make(chan *Event, subscriberQueue), signals: signals, hub: h, room: room, who: who}
	sub.C, sub.Dropped, sub.Ended = sub.c, signals.dropped.c, signals.ended.c
	sub.shard = h.shards[int(h.next.Add(1))%len(h.shards)]
	h.mu.Lock()
	if h.rooms[room] == nil {
		h.rooms[room] = map[*Subscription]struct{}{}
	}
	h.rooms[room][sub] = struct{}{}
	sub.shard.push(shardOp{add: sub})
	h.mu.Unlock()
	return sub
}

func (h *LocalHub) remove(sub *Subscription) {
	h.mu.Lock()
	if _, ok := h.rooms[sub.room][sub]; ok {
		delete(h.rooms[sub.room], sub)
		if len(h.rooms[sub.room]) == 0 {
			delete(h.rooms, sub.room)
		}
		sub.shard.push(shardOp{remove: sub})
	}
	h.mu.Unlock()
}

// EndStreams ends this instance's subscriptions that end matches. A
// logout walks every subscription: rare enough not to need an index.
func (h *LocalHub) EndStreams(_ context.Context, end StreamEnd) error {
	if end.Login != "" && end.Room != "" {
		h.forgetRoom(end.Login, end.Room)
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, w := range h.watchers {
		w.onEnd(end)
	}
	goTo := end.GoTo()
	for room, subs := range h.rooms {
		if end.Room != "" && room != end.Room {
			continue
		}
		for sub := range subs {
			if end.matches(room, sub.who) {
				sub.end(goTo)
			}
		}
	}
	return nil
}

// forgetRoom stops login's watches hearing room: they left it or were
// removed, and a watch's news of a message carries what it says (the
// notice of a notification, issue 19).
func (h *LocalHub) forgetRoom(login, room string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watches[room] {
		if w.login == login {
			delete(h.watches[room], w)
			w.keys = slices.DeleteFunc(w.keys, func(k string) bool { return k == room })
		}
	}
	if len(h.watches[room]) == 0 {
		delete(h.watches, room)
	}
}

// Close stops the fan-out's goroutines.
func (h *LocalHub) Close() error {
	h.closed.Do(func() { close(h.stop) })
	return nil
}

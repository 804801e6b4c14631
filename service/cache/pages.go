// This file owns the newest page of each busy conversation, kept in
// memory: the messages a conversation's page opens on (with their
// reactions) read once and served to every reader until something
// changes them, and concurrent reads of one conversation's page made one.

package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// Defaults of Pages (see NewPages).
const (
	// DefaultPagesBytes bounds the pages kept, by an estimate of their
	// messages' size.
	DefaultPagesBytes = 16 << 20
	// DefaultPageTTL is how long a page is served at most without a
	// read: the bound on what a write that no event announced (an
	// instance that died between its write and its publication, an
	// import) leaves unseen.
	DefaultPageTTL = 2 * time.Second
)

// EventHub is where Pages hears every event and every gap (live.Hub).
type EventHub interface {
	WatchEvents(heard func(live.Event), gap func(missing bool))
}

// ReadPage reads up to n messages of a conversation before an id (the
// newest for the zero id), oldest first, with their reactions, and
// whether older ones exist (store.MessagesBefore).
type ReadPage func(ctx context.Context, in chat.Place, before chat.ID, n int) ([]chat.Message, bool, error)

// Pages keeps the newest page of conversations in memory. A page is
// exact: every instance hears each message, edit, delete and reaction of
// every conversation through the hub (the fan-out's own events), and
// any event of a conversation drops its page; a read that began before
// an event is served to the readers that asked before it and is not
// kept. While the broker is away (events of other instances may be
// missed) nothing is kept or served from memory, and everything is
// dropped when it is back; a restarted instance starts empty. A page is
// also read again after its TTL; a TTL of 0 or less keeps nothing and
// shares no read.
type Pages struct {
	read     ReadPage
	n        int
	ttl      time.Duration
	maxBytes int
	now      func() time.Time

	mu      sync.Mutex
	slots   map[string]*pageSlot
	bytes   int
	missing bool

	hits, reads atomic.Int64
}

// pageSlot is one conversation's page and the read under way.
type pageSlot struct {
	// gen counts the events heard of the conversation: a read is kept
	// only if none came while it ran.
	gen    uint64
	since  time.Time
	page   *pageRead
	flight *pageRead
}

// pageRead is a read of a page: under way until done is closed.
type pageRead struct {
	gen   uint64
	at    time.Time
	done  chan struct{}
	msgs  []chat.Message
	more  bool
	err   error
	bytes int
}

// NewPages keeps the newest n messages of conversations, read with read,
// at most maxBytes of them (an estimate), each for at most ttl, coherent
// through hub.
func NewPages(read ReadPage, hub EventHub, n int, ttl time.Duration, maxBytes int) *Pages {
	p := &Pages{read: read, n: n, ttl: ttl, maxBytes: maxBytes, now: time.Now, slots: map[string]*pageSlot{}}
	hub.WatchEvents(p.heard, p.gap)
	return p
}

// heard drops the page of the event's conversation; typing says nothing
// of its messages.
func (p *Pages) heard(ev live.Event) {
	if ev.Kind == live.KindTyping {
		return
	}
	p.mu.Lock()
	if sl := p.slots[ev.Conversation]; sl != nil {
		sl.gen++
		p.drop(sl)
	}
	p.mu.Unlock()
}

// gap drops every page; while events may be missed, none is kept.
func (p *Pages) gap(missing bool) {
	p.mu.Lock()
	p.missing = missing
	p.slots, p.bytes = map[string]*pageSlot{}, 0
	p.mu.Unlock()
}

func (p *Pages) drop(sl *pageSlot) {
	if sl.page != nil {
		p.bytes -= sl.page.bytes
		sl.page = nil
	}
}

// Stats are the pages served from memory and the reads made so far.
func (p *Pages) Stats() (hits, reads int64) { return p.hits.Load(), p.reads.Load() }

// Latest is the newest page of in (its n messages, oldest first, and
// whether older ones exist), from memory when it is there. The messages
// are shared with other readers: the slice is the caller's, the
// messages' reactions are not to be changed.
func (p *Pages) Latest(ctx context.Context, in chat.Place) ([]chat.Message, bool, error) {
	conv := in.Conversation()
	if p.ttl <= 0 {
		p.reads.Add(1)
		return p.read(ctx, in, chat.ID{}, p.n)
	}
	p.mu.Lock()
	if p.missing {
		p.mu.Unlock()
		p.reads.Add(1)
		return p.read(ctx, in, chat.ID{}, p.n)
	}
	sl := p.slots[conv.ID]
	if sl != nil && !sl.since.Equal(conv.Since) {
		// Another incarnation of the room: start over.
		p.drop(sl)
		delete(p.slots, conv.ID)
		sl = nil
	}
	if sl == nil {
		sl = &pageSlot{since: conv.Since}
		p.slots[conv.ID] = sl
	}
	if pg := sl.page; pg != nil && p.now().Sub(pg.at) < p.ttl {
		p.mu.Unlock()
		p.hits.Add(1)
		return clone(pg.msgs), pg.more, nil
	}
	if f := sl.flight; f != nil && f.gen == sl.gen {
		// A read began since the last event: its answer is as new as
		// one begun now.
		p.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		p.hits.Add(1)
		return clone(f.msgs), f.more, f.err
	}
	f := &pageRead{gen: sl.gen, at: p.now(), done: make(chan struct{})}
	sl.flight = f
	p.mu.Unlock()

	p.reads.Add(1)
	// The readers that wait for this read do not depend on this one's
	// request: a reader gone does not fail the others.
	f.msgs, f.more, f.err = p.read(context.WithoutCancel(ctx), in, chat.ID{}, p.n)
	f.bytes = pageBytes(f.msgs)

	p.mu.Lock()
	if sl.flight == f {
		sl.flight = nil
	}
	if f.err == nil && !p.missing && sl.gen == f.gen && p.slots[conv.ID] == sl {
		p.drop(sl)
		sl.page = f
		p.bytes += f.bytes
		p.evict(sl)
	}
	p.mu.Unlock()
	close(f.done)
	return clone(f.msgs), f.more, f.err
}

// Behind drops the kept page of in if its newest message is older than
// head, the conversation's head as read by the caller (the sidebar reads
// it anyway), and says so: a message some writer stored without an event
// (an import, a test writing to the store) is then read at once, not
// after the TTL. A page read since is left to that read.
func (p *Pages) Behind(in chat.Place, head chat.ID) bool {
	conv := in.Conversation()
	p.mu.Lock()
	defer p.mu.Unlock()
	sl := p.slots[conv.ID]
	if sl == nil || sl.page == nil {
		return false
	}
	var newest chat.ID
	if msgs := sl.page.msgs; len(msgs) > 0 {
		newest = msgs[len(msgs)-1].ID
	}
	// A page read well after the head's message was made holds it,
	// unless it was deleted since: not behind.
	if !head.After(newest) || sl.page.at.After(head.Time().Add(headSlack)) {
		return false
	}
	sl.gen++
	p.drop(sl)
	return true
}

// headSlack is how long after its id's time a message is surely stored
// (see Behind).
const headSlack = time.Second

// evict drops pages other than keep's until the pages fit.
func (p *Pages) evict(keep *pageSlot) {
	for id, sl := range p.slots {
		if p.bytes <= p.maxBytes {
			return
		}
		if sl != keep && sl.flight == nil {
			p.drop(sl)
			delete(p.slots, id)
		}
	}
}

func clone(msgs []chat.Message) []chat.Message {
	return append([]chat.Message(nil), msgs...)
}

// pageBytes estimates what msgs hold in memory.
func pageBytes(msgs []chat.Message) int {
	n := 0
	for _, m := range msgs {
		n += 512 + len(m.Content) + 96*len(m.Reactions)
	}
	return n
}

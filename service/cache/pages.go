// This file owns the newest page of each busy conversation, kept in
// memory: the messages a conversation's page opens on (with their
// reactions) read once and served to every reader while the
// conversation's version (change count and marks) says nothing changed,
// and concurrent reads
// of one conversation's page made one.

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
	// read of its messages: the bound on what a change that was not
	// counted leaves unseen (a count that failed after its change was
	// stored, a writer that does not count: see ReadVersion).
	DefaultPageTTL = 30 * time.Second
)

// EventHub is where Pages hears every event and every gap (live.Hub).
type EventHub interface {
	WatchEvents(heard func(live.Event), gap func(missing bool))
}

// ReadPage reads up to n messages of a conversation before an id (the
// newest for the zero id), oldest first, with their reactions, and
// whether older ones exist (store.MessagesBefore).
type ReadPage func(ctx context.Context, in chat.Place, before chat.ID, n int) ([]chat.Message, bool, error)

// ReadVersion reads the version of a conversation's newest page
// (store.Version): a post moves the marks of its day, every other change
// of its messages, edits, deletes and reactions moves the change count
// after it is stored, so two reads of the version that are equal have no
// change of the page stored between them.
type ReadVersion func(ctx context.Context, conversation string) (chat.PageVersion, error)

// Pages keeps the newest page of conversations in memory. A page is
// kept with the version read just before its messages were, and served
// to a reader only if the version that reader reads is the same: a change
// acknowledged before a reader asks was counted or marked before it asks,
// so it is on every page that reader is served, whichever instance made
// it, whether the broker was there or not, and whenever this instance
// started. What the hub says (a conversation's event, a gap) only frees
// memory early: a page it drops would not be served anyway. A page is
// also read again after its TTL; a TTL of 0 or less keeps nothing and
// shares no read (two statements: count and page, one after the other,
// become one, the page).
type Pages struct {
	read     ReadPage
	version  ReadVersion
	n        int
	ttl      time.Duration
	maxBytes int
	now      func() time.Time

	mu     sync.Mutex
	slots  map[string]*pageSlot
	bytes  int
	counts map[string]*countSlot

	hits, reads, countReads atomic.Int64
}

// countSlot is a conversation's reads of its version: the one under
// way, and the next one, which the readers who asked meanwhile wait for.
type countSlot struct {
	running bool
	next    *countRead
}

// countRead is one read of a version: done is closed when n or err
// is there.
type countRead struct {
	done chan struct{}
	n    chat.PageVersion
	err  error
}

// pageSlot is one conversation's page and the read under way.
type pageSlot struct {
	since  time.Time
	page   *pageRead
	flight *pageRead
}

// pageRead is a read of a page, made after its version was read as
// version: under way until done is closed.
type pageRead struct {
	// key names this read's messages for as long as the process runs:
	// what is made of them (a rendered list) may be kept under it.
	key     uint64
	version chat.PageVersion
	at      time.Time
	done    chan struct{}
	msgs    []chat.Message
	more    bool
	err     error
	bytes   int
}

// NewPages keeps the newest n messages of conversations, read with read,
// each served while version reads the count it was read with, at most
// maxBytes of them (an estimate), each for at most ttl; hub's events
// free pages early.
func NewPages(read ReadPage, version ReadVersion, hub EventHub, n int, ttl time.Duration, maxBytes int) *Pages {
	p := &Pages{read: read, version: version, n: n, ttl: ttl, maxBytes: maxBytes, now: time.Now,
		slots: map[string]*pageSlot{}, counts: map[string]*countSlot{}}
	hub.WatchEvents(p.heard, p.gap)
	return p
}

// heard drops the page of the event's conversation: its version has
// moved (the event is published after the change is counted or marked). Typing says
// nothing of its messages.
func (p *Pages) heard(ev live.Event) {
	if ev.Kind == live.KindTyping {
		return
	}
	p.mu.Lock()
	if sl := p.slots[ev.Conversation]; sl != nil {
		p.drop(sl)
	}
	p.mu.Unlock()
}

// gap drops every page: kept pages stay exact without the hub (each is
// checked against its version), but while events are missed the hub does
// not free them, and it costs one read a conversation.
func (p *Pages) gap(bool) {
	p.mu.Lock()
	for _, sl := range p.slots {
		p.drop(sl)
	}
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

// CountReads is how many versions were read so far.
func (p *Pages) CountReads() int64 { return p.countReads.Load() }

// count reads conversation's version for a reader who asks now. The
// readers of a busy conversation share reads: one who asks while a read
// is under way waits for the next one, sent when that read is answered,
// with every reader who asked meanwhile. A read sent after the reader
// asked holds every change acknowledged before it asked; the read under
// way was sent before, so it is not shared with them. At most one read of
// a conversation's count is under way, however many readers wait: one
// round trip more for a reader who comes in the middle of one, one read
// a round trip at most for the conversation.
func (p *Pages) count(ctx context.Context, conversation string) (chat.PageVersion, error) {
	p.mu.Lock()
	cs := p.counts[conversation]
	if cs == nil {
		cs = &countSlot{}
		p.counts[conversation] = cs
	}
	if cs.running {
		r := cs.next
		if r == nil {
			r = &countRead{done: make(chan struct{})}
			cs.next = r
		}
		p.mu.Unlock()
		select {
		case <-r.done:
			return r.n, r.err
		case <-ctx.Done():
			return chat.PageVersion{}, ctx.Err()
		}
	}
	cs.running = true
	p.mu.Unlock()
	r := &countRead{done: make(chan struct{})}
	p.readCount(ctx, conversation, cs, r)
	return r.n, r.err
}

// readCount makes read r of conversation's version, then starts the next
// one if readers wait for it.
func (p *Pages) readCount(ctx context.Context, conversation string, cs *countSlot, r *countRead) {
	p.countReads.Add(1)
	// Shared with the readers waiting: one gone does not fail the others.
	r.n, r.err = p.version(context.WithoutCancel(ctx), conversation)
	close(r.done)
	p.mu.Lock()
	next := cs.next
	cs.next = nil
	if next == nil {
		cs.running = false
		if p.counts[conversation] == cs {
			delete(p.counts, conversation)
		}
	}
	p.mu.Unlock()
	if next != nil {
		go p.readCount(ctx, conversation, cs, next)
	}
}

// pageKeys numbers the reads of pages (see pageRead.key).
var pageKeys atomic.Uint64

// Latest is the newest page of in (its n messages, oldest first, and
// whether older ones exist), from memory when the conversation's change
// version is the one it was read with. It reads the version (two
// statements at once, one row each), and the page only when it moved. The messages are
// shared with other readers: the slice is the caller's, the messages'
// reactions are not to be changed. key names the read the messages come
// from: two answers with the same key hold the same messages (0: a read
// that is not shared, the cache off).
func (p *Pages) Latest(ctx context.Context, in chat.Place) (msgs []chat.Message, more bool, key uint64, err error) {
	conv := in.Conversation()
	if p.ttl <= 0 {
		p.reads.Add(1)
		msgs, more, err = p.read(ctx, in, chat.ID{}, p.n)
		return msgs, more, 0, err
	}
	// The version first, the page after: the page holds every change
	// the version holds.
	version, err := p.count(ctx, conv.ID)
	if err != nil {
		return nil, false, 0, err
	}
	p.mu.Lock()
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
	if pg := sl.page; pg != nil && pg.version == version && p.now().Sub(pg.at) < p.ttl {
		p.mu.Unlock()
		p.hits.Add(1)
		return clone(pg.msgs), pg.more, pg.key, nil
	}
	if f := sl.flight; f != nil && f.version == version {
		// A read made after the same count: no change between the two
		// counts, so its page is as new as one read now.
		p.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, false, 0, ctx.Err()
		}
		p.hits.Add(1)
		return clone(f.msgs), f.more, f.key, f.err
	}
	f := &pageRead{key: pageKeys.Add(1), version: version, at: p.now(), done: make(chan struct{})}
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
	// Counts only grow: a page read after a lower count than the kept
	// one's (a reader that read the count before a change) is not kept.
	if f.err == nil && p.slots[conv.ID] == sl && (sl.page == nil || sl.page.version.Changes <= f.version.Changes) {
		p.drop(sl)
		sl.page = f
		p.bytes += f.bytes
		p.evict(sl)
	}
	p.mu.Unlock()
	close(f.done)
	return clone(f.msgs), f.more, f.key, f.err
}

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

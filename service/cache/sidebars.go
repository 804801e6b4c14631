// This file owns each person's sidebar state, kept in memory (issue 38):
// their markers, mention markers and levels, their DM list, the heads of
// their conversations and what is unread, read once and served to every
// page they open while nothing it was read from has changed.

package cache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// Defaults of Sidebars (see NewSidebars).
const (
	// DefaultSidebars bounds the people whose sidebar state is kept: an
	// entry holds a few maps of their conversations (a few KB for a
	// person in 20 rooms and DMs).
	DefaultSidebars = 10_000
	// sidebarSlots is how many epochs the conversations and people are
	// hashed into: two that share a slot only cost each other a read.
	sidebarSlots = 1 << 14
)

// SidebarStorage are the reads a sidebar is made of (store.Store).
type SidebarStorage interface {
	// PersonalState is login's markers, mention markers and levels, and
	// their DM list with each DM's last message, newest first.
	PersonalState(ctx context.Context, login string) (chat.Markers, []chat.DMEntry, error)
	// Heads are the newest message ids of those conversations that have
	// one.
	Heads(ctx context.Context, conversations []string) (map[string]chat.ID, error)
	// CountUnread derives login's unread counts and mentions from their
	// markers and the heads (see store.CountUnread).
	CountUnread(ctx context.Context, login string, markers chat.Markers, heads map[string]chat.ID, conversations map[string]time.Time, open string) (chat.UnreadState, error)
}

// SidebarState is what a person's sidebar shows of Cassandra: shared by
// the pages served from memory, so never to be changed by a caller.
type SidebarState struct {
	// Markers are the person's markers, mention markers and levels.
	Markers chat.Markers
	// DMs is their DM list, newest first.
	DMs []chat.DMEntry
	// Unread and Mentions are the unread counts and unread mentions by
	// conversation; the open conversation shows 0 and no mention.
	Unread, Mentions map[string]int
	// Read says Markers and DMs were read, and the heads; Counted that
	// Unread and Mentions were. DMErr is why the DM list was not read.
	Read, Counted bool
	DMErr         error
}

// Sidebars keeps each person's SidebarState, the cached state of their
// sidebar (DESIGN.md rule 12). What is kept is the state as storage says
// it, not the sidebar as shown: the rooms and their titles come from the
// person's row (the row cache), and one entry serves every page whatever
// conversation it shows (the page's own one shows 0 unread).
//
// An entry is served only while nothing it depends on has changed: it
// holds the sum of the epochs, taken before its reads, of the slots its
// person and each of their rooms hash to, and a change bumps the slots
// of what it names, so any change since makes the sum differ (epochs only
// grow). The hub brings every instance's changes: a conversation's event
// (a message posted, edited or deleted, which moves a head, an unread
// count or a mention marker) bumps its slot, and a DM's also the slots of
// its members, whose ids it names (so a new DM is heard by its members'
// entries); a person's own events (a marker or level moved, see
// service/read.go) and an invalidation of their row bump theirs; an
// invalidation of a room bumps its slot. A broker gap drops every entry,
// and none is kept while events may be missed. An entry also lives at
// most the TTL: what changes with no event (an operator's CQL, an
// import) is seen after it at the latest.
type Sidebars struct {
	src SidebarStorage
	ttl time.Duration
	max int
	now func() time.Time

	slots [sidebarSlots]atomic.Uint64
	// gen moves on every gap; missing is whether events may be missed now.
	gen     atomic.Uint64
	missing atomic.Bool

	mu      sync.Mutex
	entries map[string]*sidebarEntry

	hits, reads atomic.Int64
}

// sidebarEntry is one person's state, read after the epochs summed up in
// sum under gen.
type sidebarEntry struct {
	rooms []string
	sum   uint64
	gen   uint64
	at    time.Time
	// skipped is the conversation whose count was left out (the page's
	// own, with something unread): the entry serves only its pages.
	skipped string
	state   SidebarState
}

// SidebarHub is where Sidebars hears every event, invalidation and gap
// (live.Hub).
type SidebarHub interface {
	EventHub
	Watch(onEnd func(live.StreamEnd), onReset func())
	WatchInvalidations(f func(live.Invalidation))
}

// NewSidebars keeps at most max people's sidebar state read from src,
// each for at most ttl (0 or less: none is kept), coherent through hub.
func NewSidebars(src SidebarStorage, hub SidebarHub, ttl time.Duration, max int) *Sidebars {
	sb := &Sidebars{src: src, ttl: ttl, max: max, now: time.Now, entries: map[string]*sidebarEntry{}}
	hub.WatchEvents(sb.heard, sb.gap)
	hub.WatchInvalidations(sb.invalidated)
	hub.Watch(func(live.StreamEnd) {}, func() { sb.gap(false) })
	return sb
}

// Stats are the states served from memory and those read so far.
func (sb *Sidebars) Stats() (hits, reads int64) { return sb.hits.Load(), sb.reads.Load() }

// heard bumps what ev changes (it runs under the hub's lock: no lock
// here). Typing changes nothing stored, and a reaction no head, count or
// mention.
func (sb *Sidebars) heard(ev live.Event) {
	if ev.Kind == live.KindTyping || ev.Kind == live.KindReaction {
		return
	}
	sb.Changed(ev.Conversation)
}

// Changed says conversation changed: a room or a DM (whose members'
// entries it drops), or a person's own key (live.PersonalKey). The use
// cases call it, through the row cache, before they answer, so that a
// person's next page here has their change (read-your-writes), even when
// the hub brings the event later.
func (sb *Sidebars) Changed(conversation string) {
	if login, ok := strings.CutPrefix(conversation, live.PersonalKey("")); ok {
		sb.PersonChanged(login)
		return
	}
	sb.bump(conversation)
	if address, ok := strings.CutPrefix(conversation, chat.DMPrefix); ok {
		for address != "" {
			var login string
			login, address, _ = strings.Cut(address, "+")
			sb.PersonChanged(login)
		}
	}
}

// PersonChanged says something of login's own changed: their markers,
// levels, DM list or list of rooms.
func (sb *Sidebars) PersonChanged(login string) { sb.slots[personSlot(login)].Add(1) }

func (sb *Sidebars) bump(conversation string) { sb.slots[conversationSlot(conversation)].Add(1) }

// invalidated bumps the people and rooms inv names: a person's list of
// rooms, a room's title or its end.
func (sb *Sidebars) invalidated(inv live.Invalidation) {
	for _, login := range inv.Users {
		sb.PersonChanged(login)
	}
	for _, login := range inv.Accounts {
		sb.PersonChanged(login)
	}
	for _, room := range inv.Rooms {
		sb.bump(room)
	}
}

// gap drops every entry: events may have been missed (missing), or were
// (the broker is back). While they may be, nothing read is kept.
func (sb *Sidebars) gap(missing bool) {
	sb.missing.Store(missing)
	sb.gen.Add(1)
	sb.mu.Lock()
	clear(sb.entries)
	sb.mu.Unlock()
}

// sum is the sum of the epochs of login's slot and their rooms'.
func (sb *Sidebars) sum(login string, rooms []string) uint64 {
	n := sb.slots[personSlot(login)].Load()
	for _, r := range rooms {
		n += sb.slots[conversationSlot(r)].Load()
	}
	return n
}

// State is login's sidebar state, for a page that shows open ("" for
// none): from memory if nothing it depends on changed since it was read,
// else read (PersonalState and Heads at once, then CountUnread) and kept.
// rooms are login's rooms (their row's list). A failed read is returned
// with what was read before it, and not kept.
func (sb *Sidebars) State(ctx context.Context, login string, rooms []string, open string) (SidebarState, error) {
	return sb.state(ctx, login, rooms, open, false)
}

// Fresh is State read from storage whatever is kept, and kept: for a
// sidebar asked for because something changed, which this instance may
// not have heard of yet (it was told by another one).
func (sb *Sidebars) Fresh(ctx context.Context, login string, rooms []string, open string) (SidebarState, error) {
	return sb.state(ctx, login, rooms, open, true)
}

func (sb *Sidebars) state(ctx context.Context, login string, rooms []string, open string, fresh bool) (SidebarState, error) {
	if sb.ttl > 0 && !fresh {
		sb.mu.Lock()
		e := sb.entries[login]
		sb.mu.Unlock()
		if e != nil && e.gen == sb.gen.Load() && sb.now().Sub(e.at) < sb.ttl && (e.skipped == "" || e.skipped == open) &&
			slices.Equal(e.rooms, rooms) && e.sum == sb.sum(login, rooms) {
			sb.hits.Add(1)
			return e.state.opened(open), nil
		}
	}
	// The epochs before the reads: a change during them moves one, and
	// what was read is not kept.
	gen, sum, at := sb.gen.Load(), sb.sum(login, rooms), sb.now()
	sb.reads.Add(1)
	st, skipped, err := sb.read(ctx, login, rooms, open)
	if err != nil || sb.ttl <= 0 || sb.missing.Load() {
		return st, err
	}
	sb.mu.Lock()
	if gen == sb.gen.Load() && sum == sb.sum(login, rooms) {
		if _, ok := sb.entries[login]; !ok && len(sb.entries) >= sb.max {
			for other := range sb.entries { // any one: map order is random
				delete(sb.entries, other)
				break
			}
		}
		sb.entries[login] = &sidebarEntry{rooms: slices.Clone(rooms), sum: sum, gen: gen, at: at, skipped: skipped, state: st}
	}
	sb.mu.Unlock()
	return st.opened(open), nil
}

// read reads login's state: their own partition and their rooms' heads
// at once, then the counts of what is unread, except open's. skipped is
// open if it was left out with something to count.
func (sb *Sidebars) read(ctx context.Context, login string, rooms []string, open string) (st SidebarState, skipped string, err error) {
	var (
		heads      map[string]chat.ID
		derr, herr error
		wg         sync.WaitGroup
	)
	wg.Add(1)
	go func() { defer wg.Done(); heads, herr = sb.src.Heads(ctx, rooms) }()
	st.Markers, st.DMs, derr = sb.src.PersonalState(ctx, login)
	wg.Wait()
	st.DMErr = derr
	if err := errors.Join(derr, herr); err != nil {
		return st, "", err
	}
	st.Read = true
	if heads == nil {
		heads = map[string]chat.ID{}
	}
	convs := make(map[string]time.Time, len(rooms)+len(st.DMs))
	for _, r := range rooms {
		convs[r] = time.Time{} // a room's start is not known: its marker bounds the count
	}
	for _, e := range st.DMs {
		id := e.DM.Conversation().ID
		convs[id] = time.Time{}
		heads[id] = e.LastID // a DM's head is its entry's last message
	}
	if len(convs) == 0 {
		st.Counted = true
		return st, "", nil
	}
	if open != "" {
		if _, ok := convs[open]; ok && (st.Markers.UnreadMention(open) || unreadHead(heads, st.Markers, open)) {
			skipped = open
		}
	}
	us, err := sb.src.CountUnread(ctx, login, st.Markers, heads, convs, skipped)
	if err != nil {
		return st, "", err
	}
	st.Unread, st.Mentions, st.Counted = us.Unread, us.Mentions, true
	return st, skipped, nil
}

// unreadHead says whether conversation's head is past the marker (a
// count would read it).
func unreadHead(heads map[string]chat.ID, m chat.Markers, conversation string) bool {
	head, ok := heads[conversation]
	marker := m.Read[conversation]
	return ok && (marker == chat.ID{} || head.After(marker))
}

// opened is st for a page of open: open shows nothing unread. The maps
// are copied when they change, so st stays as kept.
func (st SidebarState) opened(open string) SidebarState {
	if open == "" {
		return st
	}
	if st.Unread[open] != 0 {
		st.Unread = copyWith(st.Unread, open)
	}
	if _, ok := st.Mentions[open]; ok {
		st.Mentions = copyWith(st.Mentions, open)
		delete(st.Mentions, open)
	}
	return st
}

// copyWith is a copy of m with key at 0.
func copyWith(m map[string]int, key string) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	out[key] = 0
	return out
}

// personSlot and conversationSlot hash a person and a conversation to
// their epochs (FNV-1a, a person's with a different seed byte).
func personSlot(login string) uint32 { return slotOf('u', login) }

func conversationSlot(conversation string) uint32 { return slotOf('c', conversation) }

func slotOf(kind byte, key string) uint32 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	h = (h ^ uint64(kind)) * prime
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * prime
	}
	return uint32(h % sidebarSlots)
}

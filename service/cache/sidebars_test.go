package cache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/service/cache"
)

// fakeSidebar is one person's rows as a store would return them,
// counting its reads of the person's partition; a read may be held until
// released. A conversation is unread (1) when its head is past the
// marker.
type fakeSidebar struct {
	mu      sync.Mutex
	markers chat.Markers
	dms     []chat.DMEntry
	heads   map[string]chat.ID
	reads   atomic.Int64
	// hold, when set, blocks each read of the partition until it is
	// closed; started is told each read that began.
	hold    chan struct{}
	started chan struct{}
}

func newFakeSidebar() *fakeSidebar {
	return &fakeSidebar{markers: chat.Markers{Read: map[string]chat.ID{}, Mention: map[string]chat.ID{}, Level: map[string]chat.Level{}},
		heads: map[string]chat.ID{}}
}

func (f *fakeSidebar) PersonalState(ctx context.Context, login string) (chat.Markers, []chat.DMEntry, error) {
	f.reads.Add(1)
	f.mu.Lock()
	m := chat.Markers{Read: map[string]chat.ID{}, Mention: map[string]chat.ID{}, Level: map[string]chat.Level{}}
	for k, v := range f.markers.Read {
		m.Read[k] = v
	}
	dms := append([]chat.DMEntry(nil), f.dms...)
	hold, started := f.hold, f.started
	f.mu.Unlock()
	if started != nil {
		started <- struct{}{}
	}
	if hold != nil {
		<-hold
	}
	return m, dms, nil
}

func (f *fakeSidebar) Heads(ctx context.Context, conversations []string) (map[string]chat.ID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]chat.ID{}
	for _, c := range conversations {
		if h, ok := f.heads[c]; ok {
			out[c] = h
		}
	}
	return out, nil
}

func (f *fakeSidebar) CountUnread(ctx context.Context, login string, m chat.Markers, heads map[string]chat.ID, convs map[string]time.Time, open string) (chat.UnreadState, error) {
	st := chat.UnreadState{Unread: map[string]int{}, Mentions: map[string]int{}}
	for c := range convs {
		if h, ok := heads[c]; ok && c != open && h.After(m.Read[c]) {
			st.Unread[c] = 1
		} else {
			st.Unread[c] = 0
		}
	}
	return st, nil
}

// post moves conv's head, as a stored message does (before its event).
func (f *fakeSidebar) post(conv string) {
	f.mu.Lock()
	f.heads[conv] = chat.IDAt(time.Now())
	f.mu.Unlock()
}

func (f *fakeSidebar) read(conv string) {
	f.mu.Lock()
	f.markers.Read[conv] = f.heads[conv]
	f.mu.Unlock()
}

func unreadIn(t *testing.T, sb *cache.Sidebars, login string, rooms []string, open, conv string) int {
	t.Helper()
	st, err := sb.State(context.Background(), login, rooms, open)
	if err != nil || !st.Counted {
		t.Fatalf("state: %+v %v", st, err)
	}
	return st.Unread[conv]
}

// TestSidebarsKeptUntilChanged: a person's sidebar state is read once
// and served while nothing it depends on changed; each kind of change it
// depends on (an event of one of their rooms or DMs, of their own key, an
// invalidation of them or of a room of theirs, another list of rooms)
// has it read again, and changes elsewhere (another room, a reaction,
// typing) do not.
func TestSidebarsKeptUntilChanged(t *testing.T) {
	hub := live.NewLocalHub()
	defer hub.Close()
	f := newFakeSidebar()
	sb := cache.NewSidebars(f, hub, time.Hour, 100)
	rooms := []string{"lobby", "kitchen"}
	ctx := context.Background()
	f.post("lobby")
	f.read("lobby")

	reads := f.reads.Load()
	same := func(what string) {
		t.Helper()
		unreadIn(t, sb, "ada", rooms, "", "lobby")
		if got := f.reads.Load(); got != reads {
			t.Errorf("%s: read again", what)
		}
	}
	again := func(what string) {
		t.Helper()
		unreadIn(t, sb, "ada", rooms, "", "lobby")
		if got := f.reads.Load(); got != reads+1 {
			t.Errorf("%s: %d reads, want 1", what, got-reads)
		}
		reads = f.reads.Load()
		same(what + ", then nothing")
	}
	again("first")
	same("nothing changed")

	f.post("lobby")
	_ = hub.Publish(ctx, live.Event{Kind: live.KindMessage, Conversation: "lobby"})
	if got := unreadIn(t, sb, "ada", rooms, "", "lobby"); got != 1 {
		t.Errorf("after a post in lobby: %d unread, want 1", got)
	}
	reads = f.reads.Load()
	same("after the post")

	_ = hub.Publish(ctx, live.Event{Kind: live.KindMessage, Conversation: "elsewhere"})
	same("a post in another room")
	_ = hub.Publish(ctx, live.Event{Kind: live.KindReaction, Conversation: "lobby"})
	_ = hub.Publish(ctx, live.Event{Kind: live.KindTyping, Conversation: "lobby"})
	same("a reaction and typing")
	_ = hub.Publish(ctx, live.Event{Kind: live.KindMessage, Conversation: "dm:bob+carol"})
	same("a DM of others")

	f.read("lobby")
	_ = hub.Publish(ctx, live.Event{Kind: live.KindUnread, Conversation: live.PersonalKey("ada")})
	if got := unreadIn(t, sb, "ada", rooms, "", "lobby"); got != 0 {
		t.Errorf("after ada read lobby: %d unread, want 0", got)
	}
	reads = f.reads.Load()

	// A new DM: its id names its members.
	f.mu.Lock()
	f.dms = append(f.dms, chat.DMEntry{DM: chat.DM{Address: "ada+bob"}, LastID: chat.IDAt(time.Now())})
	f.mu.Unlock()
	_ = hub.Publish(ctx, live.Event{Kind: live.KindMessage, Conversation: "dm:ada+bob"})
	if got := unreadIn(t, sb, "ada", rooms, "", "dm:ada+bob"); got != 1 {
		t.Errorf("a new DM: %d unread, want 1", got)
	}
	reads = f.reads.Load()

	_ = hub.Invalidate(ctx, live.Invalidation{Users: []string{"ada"}})
	again("an invalidation of ada")
	_ = hub.Invalidate(ctx, live.Invalidation{Rooms: []string{"kitchen"}})
	again("an invalidation of kitchen")
	_ = hub.Invalidate(ctx, live.Invalidation{Users: []string{"bob"}, Rooms: []string{"cellar"}})
	same("an invalidation of others")
	rooms = append(rooms, "cellar")
	again("another list of rooms")

	sb.Changed("kitchen")
	again("kitchen changed here")
	sb.PersonChanged("ada")
	again("ada changed here")
}

// TestSidebarsOpenConversation: the page of a conversation shows it with
// nothing unread, from the same state as every other page; a state read
// for a page that left its unread conversation uncounted serves only
// that conversation's pages.
func TestSidebarsOpenConversation(t *testing.T) {
	hub := live.NewLocalHub()
	defer hub.Close()
	f := newFakeSidebar()
	sb := cache.NewSidebars(f, hub, time.Hour, 100)
	rooms := []string{"lobby", "kitchen"}
	f.post("lobby")

	if got := unreadIn(t, sb, "ada", rooms, "", "lobby"); got != 1 {
		t.Fatalf("home: %d unread in lobby, want 1", got)
	}
	if got := unreadIn(t, sb, "ada", rooms, "lobby", "lobby"); got != 0 {
		t.Errorf("lobby's page: %d unread in lobby, want 0", got)
	}
	if got := unreadIn(t, sb, "ada", rooms, "", "lobby"); got != 1 {
		t.Errorf("home again: %d unread in lobby, want 1 (the kept state was changed)", got)
	}
	if n := f.reads.Load(); n != 1 {
		t.Errorf("%d reads, want 1", n)
	}

	sb.PersonChanged("ada")
	unreadIn(t, sb, "ada", rooms, "lobby", "lobby") // lobby not counted
	unreadIn(t, sb, "ada", rooms, "lobby", "lobby")
	if n := f.reads.Load(); n != 2 {
		t.Errorf("lobby's page twice: %d reads, want 2", n)
	}
	if got := unreadIn(t, sb, "ada", rooms, "kitchen", "lobby"); got != 1 {
		t.Errorf("kitchen's page: %d unread in lobby, want 1", got)
	}
	if n := f.reads.Load(); n != 3 {
		t.Errorf("then kitchen's page: %d reads, want 3", n)
	}
}

// TestSidebarsFillRacingAChange: a state whose read raced a change (the
// change's event came while the read was under way) is returned but not
// kept: the next page reads again, and sees the change.
func TestSidebarsFillRacingAChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(hub *live.LocalHub, f *fakeSidebar)
	}{
		{"Room", func(hub *live.LocalHub, f *fakeSidebar) {
			f.post("lobby")
			_ = hub.Publish(context.Background(), live.Event{Kind: live.KindMessage, Conversation: "lobby"})
		}},
		{"DM", func(hub *live.LocalHub, f *fakeSidebar) {
			f.mu.Lock()
			f.dms = append(f.dms, chat.DMEntry{DM: chat.DM{Address: "ada+bob"}, LastID: chat.IDAt(time.Now())})
			f.mu.Unlock()
			_ = hub.Publish(context.Background(), live.Event{Kind: live.KindMessage, Conversation: "dm:ada+bob"})
		}},
		{"Marker", func(hub *live.LocalHub, f *fakeSidebar) {
			f.read("lobby")
			_ = hub.Publish(context.Background(), live.Event{Kind: live.KindUnread, Conversation: live.PersonalKey("ada")})
		}},
		{"Gap", func(hub *live.LocalHub, f *fakeSidebar) {
			hub.BrokerLost()
			hub.BrokerBack()
		}},
		{"Nothing", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub := live.NewLocalHub()
			defer hub.Close()
			f := newFakeSidebar()
			sb := cache.NewSidebars(f, hub, time.Hour, 100)
			rooms := []string{"lobby"}
			f.post("lobby")
			f.hold, f.started = make(chan struct{}), make(chan struct{}, 1)
			done := make(chan struct{})
			go func() {
				defer close(done)
				unreadIn(t, sb, "ada", rooms, "", "lobby")
			}()
			<-f.started // the read is under way: the change comes now
			if tc.change != nil {
				tc.change(hub, f)
			}
			f.mu.Lock()
			hold := f.hold
			f.hold, f.started = nil, nil
			f.mu.Unlock()
			close(hold)
			<-done
			unreadIn(t, sb, "ada", rooms, "", "lobby")
			want := int64(2)
			if tc.change == nil {
				want = 1 // kept
			}
			if n := f.reads.Load(); n != want {
				t.Errorf("%d reads, want %d", n, want)
			}
		})
	}
}

// TestSidebarsBrokerGap: a gap drops every state, none is kept while
// events may be missed, and the broker back drops them again.
func TestSidebarsBrokerGap(t *testing.T) {
	hub := live.NewLocalHub()
	defer hub.Close()
	f := newFakeSidebar()
	sb := cache.NewSidebars(f, hub, time.Hour, 100)
	rooms := []string{"lobby"}
	state := func() { unreadIn(t, sb, "ada", rooms, "", "lobby") }
	state()
	state()
	if n := f.reads.Load(); n != 1 {
		t.Fatalf("before the gap: %d reads, want 1", n)
	}
	hub.BrokerLost()
	state()
	state()
	if n := f.reads.Load(); n != 3 {
		t.Errorf("while the broker is lost: %d reads, want 3 (dropped, and none kept)", n)
	}
	hub.BrokerBack()
	state()
	state()
	if n := f.reads.Load(); n != 4 {
		t.Errorf("the broker back: %d reads, want 4 (kept again)", n)
	}
}

// TestSidebarsBounded: at most max people's states are kept, and a state
// lives at most its TTL.
func TestSidebarsBounded(t *testing.T) {
	hub := live.NewLocalHub()
	defer hub.Close()
	f := newFakeSidebar()
	sb := cache.NewSidebars(f, hub, time.Hour, 3)
	for _, login := range []string{"ada", "bob", "carol", "dan", "eve"} {
		unreadIn(t, sb, login, nil, "", "")
	}
	for _, login := range []string{"ada", "bob", "carol", "dan", "eve"} {
		unreadIn(t, sb, login, nil, "", "")
	}
	if n := f.reads.Load(); n < 7 {
		t.Errorf("5 people twice with room for 3: %d reads, want at least 7", n)
	}

	short := cache.NewSidebars(f, hub, time.Millisecond, 3)
	before := f.reads.Load()
	unreadIn(t, short, "ada", nil, "", "")
	time.Sleep(5 * time.Millisecond)
	unreadIn(t, short, "ada", nil, "", "")
	if n := f.reads.Load() - before; n != 2 {
		t.Errorf("after its TTL: %d reads, want 2", n)
	}
}

// TestSidebarsFresh: Fresh reads whatever is kept, and keeps what it
// read: a change no event announced is seen by it, then by State.
func TestSidebarsFresh(t *testing.T) {
	hub := live.NewLocalHub()
	defer hub.Close()
	f := newFakeSidebar()
	sb := cache.NewSidebars(f, hub, time.Hour, 100)
	rooms := []string{"lobby"}
	if got := unreadIn(t, sb, "ada", rooms, "", "lobby"); got != 0 {
		t.Fatalf("before: %d unread", got)
	}
	f.post("lobby") // no event
	if got := unreadIn(t, sb, "ada", rooms, "", "lobby"); got != 0 {
		t.Fatalf("kept: %d unread, want 0 (the kept state)", got)
	}
	st, err := sb.Fresh(context.Background(), "ada", rooms, "")
	if err != nil || st.Unread["lobby"] != 1 {
		t.Fatalf("fresh: %v %v, want 1 unread in lobby", st.Unread, err)
	}
	if got := unreadIn(t, sb, "ada", rooms, "", "lobby"); got != 1 {
		t.Errorf("after fresh: %d unread, want 1", got)
	}
	if n := f.reads.Load(); n != 2 {
		t.Errorf("%d reads, want 2", n)
	}
}

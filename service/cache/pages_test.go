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

// fakeMessages is a conversation's messages as a store would return
// them, counting its reads; a read may be held until released.
type fakeMessages struct {
	mu    sync.Mutex
	msgs  []chat.Message
	reads atomic.Int64
	// changes is the conversation's change count: add stores, then
	// counts, as the store does.
	changes int64
	// countHold, when set, holds each read of the count (answered as it
	// was when the read was sent) until it is closed; countStarted is
	// told each read that began.
	countHold    chan struct{}
	countStarted chan struct{}
	// hold, when set, blocks each read until it is closed; started is
	// told each read that began.
	hold    chan struct{}
	started chan struct{}
}

func (f *fakeMessages) read(ctx context.Context, in chat.Place, before chat.ID, n int) ([]chat.Message, bool, error) {
	f.reads.Add(1)
	f.mu.Lock()
	out := append([]chat.Message(nil), f.msgs[max(0, len(f.msgs)-n):]...)
	hold, started := f.hold, f.started
	f.mu.Unlock()
	if started != nil {
		started <- struct{}{}
	}
	if hold != nil {
		<-hold
	}
	return out, len(f.msgs) > n, nil
}

func (f *fakeMessages) add(content string) {
	f.mu.Lock()
	f.msgs = append(f.msgs, chat.Message{ID: chat.IDAt(time.Now()), Content: content})
	f.changes++
	f.mu.Unlock()
}

func (f *fakeMessages) version(context.Context, string) (chat.PageVersion, error) {
	f.mu.Lock()
	n, hold, started := f.changes, f.countHold, f.countStarted
	f.mu.Unlock()
	if started != nil {
		started <- struct{}{}
	}
	if hold != nil {
		<-hold
	}
	return chat.PageVersion{Changes: n}, nil
}

// pages keeps f's pages for ttl, at most maxBytes of them.
func (f *fakeMessages) pages(hub cache.EventHub, ttl time.Duration, maxBytes int) *cache.Pages {
	return cache.NewPages(f.read, f.version, hub, 50, ttl, maxBytes)
}

func room(name string) chat.Room {
	return chat.Room{Name: name, CreatedAt: time.Unix(1_700_000_000, 0)}
}

func newest(t *testing.T, p *cache.Pages, r chat.Room) string {
	t.Helper()
	msgs, _, _, err := p.Latest(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 {
		return ""
	}
	return msgs[len(msgs)-1].Content
}

// TestPagesServeWhileTheCountHolds: a page is read once and served
// while the conversation's change count is the one it was read with; a
// change stored and counted with no event heard here (another instance,
// a write behind the app's back) is on the next page; an event frees the
// page; typing and other conversations leave it; a room made again is
// read anew.
func TestPagesServeWhileTheCountHolds(t *testing.T) {
	hub := live.NewLocalHub()
	defer hub.Close()
	f := &fakeMessages{}
	f.add("one")
	p := f.pages(hub, time.Hour, 1<<20)
	r := room("lobby")
	for range 3 {
		if got := newest(t, p, r); got != "one" {
			t.Fatalf("page shows %q", got)
		}
	}
	if n := f.reads.Load(); n != 1 {
		t.Fatalf("3 pages made %d reads, want 1", n)
	}
	f.add("stored and counted, not heard")
	if got := newest(t, p, r); got != "stored and counted, not heard" {
		t.Fatalf("after a change no event announced the page shows %q", got)
	}
	for _, kind := range []string{live.KindMessage, live.KindEdit, live.KindDelete, live.KindReaction, live.KindRoomDeleted} {
		t.Run(kind, func(t *testing.T) {
			f.add("after a " + kind)
			_ = hub.Publish(context.Background(), live.Event{Kind: kind, Conversation: "lobby", ID: chat.IDAt(time.Now())})
			if got := newest(t, p, r); got != "after a "+kind {
				t.Fatalf("after a %s event the page shows %q", kind, got)
			}
		})
	}
	// Typing, and another conversation's events, leave it.
	before := f.reads.Load()
	_ = hub.Publish(context.Background(), live.Event{Kind: live.KindTyping, Conversation: "lobby"})
	_ = hub.Publish(context.Background(), live.Event{Kind: live.KindMessage, Conversation: "other", ID: chat.IDAt(time.Now())})
	newest(t, p, r)
	if f.reads.Load() != before {
		t.Errorf("typing or another room's message made the page read again")
	}
	// Another incarnation of the room (deleted and made again) is read.
	again := r
	again.CreatedAt = r.CreatedAt.Add(time.Minute)
	newest(t, p, again)
	if f.reads.Load() != before+1 {
		t.Errorf("a room made again was served its predecessor's page")
	}
}

// TestPagesReadOnceForConcurrentReaders: readers that ask while a read
// is under way, after the same count, share it; a reader who asks after
// a change that landed during that read is not served it, and the page
// kept is the newer read's.
func TestPagesReadOnceForConcurrentReaders(t *testing.T) {
	hub := live.NewLocalHub()
	defer hub.Close()
	f := &fakeMessages{hold: make(chan struct{}), started: make(chan struct{}, 100)}
	f.add("one")
	p := f.pages(hub, time.Hour, 1<<20)
	r := room("lobby")
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = newest(t, p, r) }()
	}
	<-f.started
	// Let the others join the read under way.
	time.Sleep(50 * time.Millisecond)
	// A message is stored and counted while the read runs; no event.
	f.add("two")
	// A reader who asks now must not be served the read begun before.
	late := make(chan string, 1)
	go func() { late <- newest(t, p, r) }()
	<-f.started
	close(f.hold)
	wg.Wait()
	if n := f.reads.Load(); n != 2 {
		t.Errorf("8 readers then 1 after a change made %d reads, want 2", n)
	}
	for i, g := range got {
		if g != "one" && g != "two" {
			t.Errorf("reader %d got %q", i, g)
		}
	}
	if g := <-late; g != "two" {
		t.Errorf("the reader after the change got %q, want two", g)
	}
	// The older read is not kept over the newer one, whichever ended last.
	f.mu.Lock()
	f.hold, f.started = nil, nil
	f.mu.Unlock()
	if g := newest(t, p, r); g != "two" {
		t.Errorf("then the page shows %q", g)
	}
	if n := f.reads.Load(); n != 2 {
		t.Errorf("the kept page was read again (%d reads)", n)
	}
}

// TestPagesBrokerGap: while the broker is away (events of other
// instances missed) a page is still served only while its count holds,
// so a change made meanwhile is on the next page; the gap frees what was
// kept, and pages are kept again, during and after it.
func TestPagesBrokerGap(t *testing.T) {
	hub := live.NewLocalHub()
	defer hub.Close()
	f := &fakeMessages{}
	f.add("one")
	p := f.pages(hub, time.Hour, 1<<20)
	r := room("lobby")
	newest(t, p, r)
	hub.BrokerLost()
	// Another instance posts; its event never arrives here.
	f.add("while the broker is away")
	for range 2 {
		if got := newest(t, p, r); got != "while the broker is away" {
			t.Fatalf("broker away: the page shows %q", got)
		}
	}
	hub.BrokerBack()
	f.add("as the broker came back, unheard")
	if got := newest(t, p, r); got != "as the broker came back, unheard" {
		t.Fatalf("broker back: the page shows %q", got)
	}
	reads := f.reads.Load()
	newest(t, p, r)
	if f.reads.Load() != reads {
		t.Errorf("after the broker came back the page is not kept again")
	}
}

// TestPagesTTLAndBound: a page is read again after its TTL, and pages
// over the byte bound are dropped.
func TestPagesTTLAndBound(t *testing.T) {
	hub := live.NewLocalHub()
	defer hub.Close()
	f := &fakeMessages{}
	f.add("one")
	p := f.pages(hub, 20*time.Millisecond, 1<<20)
	r := room("lobby")
	newest(t, p, r)
	time.Sleep(30 * time.Millisecond)
	newest(t, p, r)
	if n := f.reads.Load(); n != 2 {
		t.Errorf("a page past its TTL: %d reads, want 2", n)
	}
	small := f.pages(hub, time.Hour, 600)
	newest(t, small, room("a"))
	newest(t, small, room("b")) // over the bound: a is dropped
	before := f.reads.Load()
	newest(t, small, room("a"))
	if f.reads.Load() != before+1 {
		t.Errorf("a page over the byte bound was kept")
	}
}

// TestPagesShareCountReads: readers of one conversation who ask while
// its change count is being read wait for the next read, which they
// share; none is served the read sent before it asked, so a change
// stored meanwhile is on their pages.
func TestPagesShareCountReads(t *testing.T) {
	hub := live.NewLocalHub()
	defer hub.Close()
	f := &fakeMessages{countHold: make(chan struct{}), countStarted: make(chan struct{}, 100)}
	f.add("one")
	p := f.pages(hub, time.Hour, 1<<20)
	r := room("lobby")
	first := make(chan string, 1)
	go func() { first <- newest(t, p, r) }()
	<-f.countStarted
	// A change is stored and counted after the first count read was
	// sent; readers ask now.
	f.add("two")
	var wg sync.WaitGroup
	got := make([]string, 6)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = newest(t, p, r) }()
	}
	// Let them wait for the next read.
	time.Sleep(50 * time.Millisecond)
	close(f.countHold)
	wg.Wait()
	<-first
	for i, g := range got {
		if g != "two" {
			t.Errorf("reader %d, who asked after the change, got %q", i, g)
		}
	}
	if n := p.CountReads(); n != 2 {
		t.Errorf("7 readers made %d reads of the count, want 2 (the first, then one shared)", n)
	}
}

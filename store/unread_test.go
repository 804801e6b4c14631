package store_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
)

// TestSendRacesMarkRead is the 2010 messenger's first critique: sending
// races marking as read. A posts while B marks read from two tabs, with
// random delays, for 1,000 rounds. After each round B's marker is the
// newest id either tab marked (it never moved back), and B's unread count
// is exactly A's messages newer than it: derived, so it cannot drift.
func TestSendRacesMarkRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Each worker has its own A, B and room, and runs its share of the
	// rounds one after another on them.
	type pair struct {
		a, b   chat.User
		room   chat.RoomWithAll
		posted []chat.ID // A's messages, in order
		marked chat.ID   // the newest id any tab marked
	}
	pairs := make([]*pair, raceWorkers)
	for w := range pairs {
		a, b := newUser(t, unique("senda")), newUser(t, unique("readb"))
		created, err := db.CreateRoom(ctx, a.Ref(), chat.NewRoom{Name: unique("unread")})
		if err != nil {
			t.Fatal(err)
		}
		room, err := joinAndRead(ctx, db.Store, b.Ref(), created.Name)
		if err != nil {
			t.Fatal(err)
		}
		first, err := db.PostMessage(ctx, room, a.Ref(), "first")
		if err != nil {
			t.Fatal(err)
		}
		pairs[w] = &pair{a: a, b: b, room: room, posted: []chat.ID{first.ID}}
	}
	rounds := 1000
	if testing.Short() {
		rounds = 100
	}
	jitter := func() { time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond) }
	inRounds(t, rounds, func(w, round int) error {
		p := pairs[w]
		a, b, room := p.a, p.b, p.room
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			failed error
		)
		fail := func(err error) {
			mu.Lock()
			failed = cmp.Or(failed, err)
			mu.Unlock()
		}
		wg.Add(3)
		go func() {
			defer wg.Done()
			for i := rand.IntN(4); i > 0; i-- {
				jitter()
				m, err := db.PostMessage(ctx, room, a.Ref(), "hello")
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				p.posted = append(p.posted, m.ID)
				mu.Unlock()
			}
		}()
		for tab := 0; tab < 2; tab++ {
			go func() {
				defer wg.Done()
				jitter()
				// A tab marks read up to the newest message it shows.
				msgs, _, err := db.MessagesBefore(ctx, room, chat.ID{}, 1)
				if err != nil || len(msgs) == 0 {
					fail(fmt.Errorf("read latest: %v", err))
					return
				}
				jitter()
				if err := db.MarkRead(ctx, b.Login, room.Name, msgs[0].ID); err != nil {
					fail(err)
					return
				}
				mu.Lock()
				if msgs[0].ID.After(p.marked) {
					p.marked = msgs[0].ID
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		if failed != nil {
			return failed
		}
		markers, err := db.Markers(ctx, b.Login)
		if err != nil {
			return err
		}
		if markers[room.Name] != p.marked {
			return fmt.Errorf("marker %v, want the newest marked %v (%v)", markers[room.Name].Time(), p.marked.Time(), p.marked)
		}
		want := 0
		for _, id := range p.posted {
			if id.After(p.marked) {
				want++
			}
		}
		want = min(want, store.MaxUnread)
		got, err := db.Unread(ctx, b.Login, map[string]time.Time{room.Name: room.CreatedAt})
		if err != nil {
			return err
		}
		if got[room.Name] != want {
			return fmt.Errorf("B's unread %d, want %d", got[room.Name], want)
		}
		return nil
	})
	messages := 0
	for _, p := range pairs {
		messages += len(p.posted)
	}
	t.Logf("%d rounds, %d messages by A", rounds, messages)
}

// TestMarkerNeverMovesBack writes an older marker after a newer one.
func TestMarkerNeverMovesBack(t *testing.T) {
	ctx := context.Background()
	login := unique("mark")
	newer := chat.IDAt(time.Now())
	older := chat.IDAt(time.Now().Add(-time.Minute))
	for _, id := range []chat.ID{newer, older} {
		if err := db.MarkRead(ctx, login, "some-room", id); err != nil {
			t.Fatal(err)
		}
	}
	m, err := db.Markers(ctx, login)
	if err != nil {
		t.Fatal(err)
	}
	if m["some-room"] != newer {
		t.Fatalf("marker %v, want the newer %v", m["some-room"].Time(), newer.Time())
	}
}

// TestUnreadSkipsOwnAndSystemAndStops: only others' messages count, and a
// count stops at MaxUnread.
func TestUnreadSkipsOwnAndSystemAndStops(t *testing.T) {
	ctx := context.Background()
	a, b := newUser(t, unique("ua")), newUser(t, unique("ub"))
	created, err := db.CreateRoom(ctx, a.Ref(), chat.NewRoom{Name: unique("unreadcap")})
	if err != nil {
		t.Fatal(err)
	}
	room, err := joinAndRead(ctx, db.Store, b.Ref(), created.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveMessage(ctx, room, db.DraftSystemMessage(room, b.Ref(), "B joins")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := db.PostMessage(ctx, room, b.Ref(), "mine"); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		got, err := db.Unread(ctx, b.Login, map[string]time.Time{room.Name: room.CreatedAt, "nothing-here": time.Time{}})
		if err != nil {
			t.Fatal(err)
		}
		return got[room.Name]
	}
	if n := count(); n != 0 {
		t.Fatalf("own and system messages count as unread: %d", n)
	}
	for i := 0; i < store.MaxUnread+20; i++ {
		if _, err := db.PostMessage(ctx, room, a.Ref(), "theirs"); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != store.MaxUnread {
		t.Fatalf("unread %d, want it to stop at %d", n, store.MaxUnread)
	}
}

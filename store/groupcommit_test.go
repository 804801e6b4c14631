package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
)

// heldStore is a store whose first insert of a message into room waits,
// once answered, until release is closed: the posts that come meanwhile
// wait for the next write of the room's messages (store/groupcommit.go).
// It records the statements it sends.
func heldStore(t *testing.T, room string) (st *store.Store, holding <-chan struct{}, release func(), statements func() []store.ObservedQuery) {
	t.Helper()
	held, hold := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	var mu sync.Mutex
	var seen []store.ObservedQuery
	st, err := db.AnotherWith(func(c *store.Config) {
		c.Observe = func(q store.ObservedQuery) {
			if len(q.Values) == 0 || q.Values[0] != room {
				return
			}
			mu.Lock()
			seen = append(seen, q)
			mu.Unlock()
			if strings.Contains(q.Statement, "INSERT INTO chat_room_messages") && !q.Batch {
				once.Do(func() {
					close(hold)
					<-held
				})
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	release = func() { releaseOnce.Do(func() { close(held) }) }
	t.Cleanup(release)
	return st, hold, release, func() []store.ObservedQuery {
		mu.Lock()
		defer mu.Unlock()
		return append([]store.ObservedQuery(nil), seen...)
	}
}

// waitForWaiting waits until n posts of room wait in st for the next
// write of its messages.
func waitForWaiting(t *testing.T, st *store.Store, room string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for st.WaitingPosts(room) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d posts wait, want %d", st.WaitingPosts(room), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommit (issue 38): 16 posts to one room at once, the last 15
// of them sent while the first one's write is under way, are each
// stored exactly once, in one statement for the 15 (a batch of their one
// partition); once each is answered, another instance's newest page
// holds it, the room's change count has moved past what was read before
// it, and the head names a message stored; at the end the head is the
// newest of them. The 16 posts cost at most 6 statements, not 48.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	author := newUser(t, unique("grouped"))
	room, err := db.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: unique("group")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.PostMessage(ctx, room, author.Ref(), "before"); err != nil { // the bucket recorded
		t.Fatal(err)
	}
	st, holding, release, statements := heldStore(t, room.Name)
	other := db.Store // another instance: it reads what st wrote
	before, err := other.Version(ctx, room.Name)
	if err != nil {
		t.Fatal(err)
	}

	const n = 16
	posts := make([]chat.Message, n)
	for i := range posts {
		if posts[i], err = st.DraftMessage(room, author.Ref(), fmt.Sprintf("post %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, n)
	post := func(m chat.Message) {
		err := st.SaveFencedMessage(ctx, room, m)
		if err == nil {
			err = onPage(ctx, other, room, m, before)
		}
		errs <- err
	}
	go post(posts[0])
	<-holding
	for _, m := range posts[1:] {
		go post(m)
	}
	waitForWaiting(t, st, room.Name, n-1)
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}

	page, _, err := other.MessagesBefore(ctx, room, chat.ID{}, 50)
	if err != nil {
		t.Fatal(err)
	}
	times := map[chat.ID]int{}
	for _, m := range page {
		times[m.ID]++
	}
	for _, m := range posts {
		if times[m.ID] != 1 {
			t.Errorf("%q is on the page %d times", m.Content, times[m.ID])
		}
	}
	if len(page) != n+1 {
		t.Errorf("the page holds %d messages, want %d", len(page), n+1)
	}
	heads, err := other.Heads(ctx, []string{room.Name})
	if err != nil {
		t.Fatal(err)
	}
	if heads[room.Name] != posts[n-1].ID {
		t.Errorf("head %s, want the newest post %s", heads[room.Name], posts[n-1].ID)
	}

	all := statements()
	sent, batched := 0, 0
	for _, q := range all {
		if q.Batch {
			batched++
		}
		if !q.Batch || q.BatchIndex == 0 {
			sent++
		}
	}
	t.Logf("%d posts at once: %d statements sent", n, sent)
	if batched != n-1 {
		t.Errorf("%d messages went in a batch, want the %d that waited", batched, n-1)
	}
	// The first post: its message, its head and its count; the 15: their
	// batch, and a head and a count that cover them (or all 16).
	if sent > 6 {
		t.Errorf("%d posts at once sent %d statements, budget 6", n, sent)
	}
}

// onPage checks, from another instance, what an answered post m promises:
// m is on the newest page, the head names a message on it, and the
// change count has moved past before.
func onPage(ctx context.Context, other *store.Store, room chat.RoomFor, m chat.Message, before int64) error {
	v, err := other.Version(ctx, room.Name)
	if err != nil {
		return err
	}
	if v <= before {
		return fmt.Errorf("%q answered with the count at %d, read %d before it", m.Content, v, before)
	}
	heads, err := other.Heads(ctx, []string{room.Name})
	if err != nil {
		return err
	}
	page, _, err := other.MessagesBefore(ctx, room, chat.ID{}, 50)
	if err != nil {
		return err
	}
	var found, head bool
	for _, got := range page {
		found = found || got.ID == m.ID
		head = head || got.ID == heads[room.Name]
	}
	if !found {
		return fmt.Errorf("%q answered, not on another instance's page", m.Content)
	}
	if !head || heads[room.Name].Before(m.ID) {
		return fmt.Errorf("%q answered, the head %s does not cover it", m.Content, heads[room.Name])
	}
	return nil
}

// TestGroupCommitFails (issue 38): a write of a group that fails fails
// every post it carries and stores none of them (one batch of one
// partition: all or nothing); the post written before it stands, and the
// head names it.
func TestGroupCommitFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	author := newUser(t, unique("failed"))
	room, err := db.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: unique("group")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.PostMessage(ctx, room, author.Ref(), "before"); err != nil {
		t.Fatal(err)
	}
	st, holding, release, _ := heldStore(t, room.Name)
	const n = 8
	posts := make([]chat.Message, n)
	for i := range posts {
		if posts[i], err = st.DraftMessage(room, author.Ref(), fmt.Sprintf("post %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Text that is not UTF-8: Cassandra refuses the statement that
	// carries it, so the whole batch.
	posts[n/2].Content = "bad \xff\xfe text"
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range posts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = st.SaveFencedMessage(ctx, room, m)
		}()
		if i == 0 {
			<-holding // the first one's write is under way
		}
	}
	waitForWaiting(t, st, room.Name, n-1)
	release()
	wg.Wait()
	if errs[0] != nil {
		t.Errorf("the post written alone: %v", errs[0])
	}
	t.Logf("the group's answer: %v", errs[1])
	for i, err := range errs[1:] {
		if err == nil {
			t.Errorf("post %d of the failed group answered with no error", i+1)
		}
	}
	page, _, err := db.MessagesBefore(ctx, room, chat.ID{}, 50)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range page {
		got = append(got, m.Content)
	}
	if strings.Join(got, "|") != "before|post 0" {
		t.Errorf("stored: %q, want the post written alone only", got)
	}
	heads, err := db.Heads(ctx, []string{room.Name})
	if err != nil {
		t.Fatal(err)
	}
	if heads[room.Name] != posts[0].ID {
		t.Errorf("head %s, want %s", heads[room.Name], posts[0].ID)
	}
}

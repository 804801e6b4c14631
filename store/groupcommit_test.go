package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
)

// heldStore is a store whose first inserts of a message into room (as
// many as may be under way at once, store.MessageWrites) each wait, once
// answered, until release is called: the posts that come meanwhile wait
// for the next write of its messages (store/groupcommit.go). holding
// gets a value as each insert starts waiting. It records the statements
// it sends about room.
func heldStore(t *testing.T, room string) (st *store.Store, holding <-chan struct{}, release func(), statements func() []store.ObservedQuery) {
	t.Helper()
	held, hold := make(chan struct{}), make(chan struct{}, store.MessageWrites)
	var inserts atomic.Int32
	var releaseOnce sync.Once
	var mu sync.Mutex
	var seen []store.ObservedQuery
	st, err := db.AnotherWith(func(c *store.Config) {
		c.Observe = func(q store.ObservedQuery) {
			if !slices.Contains(q.Values, any(room)) { // the head's first value is its time
				return
			}
			mu.Lock()
			seen = append(seen, q)
			mu.Unlock()
			// Each write of messages is a batch led by a message.
			if strings.Contains(q.Statement, "INSERT INTO chat_room_messages") && q.Batch && q.BatchIndex == 0 &&
				inserts.Add(1) <= store.MessageWrites {
				hold <- struct{}{}
				<-held
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

// TestGroupCommit (issue 38): 16 posts to one room at once, the last 14
// of them sent while the first two's writes are under way (as many as
// may be), are each stored exactly once, in one statement for the 14 (a
// batch: their one partition and the head); once each is answered,
// another instance's newest page holds it, the version of the room's
// page has moved from what was read before it, and the head names a
// message stored; at the end the head is the newest of them. The 16 posts
// cost 4 statements (the bucket's record included), not 48.
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
	first := store.MessageWrites // written alone, at once, and held
	for _, m := range posts[:first] {
		go post(m)
		<-holding
	}
	for _, m := range posts[first:] {
		go post(m)
	}
	waitForWaiting(t, st, room.Name, n-first)
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
	sent, largest, batch := 0, 0, 0
	for _, q := range all {
		if !q.Batch || q.BatchIndex == 0 {
			sent++
			batch = 0
		}
		if q.Batch && strings.Contains(q.Statement, "INSERT INTO chat_room_messages") {
			batch++
			largest = max(largest, batch)
		}
	}
	t.Logf("%d posts at once: %d statements sent", n, sent)
	if largest != n-first {
		t.Errorf("the largest write carried %d messages, want the %d that waited", largest, n-first)
	}
	// The bucket, recorded once by this store; the first ones: each its
	// batch; those that waited: one batch. Nothing is counted (posts far
	// from the end of their day are not).
	if budget := 1 + first + 1; sent > budget {
		t.Errorf("%d posts at once sent %d statements, budget %d", n, sent, budget)
	}
}

// onPage checks, from another instance, what an answered post m promises:
// m is on the newest page, the head names a message on it, and the
// version of its newest page has moved from before.
func onPage(ctx context.Context, other *store.Store, room chat.RoomFor, m chat.Message, before chat.PageVersion) error {
	v, err := other.Version(ctx, room.Name)
	if err != nil {
		return err
	}
	if v == before {
		return fmt.Errorf("%q answered with the page's version where it was before it: %+v", m.Content, v)
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
// partition: all or nothing); the posts written before it stand, and the
// head names the newest of them.
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
	first := store.MessageWrites
	posts[first+2].Content = "bad \xff\xfe text"
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range posts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = st.SaveFencedMessage(ctx, room, m)
		}()
		if i < first {
			<-holding // written alone, at once, and held
		}
	}
	waitForWaiting(t, st, room.Name, n-first)
	release()
	wg.Wait()
	for i, err := range errs[:first] {
		if err != nil {
			t.Errorf("post %d, written alone: %v", i, err)
		}
	}
	t.Logf("the group's answer: %v", errs[first])
	for i, err := range errs[first:] {
		if err == nil {
			t.Errorf("post %d of the failed group answered with no error", first+i)
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
	want := []string{"before"}
	for _, m := range posts[:first] {
		want = append(want, m.Content)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("stored: %q, want %q, those written alone", got, want)
	}
	heads, err := db.Heads(ctx, []string{room.Name})
	if err != nil {
		t.Fatal(err)
	}
	if heads[room.Name] != posts[first-1].ID {
		t.Errorf("head %s, want %s", heads[room.Name], posts[first-1].ID)
	}
}

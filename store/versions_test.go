package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestVersionCountsEveryChange (issue 38): a conversation's change count
// moves, once it is answered, after a post, a reaction added and taken
// back, an edit and a delete, and each of 20 posts at once has moved it
// by the time it is answered (an increment is not lost to a race, as a
// cell written last would lose one; posts written together share one).
func TestVersionCountsEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	author := newUser(t, unique("counted"))
	room, m := reactedRoom(t, author)
	last, err := db.Version(ctx, room.Name)
	if err != nil {
		t.Fatal(err)
	}
	if last < 1 {
		t.Fatalf("after a post the count is %d", last)
	}
	moved := func(what string) {
		t.Helper()
		n, err := db.Version(ctx, room.Name)
		if err != nil {
			t.Fatal(err)
		}
		if n <= last {
			t.Errorf("after %s the count is %d, was %d", what, n, last)
		}
		last = n
	}
	if _, err := db.React(ctx, room, m.ID, author.Ref(), "👍", true, db.NewChangeID()); err != nil {
		t.Fatal(err)
	}
	moved("a reaction")
	if _, err := db.React(ctx, room, m.ID, author.Ref(), "👍", false, db.NewChangeID()); err != nil {
		t.Fatal(err)
	}
	moved("a reaction taken back")
	edited, err := db.EditMessage(ctx, room, m, "edited", db.NewChangeID())
	if err != nil {
		t.Fatal(err)
	}
	moved("an edit")
	if err := db.DeleteMessage(ctx, room, edited, db.NewChangeID()); err != nil {
		t.Fatal(err)
	}
	moved("a delete")

	// 20 posts at once: those that arrive while a write of the room's
	// messages is under way share the next one and its one increment
	// (store/groupcommit.go), so the count moves at least once and at
	// most 20 times; but each post, once answered, has moved it past
	// what a read before the post saw, which is what a kept page needs.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			before, err := db.Version(ctx, room.Name)
			if err != nil {
				errs <- err
				return
			}
			if _, err := db.PostMessage(ctx, room, author.Ref(), "at once"); err != nil {
				errs <- err
				return
			}
			after, err := db.Version(ctx, room.Name)
			if err == nil && after <= before {
				err = fmt.Errorf("a post answered left the count at %d, read %d before it", after, before)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.Version(ctx, room.Name)
	if err != nil {
		t.Fatal(err)
	}
	if n <= last || n > last+20 {
		t.Errorf("20 posts at once moved the count from %d to %d", last, n)
	}
	if n, err := db.Version(ctx, unique("never")); err != nil || n != 0 {
		t.Errorf("a conversation with no change: %d, %v", n, err)
	}
}

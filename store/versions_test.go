package store_test

import (
	"context"
	"sync"
	"testing"
)

// TestVersionCountsEveryChange (issue 38): a conversation's change count
// moves, once it is answered, after a post, a reaction added and taken
// back, an edit and a delete, and after 20 posts at once it has counted
// every one of them (an increment is not lost to a race, as a cell
// written last would lose one).
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

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := db.PostMessage(ctx, room, author.Ref(), "at once")
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
	if n < last+20 {
		t.Errorf("20 posts at once moved the count from %d to %d", last, n)
	}
	if n, err := db.Version(ctx, unique("never")); err != nil || n != 0 {
		t.Errorf("a conversation with no change: %d, %v", n, err)
	}
}

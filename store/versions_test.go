package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// TestVersionMovesWithEveryChange (issue 38): the version of a
// conversation's newest page moves, once a change is answered, after a
// post, a reaction added and taken back, an edit and a delete; the change
// count moves with every change but a post; and each of 20 posts at once,
// from two instances, has moved the version by the time it is answered,
// whatever order the posts were stored in (a post leaves its mark in its
// day's partition, in the same batch: a cell written last would keep only
// one of two racing posts, a mark per writer slot keeps both).
func TestVersionMovesWithEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	author := newUser(t, unique("counted"))
	room, m := reactedRoom(t, author)
	last, err := db.Version(ctx, room.Name)
	if err != nil {
		t.Fatal(err)
	}
	if last.Writers == "" || last.Day != chat.TimeBucket(time.Now()) {
		t.Fatalf("after a post the version is %+v", last)
	}
	moved := func(what string, counted bool) {
		t.Helper()
		v, err := db.Version(ctx, room.Name)
		if err != nil {
			t.Fatal(err)
		}
		if v == last {
			t.Errorf("after %s the version is %+v, as before", what, v)
		}
		if counted && v.Changes <= last.Changes {
			t.Errorf("after %s the count is %d, was %d", what, v.Changes, last.Changes)
		}
		last = v
	}
	if _, err := db.PostMessage(ctx, room, author.Ref(), "one more"); err != nil {
		t.Fatal(err)
	}
	moved("a post", false)
	if _, err := db.React(ctx, room, m.ID, author.Ref(), "👍", true, db.NewChangeID()); err != nil {
		t.Fatal(err)
	}
	moved("a reaction", true)
	if _, err := db.React(ctx, room, m.ID, author.Ref(), "👍", false, db.NewChangeID()); err != nil {
		t.Fatal(err)
	}
	moved("a reaction taken back", true)
	edited, err := db.EditMessage(ctx, room, m, "edited", db.NewChangeID())
	if err != nil {
		t.Fatal(err)
	}
	moved("an edit", true)
	if err := db.DeleteMessage(ctx, room, edited, db.NewChangeID()); err != nil {
		t.Fatal(err)
	}
	moved("a delete", true)

	// 20 posts at once, half of them through another instance: each, once
	// answered, has moved the version from what a read before it saw.
	other, err := db.Another()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := db.Store
			if i%2 == 1 {
				st = other
			}
			before, err := db.Version(ctx, room.Name)
			if err != nil {
				errs <- err
				return
			}
			if _, err := st.PostMessage(ctx, room, author.Ref(), fmt.Sprintf("at once %d", i)); err != nil {
				errs <- err
				return
			}
			after, err := db.Version(ctx, room.Name)
			if err == nil && after == before {
				err = fmt.Errorf("a post answered left the version at %+v, read before it", after)
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
	if v, err := db.Version(ctx, unique("never")); err != nil || v.Changes != 0 || v.Writers != "" {
		t.Errorf("a conversation with no change: %+v, %v", v, err)
	}
}

// TestPostsNearTheEndOfADayAreCounted (issue 38): a reader reads the marks
// of its own day, so a post stored into a day that ends within minutes,
// which a reader already in the next day would not see marked, moves the
// change count as well; a post of the middle of the day does not.
func TestPostsNearTheEndOfADayAreCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	author := newUser(t, unique("late"))
	room, err := db.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: unique("late")})
	if err != nil {
		t.Fatal(err)
	}
	noon := time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)
	for _, c := range []struct {
		at      time.Time
		counted bool
	}{
		{noon, false},
		{noon.Add(12*time.Hour - time.Minute), true},
		{noon.Add(12*time.Hour + time.Minute), false},
	} {
		st, err := db.Another()
		if err != nil {
			t.Fatal(err)
		}
		st.Now = func() time.Time { return c.at }
		before, err := st.Changes(ctx, room.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.PostMessage(ctx, room, author.Ref(), "at "+c.at.Format(time.TimeOnly)); err != nil {
			t.Fatal(err)
		}
		after, err := st.Changes(ctx, room.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got := after > before; got != c.counted {
			t.Errorf("a post at %s: counted %v, want %v", c.at.Format(time.TimeOnly), got, c.counted)
		}
		st.Close()
	}
}

package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
)

func TestDMAddress(t *testing.T) {
	for _, tt := range []struct {
		name   string
		logins []string
		want   string
		err    bool
	}{
		{"OK", []string{"bob", "ada"}, "ada+bob", false},
		{"LowerCased", []string{"Bob", "ADA", "cy1"}, "ada+bob+cy1", false},
		{"Repeats", []string{"ada", "bob", "ADA"}, "ada+bob", false},
		{"Alone", []string{"ada", "Ada"}, "", true},
		{"TooMany", []string{"aa1", "aa2", "aa3", "aa4", "aa5", "aa6", "aa7", "aa8", "aa9"}, "", true},
		{"BadLogin", []string{"ada", "b+b"}, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chat.DMAddress(tt.logins)
			if (err != nil) != tt.err || got != tt.want {
				t.Fatalf("DMAddress(%v) = %q, %v", tt.logins, got, err)
			}
		})
	}
}

// TestFirstContactRace: two people who write to each other for the first
// time at the same moment land in one conversation, because its address
// is made of their logins: there is nothing to create, so nothing to race.
func TestFirstContactRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := 0; round < 100; round++ {
		a, b := newUser(t, unique("fca")), newUser(t, unique("fcb"))
		var wg sync.WaitGroup
		ids := make([]chat.ID, 2)
		for i, pair := range [][2]chat.User{{a, b}, {b, a}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each addresses the other, in their own order and case.
				d, err := db.DM(ctx, pair[1].Login+"+"+pair[0].Login)
				if err != nil {
					t.Error(err)
					return
				}
				m, err := db.PostMessage(ctx, d, pair[0].Ref(), "hello from "+pair[0].Login)
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = m.ID
				if err := db.RecordDMMessage(ctx, d, m); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		d, err := db.DM(ctx, a.Login+"+"+b.Login)
		if err != nil {
			t.Fatal(err)
		}
		msgs, _, err := db.MessagesBefore(ctx, d, chat.ID{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2 {
			t.Fatalf("round %d: the conversation holds %d messages, want both", round, len(msgs))
		}
		for _, u := range []chat.User{a, b} {
			list, err := db.DMList(ctx, u.Login)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].DM.Address != d.Address {
				t.Fatalf("round %d: %s's list %+v, want the one conversation", round, u.Login, list)
			}
		}
	}
}

// TestDMListUnderConcurrentSends: 10 partners write 50 messages each to
// one person at once; the list has one entry per partner, newest first,
// each showing its conversation's last message.
func TestDMListUnderConcurrentSends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	me := newUser(t, unique("inbox"))
	const partners, each = 10, 50
	last := make([]chat.Message, partners)
	var wg sync.WaitGroup
	for p := 0; p < partners; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := newUser(t, unique("partner"))
			d, err := db.DM(ctx, me.Login+"+"+u.Login)
			if err != nil {
				t.Error(err)
				return
			}
			// Each message's list write runs concurrently with the next
			// send, so writes reach Cassandra out of order.
			var sends sync.WaitGroup
			for i := 0; i < each; i++ {
				m, err := db.PostMessage(ctx, d, u.Ref(), fmt.Sprintf("%s says %d", u.Login, i))
				if err != nil {
					t.Error(err)
					return
				}
				last[p] = m
				sends.Add(1)
				go func() {
					defer sends.Done()
					if err := db.RecordDMMessage(ctx, d, m); err != nil {
						t.Error(err)
					}
				}()
			}
			sends.Wait()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	list, err := db.DMList(ctx, me.Login)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != partners {
		t.Fatalf("%d entries, want %d", len(list), partners)
	}
	for i, e := range list {
		if i > 0 && e.LastID.After(list[i-1].LastID) {
			t.Errorf("entry %d is newer than entry %d", i, i-1)
		}
		found := false
		for _, m := range last {
			if m.ID == e.LastID {
				found = e.LastExcerpt == m.Content && e.LastAuthor.Login == m.Author.Login
			}
		}
		if !found {
			t.Errorf("entry %s shows %q (%v), not its last message", e.DM.Address, e.LastExcerpt, e.LastID.Time())
		}
	}
}

func TestDMUnknownMember(t *testing.T) {
	a := newUser(t, unique("dmk"))
	for _, addr := range []string{a.Login + "+nobody" + unique("x"), a.Login, "not a+valid"} {
		if _, err := db.DM(context.Background(), addr); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("DM(%q): %v, want ErrNotFound", addr, err)
		}
	}
}

// TestDMListMovesBesideMarkers (schema 010): a person whose DM list was
// written before the move (dm_lists only) sees it whole on their first
// read, which copies it beside their markers; a message recorded after
// the move wins over the copy; and the next read is one statement.
func TestDMListMovesBesideMarkers(t *testing.T) {
	ctx := context.Background()
	me := newUser(t, unique("mover"))
	var dms []chat.DM
	for i := range 3 {
		other := newUser(t, unique(fmt.Sprintf("old%d", i)))
		d, err := db.DM(ctx, me.Login+"+"+other.Login)
		if err != nil {
			t.Fatal(err)
		}
		m, err := db.PostMessage(ctx, d, other.Ref(), fmt.Sprintf("before the move %d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.RecordOldDMEntry(ctx, me.Login, d, m); err != nil {
			t.Fatal(err)
		}
		dms = append(dms, d)
	}
	if err := db.MarkRead(ctx, me.Login, dms[0].Conversation().ID, chat.ID(gocql.TimeUUID())); err != nil {
		t.Fatal(err)
	}
	markers, list, err := db.PersonalState(ctx, me.Login)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].DM.Address != dms[2].Address || list[0].LastExcerpt != "before the move 2" {
		t.Fatalf("first read: %+v, want the 3 DMs written before the move, newest first", list)
	}
	if _, ok := markers.Read[dms[0].Conversation().ID]; !ok {
		t.Errorf("first read: markers %v lack the marker of %s", markers.Read, dms[0].Address)
	}
	// After the move, new messages are recorded beside the markers.
	m, err := db.PostMessage(ctx, dms[0], me.Ref(), "after the move")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RecordDMMessage(ctx, dms[0], m); err != nil {
		t.Fatal(err)
	}
	db.Recorder.Start()
	_, list, err = db.PersonalState(ctx, me.Login)
	var got []store.ObservedQuery
	for _, q := range db.Recorder.Stop() {
		if slices.Contains(q.Values, any(me.Login)) { // other tests may run at once
			got = append(got, q)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].DM.Address != dms[0].Address || list[0].LastExcerpt != "after the move" {
		t.Errorf("after the move: %+v, want %s first with its new message", list, dms[0].Address)
	}
	if len(got) != 1 {
		t.Errorf("a read after the move ran %d statements, want 1: %v", len(got), got)
	}
}

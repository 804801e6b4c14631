package store_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/chat"
)

// TestMessagesBeforeWalksBuckets posts 500 messages over 30 days, with
// empty days between, through an injected clock, then pages from the
// newest to the oldest: every message comes exactly once, in order, and a
// page costs at most one query per bucket it reads plus one.
func TestMessagesBeforeWalksBuckets(t *testing.T) {
	ctx := context.Background()
	author := newUser(t, unique("pager"))
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	clock := start.Add(-time.Hour)
	// A store of its own: its id generator never goes back in time, so the
	// shared one, having made ids at today's date, would not make March's.
	st, err := db.Another()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Now = func() time.Time { return clock }

	room, err := st.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: unique("paging")})
	if err != nil {
		t.Fatal(err)
	}
	var days []int
	for d := 0; d < 30; d++ {
		if d%4 != 1 && d%7 != 3 { // leave gaps of empty days
			days = append(days, d)
		}
	}
	var posted []chat.ID
	for i := 0; i < 500; i++ {
		day := days[i*len(days)/500]
		clock = start.AddDate(0, 0, day).Add(time.Duration(i) * time.Minute)
		m, err := st.PostMessage(ctx, room, author.Ref(), "message "+time.Duration(i).String())
		if err != nil {
			t.Fatal(err)
		}
		posted = append(posted, m.ID)
	}
	clock = start.AddDate(0, 0, 31)

	var walked []chat.ID
	before := chat.ID{}
	for page := 0; ; page++ {
		db.Recorder.Start()
		msgs, more, err := st.MessagesBefore(ctx, room, before, 50)
		queries := db.Recorder.Stop()
		if err != nil {
			t.Fatal(err)
		}
		buckets, reactions := 0, 0
		for _, q := range queries {
			switch {
			case strings.Contains(q.Statement, "FROM chat_room_messages"):
				buckets++
			case strings.Contains(q.Statement, "FROM message_reactions"):
				reactions++ // one per day the page's messages span
			}
		}
		if len(queries) > buckets+1+reactions || reactions > buckets {
			t.Errorf("page %d: %d queries for %d buckets (%d of reactions)", page, len(queries), buckets, reactions)
		}
		for i := 1; i < len(msgs); i++ {
			if msgs[i-1].ID.Time().After(msgs[i].ID.Time()) {
				t.Fatalf("page %d not oldest-first at %d", page, i)
			}
		}
		// Prepend: pages come newest first.
		ids := make([]chat.ID, 0, len(msgs)+len(walked))
		for _, m := range msgs {
			ids = append(ids, m.ID)
		}
		walked = append(ids, walked...)
		if !more {
			break
		}
		before = msgs[0].ID
		if page > 20 {
			t.Fatal("paging does not end")
		}
	}
	if len(walked) != len(posted) {
		t.Fatalf("walked %d messages, posted %d", len(walked), len(posted))
	}
	for i := range posted {
		if walked[i] != posted[i] {
			t.Fatalf("message %d: walked %v, posted %v", i, walked[i], posted[i])
		}
	}

	t.Run("MessagesAfter", func(t *testing.T) {
		got, cut, err := db.MessagesAfter(ctx, room, posted[99], 1000)
		if err != nil || cut {
			t.Fatal(err, cut)
		}
		if len(got) != 400 || got[0].ID != posted[100] || got[399].ID != posted[499] {
			t.Fatalf("after #99: %d messages", len(got))
		}
	})

	// The live stream's replay: pages of 50 across buckets with gaps, each
	// page one query per bucket it reads and none asking for more than a
	// page (plus one to know whether more follow).
	t.Run("MessagesAfterPages", func(t *testing.T) {
		var got []chat.ID
		after := posted[9]
		for page := 0; ; page++ {
			db.Recorder.Start()
			msgs, more, err := db.MessagesAfter(ctx, room, after, 50)
			queries := db.Recorder.Stop()
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range queries {
				if strings.Contains(q.Statement, "FROM chat_room_messages") {
					if limit := q.Values[len(q.Values)-1].(int); limit > 51 {
						t.Fatalf("page %d asks for %d rows", page, limit)
					}
				}
			}
			if len(msgs) > 50 || (more && len(msgs) != 50) {
				t.Fatalf("page %d: %d messages, more=%v", page, len(msgs), more)
			}
			for _, m := range msgs {
				got = append(got, m.ID)
			}
			if !more {
				break
			}
			after = msgs[len(msgs)-1].ID
			if page > 20 {
				t.Fatal("paging does not end")
			}
		}
		want := posted[10:]
		if len(got) != len(want) {
			t.Fatalf("paged %d messages, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("message %d: paged %v, want %v", i, got[i], want[i])
			}
		}
	})

	t.Run("CountMessagesAfter", func(t *testing.T) {
		for _, tc := range []struct {
			after       chat.ID
			limit, want int
		}{
			{posted[99], 1000, 400},
			{posted[99], 400, 400},
			{posted[99], 123, 123},
			{posted[499], 10, 0},
			{chat.ID{}, 5000, 500},
		} {
			if n, err := db.CountMessagesAfter(ctx, room, tc.after, tc.limit); err != nil || n != tc.want {
				t.Errorf("count after %v up to %d = %d %v, want %d", tc.after, tc.limit, n, err, tc.want)
			}
		}
	})
}

func TestMessageIDsAreUniqueAndOrdered(t *testing.T) {
	ctx := context.Background()
	author := newUser(t, unique("ids"))
	room, err := db.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: unique("ids")})
	if err != nil {
		t.Fatal(err)
	}
	// Same instant for every message: ids must still differ and increase.
	now := time.Now()
	db.Now = func() time.Time { return now }
	defer func() { db.Now = time.Now }()
	var (
		mu  sync.Mutex
		ids = map[chat.ID]bool{}
		wg  sync.WaitGroup
	)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := db.DraftMessage(room, author.Ref(), "x")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ids[m.ID] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(ids) != 200 {
		t.Fatalf("%d distinct ids of 200", len(ids))
	}
	a, _ := db.DraftMessage(room, author.Ref(), "a")
	b, _ := db.DraftMessage(room, author.Ref(), "b")
	if !(a.ID.Timestamp() < b.ID.Timestamp()) || a.ID.Version() != 1 {
		t.Fatalf("ids not ordered: %v %v", a.ID, b.ID)
	}
}

func TestPostMessage(t *testing.T) {
	ctx := context.Background()
	author, stranger := newUser(t, unique("poster")), newUser(t, unique("stranger"))
	room, err := db.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: unique("post")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		who     chat.User
		content string
		want    error
	}{
		{"OK", author, "  hello\nworld  ", nil},
		{"ErrNotParticipant", stranger, "hi", chat.ErrNotParticipant},
		{"Empty", author, "   \n ", chat.ErrInvalid},
		{"TooLong", author, strings.Repeat("é", chat.MaxContent+1), chat.ErrInvalid},
		{"Longest", author, strings.Repeat("é", chat.MaxContent), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := db.PostMessage(ctx, room, tt.who.Ref(), tt.content)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if err == nil && m.Content != strings.TrimSpace(tt.content) {
				t.Errorf("content %q", m.Content)
			}
		})
	}
	msgs, _, err := db.MessagesBefore(ctx, room, chat.ID{}, 10)
	if err != nil || len(msgs) != 2 || msgs[0].Content != "hello\nworld" || msgs[0].Author != author.Ref() {
		t.Fatalf("stored: %+v %v", msgs, err)
	}
}

func TestParseMessageID(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{chat.ID(gocql.TimeUUID()).String(), true},
		{"not-a-uuid", false},
		{"", false},
		{"00000000-0000-4000-8000-000000000000", false}, // version 4
	} {
		t.Run(tt.in, func(t *testing.T) {
			_, err := chat.ParseMessageID(tt.in)
			if (err == nil) != tt.ok {
				t.Errorf("ParseMessageID(%q): %v", tt.in, err)
			}
		})
	}
}

// TestPostInDeletedRoom: a post by someone whose copy of the room is
// stale (another instance's cache) is refused once the room is deleted,
// or deleted and created again, and leaves no message behind.
func TestPostInDeletedRoom(t *testing.T) {
	ctx := context.Background()
	author := newUser(t, unique("poster"))
	stored := func(t *testing.T, name string) int {
		t.Helper()
		sess, err := db.Session()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		var n int
		if err := sess.Query(`SELECT count(message_id) FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`,
			name, bucketNow()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, recreate := range []bool{false, true} {
		t.Run(fmt.Sprintf("recreated=%v", recreate), func(t *testing.T) {
			stale, err := db.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: unique("gone")})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.DeleteRoom(ctx, author.Login, stale.Name); err != nil {
				t.Fatal(err)
			}
			if recreate {
				if _, err := db.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: stale.Name}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := db.PostMessage(ctx, stale, author.Ref(), "into the void"); !errors.Is(err, chat.ErrNotFound) {
				t.Errorf("post in a deleted room: %v, want ErrNotFound", err)
			}
			if n := stored(t, stale.Name); n != 0 {
				t.Errorf("%d messages stored in the deleted room's bucket", n)
			}
		})
	}
}

// bucketNow is today's day bucket (yyyyMMdd, UTC).
func bucketNow() int {
	n, _ := strconv.Atoi(time.Now().UTC().Format("20060102"))
	return n
}

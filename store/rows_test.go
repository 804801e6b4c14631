package store_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
)

// rowCounter is a gocql.Tracer that keeps the trace ids of the statements
// it sees, then sums what Cassandra's own trace says each one read: the
// "Read N live rows" events of system_traces. Counting the rows the driver
// receives would not do: for an IN with ORDER BY, the coordinator reads
// every row of the partitions and sends only the LIMIT.
type rowCounter struct {
	mu  sync.Mutex
	ids [][]byte
}

func (r *rowCounter) Trace(id []byte) {
	r.mu.Lock()
	r.ids = append(r.ids, append([]byte(nil), id...))
	r.mu.Unlock()
}

var readRows = regexp.MustCompile(`^Read (\d+) live rows`)

// rowsRead has st trace what fn sends, and returns the rows Cassandra read
// for it and the number of requests traced (pages and prepares included).
func rowsRead(t *testing.T, sess *gocql.Session, st *store.Store, fn func() error) (rows, requests int) {
	t.Helper()
	r := &rowCounter{}
	st.SetTracer(r)
	err := fn()
	st.SetTracer(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range r.ids {
		rows += traceRows(t, sess, id)
	}
	return rows, len(r.ids)
}

// traceRows waits for one trace to be complete (its session has a
// duration, and its events stop coming) and sums its rows read.
func traceRows(t *testing.T, sess *gocql.Session, id []byte) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last, stable := -1, 0
	for time.Now().Before(deadline) {
		var duration int
		err := sess.Query(`SELECT duration FROM system_traces.sessions WHERE session_id = ?`, id).
			Consistency(gocql.One).Scan(&duration)
		if err == nil && duration > 0 {
			iter := sess.Query(`SELECT activity FROM system_traces.events WHERE session_id = ?`, id).
				Consistency(gocql.One).Iter()
			var activity string
			rows, events := 0, 0
			for iter.Scan(&activity) {
				events++
				if m := readRows.FindStringSubmatch(activity); m != nil {
					n, _ := strconv.Atoi(m[1])
					rows += n
				}
			}
			if err := iter.Close(); err != nil {
				t.Fatal(err)
			}
			// Events are written in the background: take the sum once the
			// count has held for a few reads.
			if events == last {
				if stable++; stable >= 3 {
					return rows
				}
			} else {
				last, stable = events, 0
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("trace %x did not complete in 30 s", id)
	return 0
}

// TestReadsCostWhatTheyReturn is docs/data-model.md, rule 14, checked with the rows
// Cassandra reports it read: in a day bucket of 20,000 messages, the newest
// page, an older page, a replay page and an unread count each read about
// the rows they return, not the bucket (issue 22: one `time_bucket IN (…)
// ORDER BY` statement read every row of 8 days to show 50), and the unread
// mentions read only those after the oldest marker that has one unread.
func TestReadsCostWhatTheyReturn(t *testing.T) {
	t.Parallel()
	const (
		busy = 20_000
		page = 50
	)
	ctx := context.Background()
	st, err := db.Another() // its own session: only its statements are traced
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	author, reader := newUser(t, unique("busy")), newUser(t, unique("reader"))
	if _, err := st.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: unique("busyroom")}); err != nil {
		t.Fatal(err)
	}
	created, err := st.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: unique("busyroom")})
	if err != nil {
		t.Fatal(err)
	}
	room, err := joinAndRead(ctx, st, reader.Ref(), created.Name)
	if err != nil {
		t.Fatal(err)
	}
	// A busy day, written 32 at a time: the messages take their ids in
	// order here, and land in any order.
	posted := make([]chat.Message, busy)
	for i := range posted {
		if posted[i], err = st.DraftMessage(room, author.Ref(), fmt.Sprintf("message %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	saveAll(t, st, room, posted)
	// Then the last 1,200 mention the reader.
	mentions := make([]chat.Message, 1200)
	for i := range mentions {
		if mentions[i], err = st.DraftMessage(room, author.Ref(), fmt.Sprintf("@%s look %d", reader.Login, i)); err != nil {
			t.Fatal(err)
		}
	}
	saveAll(t, st, room, mentions)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, m := range mentions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := st.RecordMentions(ctx, room.Conversation(), m); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if bucket := func(m chat.Message) string { return m.Time().UTC().Format("20060102") }; bucket(posted[0]) != bucket(mentions[len(mentions)-1]) {
		t.Logf("the messages span midnight (%v to %v): two buckets", posted[0].Time(), mentions[len(mentions)-1].Time())
	}
	head := mentions[len(mentions)-1].ID
	middle := posted[busy/2].ID

	check := func(t *testing.T, what string, budget int, fn func() error) {
		t.Helper()
		rows, requests := rowsRead(t, sess, st, fn)
		t.Logf("%s: %d rows read, %d requests traced", what, rows, requests)
		if rows > budget {
			t.Errorf("%s read %d rows, budget %d", what, rows, budget)
		}
	}
	t.Run("NewestPage", func(t *testing.T) {
		check(t, "the newest page", 2*(page+1), func() error {
			msgs, more, err := st.MessagesBefore(ctx, room, chat.ID{}, page)
			if err == nil && (len(msgs) != page || !more || msgs[page-1].ID != head) {
				err = fmt.Errorf("newest page: %d messages, more %v", len(msgs), more)
			}
			return err
		})
	})
	t.Run("OlderPage", func(t *testing.T) {
		check(t, "an older page", 2*(page+1), func() error {
			msgs, more, err := st.MessagesBefore(ctx, room, middle, page)
			if err == nil && (len(msgs) != page || !more || msgs[page-1].ID != posted[busy/2-1].ID) {
				err = fmt.Errorf("older page: %d messages, more %v", len(msgs), more)
			}
			return err
		})
	})
	t.Run("ReplayPage", func(t *testing.T) {
		check(t, "a replay page", 2*(page+1), func() error {
			msgs, more, err := st.MessagesAfter(ctx, room, middle, page)
			if err == nil && (len(msgs) != page || !more || msgs[0].ID != posted[busy/2+1].ID) {
				err = fmt.Errorf("replay page: %d messages, more %v", len(msgs), more)
			}
			return err
		})
	})
	t.Run("UnreadCount", func(t *testing.T) {
		check(t, "an unread count", 2*store.MaxUnread, func() error {
			n, err := st.UnreadCount(ctx, reader.Login, room.Name, room.Conversation().Since, middle, head)
			if err == nil && n != store.MaxUnread {
				err = fmt.Errorf("unread count %d, want %d", n, store.MaxUnread)
			}
			return err
		})
	})
	t.Run("UnreadMentions", func(t *testing.T) {
		// Read up to the 1,190th mention: 10 messages unread, 10 mentions.
		if err := st.MarkRead(ctx, reader.Login, room.Name, mentions[1189].ID); err != nil {
			t.Fatal(err)
		}
		convs := map[string]time.Time{room.Name: room.Conversation().Since}
		check(t, "unread messages and mentions", 100, func() error {
			s, err := st.UnreadState(ctx, reader.Login, convs)
			if err == nil && (s.Unread[room.Name] != 10 || s.Mentions[room.Name] != 10) {
				err = fmt.Errorf("unread %v, mentions %v, want 10 and 10", s.Unread, s.Mentions)
			}
			return err
		})
	})
}

// saveAll saves drafted messages, 32 at a time.
func saveAll(t *testing.T, st *store.Store, in chat.Place, ms []chat.Message) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, m := range ms {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := st.SaveMessage(context.Background(), in, m); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

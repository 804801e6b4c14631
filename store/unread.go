// This file owns unread state: each person's read marker per conversation,
// each conversation's head (its latest message id), and the unread counts
// derived from them. Nothing here is counted up and down: a count is read
// from the messages newer than the marker, so a retried or reordered write
// can never make it drift (the 2010 messenger's counters did).

package store

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	// Both writes carry USING TIMESTAMP = the id's own time, and write only
	// that one column: Cassandra keeps the cell with the highest write
	// timestamp, so a late, older value loses to a newer one whatever order
	// they arrive in, with no read first and no LWT.
	updateMarker      = `UPDATE read_markers USING TIMESTAMP ? SET marker = ? WHERE login = ? AND conversation = ?`
	selectMarkers     = `SELECT conversation, marker, mention FROM read_markers WHERE login = ?`
	updateMentionHead = `UPDATE read_markers USING TIMESTAMP ? SET mention = ? WHERE login = ? AND conversation = ?`
	selectMarker      = `SELECT marker, level FROM read_markers WHERE login = ? AND conversation = ?`
	updateHead        = `UPDATE conversation_heads USING TIMESTAMP ? SET head = ? WHERE conversation = ?`
	selectHeads       = `SELECT conversation, head FROM conversation_heads WHERE conversation IN ?`

	selectUnread = `SELECT author, system_message FROM chat_room_messages
		WHERE room_name = ? AND time_bucket = ? AND message_id > ? LIMIT ?`
	selectBucketsBetween = `SELECT time_bucket FROM messages_bucket
		WHERE room_name = ? AND time_bucket >= ? AND time_bucket <= ?`

	// MaxUnread is where a count stops (chat.MaxUnread).
	MaxUnread = chat.MaxUnread
	// unreadScan bounds the rows one count reads; own and system messages
	// are read and skipped, so it is larger than MaxUnread. A count fetches
	// them a page at a time and stops at MaxUnread, so it reads about
	// MaxUnread rows when the messages are others'.
	unreadScan = 1000
)

// unknownStart stands for the start of a conversation whose start the
// caller does not have (a sidebar knows its rooms' names only): before any
// message this project can have written.
var unknownStart = time.Unix(0, 0)

// writeTime is the write timestamp that makes a marker or head monotonic:
// the id's own time in microseconds.
func writeTime(id chat.ID) int64 { return id.Time().UnixMicro() }

// MarkRead moves login's read marker in conversation up to the message id
// upTo. An older upTo than the stored marker changes nothing.
func (s *Store) MarkRead(ctx context.Context, login, conversation string, upTo chat.ID) error {
	return s.exec(ctx, "mark read", updateMarker, writeTime(upTo), gocql.UUID(upTo), login, conversation)
}

// ReadMarkers returns login's markers and mention heads, in one partition
// read.
func (s *Store) ReadMarkers(ctx context.Context, login string) (chat.Markers, error) {
	q, err := s.query(ctx, selectMarkers, login)
	if err != nil {
		return chat.Markers{}, err
	}
	m := chat.Markers{Read: map[string]chat.ID{}, Mention: map[string]chat.ID{}}
	iter := q.Iter()
	var (
		conv            string
		marker, mention chat.ID
	)
	for iter.Scan(&conv, (*gocql.UUID)(&marker), (*gocql.UUID)(&mention)) {
		if marker != (chat.ID{}) {
			m.Read[conv] = marker
		}
		if mention != (chat.ID{}) {
			m.Mention[conv] = mention
		}
	}
	if err := iter.Close(); err != nil {
		return chat.Markers{}, s.fail("read markers of "+login, err)
	}
	return m, nil
}

// Markers returns login's read marker in every conversation that has one,
// in one partition read.
func (s *Store) Markers(ctx context.Context, login string) (map[string]chat.ID, error) {
	m, err := s.ReadMarkers(ctx, login)
	return m.Read, err
}

// idsByConversation runs a query of (conversation, id) rows into a map.
func (s *Store) idsByConversation(ctx context.Context, op, stmt string, values ...any) (map[string]chat.ID, error) {
	q, err := s.query(ctx, stmt, values...)
	if err != nil {
		return nil, err
	}
	out := map[string]chat.ID{}
	iter := q.Iter()
	var (
		conv string
		id   chat.ID
	)
	for iter.Scan(&conv, (*gocql.UUID)(&id)) {
		out[conv] = id
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail(op, err)
	}
	return out, nil
}

// Marker returns login's read marker in conversation, or the zero UUID if
// login has read nothing there yet.
func (s *Store) Marker(ctx context.Context, login, conversation string) (chat.ID, error) {
	id, _, err := s.MarkerAndLevel(ctx, login, conversation)
	return id, err
}

// MarkerAndLevel is login's marker in conversation (zero if none) and
// their level there, in one read of one row.
func (s *Store) MarkerAndLevel(ctx context.Context, login, conversation string) (chat.ID, chat.Level, error) {
	q, err := s.query(ctx, selectMarker, login, conversation)
	if err != nil {
		return chat.ID{}, "", err
	}
	var (
		id    chat.ID
		level string
	)
	if err := q.Scan((*gocql.UUID)(&id), &level); err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return chat.ID{}, "", s.fail("read marker of "+login, err)
	}
	if level == "" {
		return id, chat.DefaultLevel(conversation), nil
	}
	return id, chat.Level(level), nil
}

// setHead records id as conversation's latest message, unless a newer one
// is already recorded.
func (s *Store) setHead(ctx context.Context, conversation string, id chat.ID) error {
	return s.exec(ctx, "set head of "+conversation, updateHead, writeTime(id), gocql.UUID(id), conversation)
}

// Heads returns the latest message id of each of the conversations that has
// one, in one query.
func (s *Store) Heads(ctx context.Context, conversations []string) (map[string]chat.ID, error) {
	if len(conversations) == 0 {
		return map[string]chat.ID{}, nil
	}
	return s.idsByConversation(ctx, "read heads", selectHeads, conversations)
}

// UnreadCount is how many messages of conversation after the marker (and
// after since, the conversation's start) were written by someone other
// than login and are not system messages; it stops at MaxUnread. A zero
// since means the start is not known: the marker alone bounds the count
// (a deleted room's messages are deleted with it). With the
// conversation's head known (non-zero), the day of the head is counted
// first, with one single-partition query, which is the whole count when
// the marker is on that day or the count is full; otherwise (and with no
// head) the older buckets down to the marker's day are listed and counted
// (see walkBuckets). Rows are fetched a page of the count still wanted at
// a time, so a count reads about MaxUnread rows at most (more only where
// login's own or system messages are skipped, at most unreadScan per
// bucket), however many messages follow the marker.
func (s *Store) UnreadCount(ctx context.Context, login, conversation string, since time.Time, marker, head chat.ID) (int, error) {
	if since.IsZero() {
		since = unknownStart
	}
	after := marker
	if floor := chat.MinIDAt(since.Add(-time.Millisecond)); marker == (chat.ID{}) || floor.After(marker) {
		after = floor
	}
	from, upTo := chat.BucketOf(after), math.MaxInt32 // the buckets the listing names
	var first []int
	if head != (chat.ID{}) {
		if !head.After(after) {
			return 0, nil
		}
		first, upTo = []int{chat.BucketOf(head)}, chat.BucketOf(head)-1
	}
	var list func() (*gocql.Query, error)
	if from <= upTo {
		list = func() (*gocql.Query, error) { return s.query(ctx, selectBucketsBetween, conversation, from, upTo) }
	}
	count, scanned := 0, 0
	err := walkBuckets(s, conversation, first, list,
		func() int {
			if scanned >= unreadScan {
				return 0
			}
			return MaxUnread - count
		},
		func(bucket, want int) (tally, error) {
			q, err := s.query(ctx, selectUnread, conversation, bucket, gocql.UUID(after), unreadScan-scanned)
			if err != nil {
				return tally{}, err
			}
			// Pages of the count still wanted, each fetched only when the
			// one before is used up: rows of login's own or of system
			// messages cost a page more, not a scan of the bucket.
			return s.countUnread(q.PageSize(want).Prefetch(0).Iter(), login, conversation, want)
		},
		func(t tally) { count, scanned = min(count+t.count, MaxUnread), scanned+t.scanned })
	return count, err
}

// tally is what countUnread found in one bucket.
type tally struct{ count, scanned int }

// countUnread counts the rows of iter (author, system_message) that are
// neither login's nor system messages, stopping at limit; it also returns
// how many rows it read.
func (s *Store) countUnread(iter *gocql.Iter, login, conversation string, limit int) (tally, error) {
	var (
		t      tally
		author chat.UserRef
		system bool
	)
	for t.count < limit && iter.Scan(&author, &system) {
		t.scanned++
		if !system && author.Login != login {
			t.count++
		}
	}
	if err := iter.Close(); err != nil {
		return tally{}, s.fail("count unread in "+conversation, err)
	}
	return t, nil
}

// Unread returns login's unread count in each of conversations (mapped to
// when each started): one read of the markers and one of the heads, then a
// bounded count, concurrently, for only those whose head is past the marker.
// Conversations with nothing unread are in the map with 0.
func (s *Store) Unread(ctx context.Context, login string, conversations map[string]time.Time) (map[string]int, error) {
	st, err := s.UnreadState(ctx, login, conversations)
	return st.Unread, err
}

// UnreadState is Unread and, from the same markers, the unread mentions in
// those conversations. The markers (one partition) and the heads (one IN
// query) are read at once, then see CountUnread.
func (s *Store) UnreadState(ctx context.Context, login string, conversations map[string]time.Time) (chat.UnreadState, error) {
	ids := make([]string, 0, len(conversations))
	for c := range conversations {
		ids = append(ids, c)
	}
	var (
		markers    chat.Markers
		heads      map[string]chat.ID
		merr, herr error
		wg         sync.WaitGroup
	)
	wg.Add(2)
	go func() { defer wg.Done(); markers, merr = s.ReadMarkers(ctx, login) }()
	go func() { defer wg.Done(); heads, herr = s.Heads(ctx, ids) }()
	wg.Wait()
	if err := errors.Join(merr, herr); err != nil {
		return chat.UnreadState{}, err
	}
	return s.CountUnread(ctx, login, markers, heads, conversations, "")
}

// CountUnread derives login's unread state in conversations (mapped to
// when each started) from their markers and the conversations' heads,
// read by the caller (a DM's head is its list entry's last message). Only
// a conversation whose head is past its marker is counted, concurrently,
// each bounded; the mentions are read only if a mention head is past its
// marker, and only those after the oldest such marker. open, if set, is the conversation the page
// shows and marks read: it is not counted, and shows 0.
func (s *Store) CountUnread(ctx context.Context, login string, markers chat.Markers, heads map[string]chat.ID, conversations map[string]time.Time, open string) (chat.UnreadState, error) {
	out := make(map[string]int, len(conversations))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		first    error
		mentions bool
		// The oldest marker of a conversation with an unread mention: the
		// mentions read below are those after it.
		mentionsAfter chat.ID
	)
	for c := range conversations {
		out[c] = 0 // before any count runs: the goroutines below write it too
	}
	for c := range conversations {
		if c == open {
			continue
		}
		if markers.UnreadMention(c) {
			if m := markers.Read[c]; !mentions || mentionsAfter.After(m) {
				mentionsAfter = m
			}
			mentions = true
		}
		head, ok := heads[c]
		marker := markers.Read[c]
		if !ok || (marker != chat.ID{} && !head.After(marker)) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := s.UnreadCount(ctx, login, c, conversations[c], marker, head)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				first = err
				return
			}
			out[c] = n
		}()
	}
	var recent []mentionRef
	if mentions {
		var err error
		if recent, err = s.recentMentions(ctx, login, mentionsAfter); err != nil {
			wg.Wait()
			return chat.UnreadState{}, err
		}
	}
	wg.Wait()
	if first != nil {
		return chat.UnreadState{}, first
	}
	st := chat.UnreadState{Unread: out, Mentions: countMentions(recent, markers.Read, conversations)}
	delete(st.Mentions, open)
	return st, nil
}

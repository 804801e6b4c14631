// This file owns unread state: each person's read marker per conversation,
// each conversation's head (its latest message id), and the unread counts
// derived from them. Nothing here is counted up and down: a count is read
// from the messages newer than the marker, so a retried or reordered write
// can never make it drift (the 2010 messenger's counters did).
package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gocql/gocql"
)

const (
	// Both writes carry USING TIMESTAMP = the id's own time, and write only
	// that one column: Cassandra keeps the cell with the highest write
	// timestamp, so a late, older value loses to a newer one whatever order
	// they arrive in, with no read first and no LWT.
	updateMarker  = `UPDATE read_markers USING TIMESTAMP ? SET marker = ? WHERE login = ? AND conversation = ?`
	selectMarkers = `SELECT conversation, marker FROM read_markers WHERE login = ?`
	selectMarker  = `SELECT marker FROM read_markers WHERE login = ? AND conversation = ?`
	updateHead    = `UPDATE conversation_heads USING TIMESTAMP ? SET head = ? WHERE conversation = ?`
	selectHeads   = `SELECT conversation, head FROM conversation_heads WHERE conversation IN ?`

	selectUnread = `SELECT author, system_message FROM chat_room_messages
		WHERE room_name = ? AND time_bucket = ? AND message_id > ? LIMIT ?`

	// MaxUnread is where a count stops: more is shown as "99+".
	MaxUnread = 100
	// unreadScan bounds the rows one count reads; own and system messages
	// are read and skipped, so it is larger than MaxUnread.
	unreadScan = 1000
)

// unknownStart stands for the start of a conversation whose start the
// caller does not have (a sidebar knows its rooms' names only): before any
// message this project can have written.
var unknownStart = time.Unix(0, 0)

// writeTime is the write timestamp that makes a marker or head monotonic:
// the id's own time in microseconds.
func writeTime(id gocql.UUID) int64 { return id.Time().UnixMicro() }

// MarkRead moves login's read marker in conversation up to the message id
// upTo. An older upTo than the stored marker changes nothing.
func (s *Store) MarkRead(ctx context.Context, login, conversation string, upTo gocql.UUID) error {
	return s.exec(ctx, "mark read", updateMarker, writeTime(upTo), upTo, login, conversation)
}

// Markers returns login's read marker in every conversation that has one,
// in one partition read.
func (s *Store) Markers(ctx context.Context, login string) (map[string]gocql.UUID, error) {
	return s.idsByConversation(ctx, "read markers of "+login, selectMarkers, login)
}

// idsByConversation runs a query of (conversation, id) rows into a map.
func (s *Store) idsByConversation(ctx context.Context, op, stmt string, values ...any) (map[string]gocql.UUID, error) {
	q, err := s.query(ctx, stmt, values...)
	if err != nil {
		return nil, err
	}
	out := map[string]gocql.UUID{}
	iter := q.Iter()
	var (
		conv string
		id   gocql.UUID
	)
	for iter.Scan(&conv, &id) {
		out[conv] = id
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail(op, err)
	}
	return out, nil
}

// Marker returns login's read marker in conversation, or the zero UUID if
// login has read nothing there yet.
func (s *Store) Marker(ctx context.Context, login, conversation string) (gocql.UUID, error) {
	q, err := s.query(ctx, selectMarker, login, conversation)
	if err != nil {
		return gocql.UUID{}, err
	}
	var id gocql.UUID
	if err := q.Scan(&id); err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return gocql.UUID{}, s.fail("read marker of "+login, err)
	}
	return id, nil
}

// setHead records id as conversation's latest message, unless a newer one
// is already recorded.
func (s *Store) setHead(ctx context.Context, conversation string, id gocql.UUID) error {
	return s.exec(ctx, "set head of "+conversation, updateHead, writeTime(id), id, conversation)
}

// Heads returns the latest message id of each of the conversations that has
// one, in one query.
func (s *Store) Heads(ctx context.Context, conversations []string) (map[string]gocql.UUID, error) {
	if len(conversations) == 0 {
		return map[string]gocql.UUID{}, nil
	}
	return s.idsByConversation(ctx, "read heads", selectHeads, conversations)
}

// UnreadCount is how many messages of conversation after the marker (and
// after since, the conversation's start) were written by someone other
// than login and are not system messages; it stops at MaxUnread. A zero
// since means the start is not known: the marker alone bounds the count
// (a deleted room's messages are deleted with it).
func (s *Store) UnreadCount(ctx context.Context, login, conversation string, since time.Time, marker gocql.UUID) (int, error) {
	if since.IsZero() {
		since = unknownStart
	}
	after := marker
	if floor := gocql.MinTimeUUID(since.Add(-time.Millisecond)); marker == (gocql.UUID{}) || Later(floor, marker) {
		after = floor
	}
	bq, err := s.query(ctx, selectBucketsUp, conversation, bucketOf(after))
	if err != nil {
		return 0, err
	}
	buckets := bq.PageSize(32).Iter()
	count, scanned := 0, 0
	var bucket int
	for count < MaxUnread && scanned < unreadScan && buckets.Scan(&bucket) {
		q, err := s.query(ctx, selectUnread, conversation, bucket, after, unreadScan-scanned)
		if err != nil {
			buckets.Close()
			return 0, err
		}
		iter := q.PageSize(unreadScan).Iter()
		var (
			author UserRef
			system bool
		)
		for count < MaxUnread && iter.Scan(&author, &system) {
			scanned++
			if !system && author.Login != login {
				count++
			}
		}
		if err := iter.Close(); err != nil {
			buckets.Close()
			return 0, s.fail("count unread in "+conversation, err)
		}
	}
	if err := buckets.Close(); err != nil {
		return 0, s.fail("list buckets of "+conversation, err)
	}
	return count, nil
}

// Unread returns login's unread count in each of conversations (mapped to
// when each started): one read of the markers and one of the heads, then a
// bounded count, concurrently, for only those whose head is past the marker.
// Conversations with nothing unread are in the map with 0.
func (s *Store) Unread(ctx context.Context, login string, conversations map[string]time.Time) (map[string]int, error) {
	st, err := s.unreadState(ctx, login, conversations, false)
	return st.Unread, err
}

// UnreadState is a person's unread messages and unread mentions, by
// conversation id.
type UnreadState struct {
	Unread, Mentions map[string]int
}

// UnreadState is Unread and, from the same markers, the unread mentions in
// those conversations (see UnreadMentions). Its statements do not depend
// on how many conversations there are: the markers (one partition), the
// heads (one IN query) and the mentions (two partitions) are read at once,
// then only the unread conversations are counted, concurrently.
func (s *Store) UnreadState(ctx context.Context, login string, conversations map[string]time.Time) (UnreadState, error) {
	return s.unreadState(ctx, login, conversations, true)
}

func (s *Store) unreadState(ctx context.Context, login string, conversations map[string]time.Time, withMentions bool) (UnreadState, error) {
	ids := make([]string, 0, len(conversations))
	for c := range conversations {
		ids = append(ids, c)
	}
	var (
		markers, heads   map[string]gocql.UUID
		recent           []mentionRef
		merr, herr, rerr error
		wg               sync.WaitGroup
	)
	wg.Add(2)
	go func() { defer wg.Done(); markers, merr = s.Markers(ctx, login) }()
	go func() { defer wg.Done(); heads, herr = s.Heads(ctx, ids) }()
	if withMentions {
		wg.Add(1)
		go func() { defer wg.Done(); recent, rerr = s.recentMentions(ctx, login) }()
	}
	wg.Wait()
	if err := errors.Join(merr, herr, rerr); err != nil {
		return UnreadState{}, err
	}
	out := make(map[string]int, len(ids))
	var (
		mu    sync.Mutex
		first error
	)
	// Every key is in the map before the counts start writing to it.
	for _, c := range ids {
		out[c] = 0 // before any count runs: the goroutines below write it too
	}
	for _, c := range ids {
		head, ok := heads[c]
		if !ok || (markers[c] != gocql.UUID{} && !Later(head, markers[c])) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := s.UnreadCount(ctx, login, c, conversations[c], markers[c])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				first = err
				return
			}
			out[c] = n
		}()
	}
	wg.Wait()
	if first != nil {
		return UnreadState{}, first
	}
	st := UnreadState{Unread: out}
	if withMentions {
		st.Mentions = countMentions(recent, markers, conversations)
	}
	return st, nil
}

// This file owns messages: posting into day-bucketed partitions and paging
// through them, newest bucket first, for pages and for live-stream replay.
// Every function here works on a Place, a room or a DM alike (see
// conversations.go): the tables still say room_name, but the key is the
// conversation's id.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"
)

const (
	insertMessage = `INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message, attachment)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	deleteMessage = `DELETE FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	insertBucket  = `INSERT INTO messages_bucket (room_name, time_bucket) VALUES (?, ?)`
	// Buckets between the room's creation and the cursor, newest first.
	selectBucketsDown = `SELECT time_bucket FROM messages_bucket
		WHERE room_name = ? AND time_bucket <= ? AND time_bucket >= ?`
	selectBucketsUp = `SELECT time_bucket FROM messages_bucket
		WHERE room_name = ? AND time_bucket >= ? ORDER BY time_bucket ASC`
	selectMessagesDownIn = `SELECT message_id, author, content, system_message, attachment FROM chat_room_messages
		WHERE room_name = ? AND time_bucket IN ? AND message_id < ? AND message_id > ? ORDER BY message_id DESC LIMIT ?`
	selectMessagesDown = `SELECT message_id, author, content, system_message, attachment FROM chat_room_messages
		WHERE room_name = ? AND time_bucket = ? AND message_id < ? AND message_id > ? LIMIT ?`
	// The LIMIT keeps one replay page to one round trip: with only a page
	// size, the driver would prefetch the next page as this one is read.
	selectMessagesUp = `SELECT message_id, author, content, system_message, attachment FROM chat_room_messages
		WHERE room_name = ? AND time_bucket = ? AND message_id > ? ORDER BY message_id ASC LIMIT ?`
	selectMessageIDsUp = `SELECT message_id FROM chat_room_messages
		WHERE room_name = ? AND time_bucket = ? AND message_id > ? ORDER BY message_id ASC LIMIT ?`

	// MaxContent is the longest message, in characters, after trimming.
	MaxContent = 4000
)

// Message is one chat message. Its id is a timeuuid made by the server,
// which also gives its time and its day bucket.
type Message struct {
	ID gocql.UUID
	// Room is the id of the conversation: a room's name, or a DM's id.
	Room    string
	Author  UserRef
	Content string
	// System marks messages the server writes, such as "X joins the room".
	System bool
	// Attachment is the file the message carries, if any.
	Attachment *AttachmentRef
}

// Time is when the message was posted.
func (m Message) Time() time.Time { return m.ID.Time() }

// CheckContent cleans a message (line ends made "\n", edges trimmed, see
// cleanText) and returns it, or a ValidationError if it is not valid
// UTF-8, holds a control character other than "\n" and "\t", shows
// nothing (only spaces or invisible characters), or is longer than
// MaxContent characters.
func CheckContent(content string) (string, error) {
	content, problem := cleanText(content, contentRule)
	if problem != "" {
		return "", ValidationError{"content": problem}
	}
	return content, nil
}

// PostMessage stores a message by author in room: DraftMessage then
// SaveMessage. It returns ErrNotParticipant unless author takes part in
// room, and a ValidationError for empty or too long content.
func (s *Store) PostMessage(ctx context.Context, in Place, author UserRef, content string) (Message, error) {
	m, err := s.DraftMessage(in, author, content)
	if err != nil {
		return Message{}, err
	}
	return m, s.SaveMessage(ctx, in, m)
}

// DraftMessage checks a message and gives it its id, without storing it;
// ids are made in the order of the calls. It returns ErrNotParticipant
// unless author takes part in room, and a ValidationError for empty or too
// long content.
func (s *Store) DraftMessage(in Place, author UserRef, content string) (Message, error) {
	conv := in.Conversation()
	if !conv.Has(author.Login) {
		return Message{}, fmt.Errorf("store: post in %q by %q: %w", conv.ID, author.Login, ErrNotParticipant)
	}
	content, err := CheckContent(content)
	if err != nil {
		return Message{}, err
	}
	return Message{ID: s.ids.next(s.Now()), Room: conv.ID, Author: author, Content: content}, nil
}

// DraftAttachmentMessage is DraftMessage for a message that carries a
// file: its content may be empty. It returns ErrNotParticipant unless
// author takes part in room, and a ValidationError for content that is
// not valid (see CheckContent) when there is any.
func (s *Store) DraftAttachmentMessage(in Place, author UserRef, content string, file AttachmentRef) (Message, error) {
	conv := in.Conversation()
	if !conv.Has(author.Login) {
		return Message{}, fmt.Errorf("store: post in %q by %q: %w", conv.ID, author.Login, ErrNotParticipant)
	}
	if strings.TrimSpace(content) != "" {
		var err error
		if content, err = CheckContent(content); err != nil {
			return Message{}, err
		}
	} else {
		content = ""
	}
	return Message{ID: s.ids.next(s.Now()), Room: conv.ID, Author: author, Content: content, Attachment: &file}, nil
}

// DraftSystemMessage makes a message written by the server about someone,
// such as "Ada Lovelace joins the room", without storing it.
func (s *Store) DraftSystemMessage(in Place, about UserRef, text string) Message {
	return Message{ID: s.ids.next(s.Now()), Room: in.Conversation().ID, Author: about, Content: text, System: true}
}

// SaveMessage stores a drafted message in its day bucket, recording the
// bucket first so paging can always reach the message, and then moves the
// conversation's head to it.
//
// In a room it then reads the room's row (beside the head's write, so the
// post waits for one round trip more, not two): a room deleted, or
// deleted and created again, since the caller read it loses the message
// again, and SaveMessage returns ErrNotFound. The read comes after the
// insert, so it holds whatever instance deleted the room and whatever its
// caches knew: either the read sees the delete's LWT, or that LWT
// finished after the insert and the delete's clean-up, which runs after
// its LWT, deletes the message with its bucket.
func (s *Store) SaveMessage(ctx context.Context, in Place, m Message) error {
	bucket := bucketOf(m.ID)
	if err := s.recordBucket(ctx, in.Conversation(), bucket); err != nil {
		return err
	}
	// No attachment is left unset, not null: a null would write a tombstone.
	var file any = gocql.UnsetValue
	if m.Attachment != nil {
		file = m.Attachment
	}
	q, err := s.query(ctx, insertMessage, m.Room, bucket, m.ID, m.Author, m.Content, m.System, file)
	if err != nil {
		return err
	}
	if err := q.Exec(); err != nil {
		return s.fail("post message in "+m.Room, err)
	}
	r, isRoom := in.(Room)
	if !isRoom {
		// After the message, so a head never names a message that is not stored.
		return s.setHead(ctx, m.Room, m.ID)
	}
	headSet := make(chan error, 1)
	go func() { headSet <- s.setHead(ctx, m.Room, m.ID) }()
	now, err := s.room(ctx, r.Name, false)
	if err == nil && !now.CreatedAt.Equal(r.CreatedAt) {
		err = fmt.Errorf("store: room %q was deleted and created again: %w", r.Name, ErrNotFound)
	}
	headErr := <-headSet
	if errors.Is(err, ErrNotFound) {
		if derr := s.exec(context.WithoutCancel(ctx), "unpost message in "+m.Room, deleteMessage, m.Room, bucket, m.ID); derr != nil {
			s.log.Warn("store: a message posted in a deleted room is left", "room", m.Room, "id", m.ID, "err", derr)
		}
		return fmt.Errorf("store: post in %q: %w", m.Room, err)
	}
	if err != nil {
		return err
	}
	return headErr
}

// recordBucket writes (conversation, bucket) to messages_bucket before the
// first message of that bucket, so paging can always reach it; the memo
// only saves repeating the write. Its key has the conversation's start, so
// a room deleted and created again under the same name records anew.
func (s *Store) recordBucket(ctx context.Context, conv Conversation, bucket int) error {
	key := fmt.Sprintf("%s\x00%d\x00%d", conv.ID, conv.Since.UnixMilli(), bucket)
	if _, ok := s.knownBuckets.Load(key); ok {
		return nil
	}
	q, err := s.query(ctx, insertBucket, conv.ID, bucket)
	if err != nil {
		return err
	}
	if err := q.Exec(); err != nil {
		return s.fail("record bucket of "+conv.ID, err)
	}
	s.knownBuckets.Store(key, struct{}{})
	return nil
}

// floorOf is an id below every message of conv: messages left behind by
// an earlier room of the same name are never shown.
func floorOf(conv Conversation) gocql.UUID {
	return gocql.MinTimeUUID(conv.Since.Add(-time.Millisecond))
}

// MessagesBefore returns up to n messages of room posted before the
// message id before (the newest ones if before is the zero UUID), oldest
// first, ready to display, and whether older ones exist. The days of the
// last bucketSpan buckets up to before are read in one statement (the
// whole conversation, if it started within them); only if they hold fewer
// than n+1 messages does it walk the older buckets, newest first: one
// query lists them, then one query per bucket.
func (s *Store) MessagesBefore(ctx context.Context, in Place, before gocql.UUID, n int) ([]Message, bool, error) {
	conv := in.Conversation()
	if before == (gocql.UUID{}) {
		before = gocql.MaxTimeUUID(s.Now().Add(time.Hour))
	}
	floor := floorOf(conv)
	newestFirst := make([]Message, 0, n+1)
	recent := recentBuckets(conv.Since, before.Time())
	q, err := s.query(ctx, selectMessagesDownIn, conv.ID, recent, before, floor, n+1)
	if err != nil {
		return nil, false, err
	}
	// ORDER BY across partitions is only allowed without paging; the LIMIT
	// bounds the rows.
	iter := q.PageSize(0).Iter()
	for m, ok := scanMessage(iter, conv.ID); ok; m, ok = scanMessage(iter, conv.ID) {
		newestFirst = append(newestFirst, m)
	}
	if err := iter.Close(); err != nil {
		return nil, false, s.fail("read messages of "+conv.ID, err)
	}
	if oldest := recent[len(recent)-1]; len(newestFirst) <= n && oldest > timeBucket(conv.Since) {
		// Older days may hold more: walk their buckets.
		bq, err := s.query(ctx, selectBucketsDown, conv.ID, oldest-1, timeBucket(conv.Since))
		if err != nil {
			return nil, false, err
		}
		buckets := bq.PageSize(32).Iter()
		var bucket int
		for len(newestFirst) <= n && buckets.Scan(&bucket) {
			q, err := s.query(ctx, selectMessagesDown, conv.ID, bucket, before, floor, n+1-len(newestFirst))
			if err != nil {
				buckets.Close()
				return nil, false, err
			}
			iter := q.Iter()
			for m, ok := scanMessage(iter, conv.ID); ok; m, ok = scanMessage(iter, conv.ID) {
				newestFirst = append(newestFirst, m)
			}
			if err := iter.Close(); err != nil {
				buckets.Close()
				return nil, false, s.fail("read messages of "+conv.ID, err)
			}
		}
		if err := buckets.Close(); err != nil {
			return nil, false, s.fail("list buckets of "+conv.ID, err)
		}
	}
	more := len(newestFirst) > n
	if more {
		newestFirst = newestFirst[:n]
	}
	return oldestFirst(newestFirst), more, nil
}

// bucketSpan is how many day buckets one statement names with IN: a read
// of the last few days is one round trip instead of a bucket list and a
// query per day.
const bucketSpan = 8

// recentBuckets are the day buckets from the day of upTo back, newest
// first: bucketSpan of them, or fewer if since (the conversation's start)
// is nearer. A bucket number only compares as a day (YYYYMMDD), so the
// older buckets are walked from oldest-1 downwards: no day is skipped.
func recentBuckets(since, upTo time.Time) []int {
	day := upTo.UTC()
	day = time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)
	first := timeBucket(since)
	out := make([]int, 0, bucketSpan)
	for len(out) < bucketSpan {
		b := timeBucket(day)
		out = append(out, b)
		if b <= first {
			break
		}
		day = day.AddDate(0, 0, -1)
	}
	return out
}

// MessagesAfter returns the messages of room posted after the message id
// after, oldest first, at most limit of them, and whether more follow. The
// live stream replays a backlog with it one page at a time (the next page
// starts after the last id of this one), so a replay never holds more
// than a page in memory.
func (s *Store) MessagesAfter(ctx context.Context, in Place, after gocql.UUID, limit int) ([]Message, bool, error) {
	conv := in.Conversation()
	if floor := floorOf(conv); after.Time().Before(floor.Time()) {
		after = floor
	}
	bq, err := s.query(ctx, selectBucketsUp, conv.ID, bucketOf(after))
	if err != nil {
		return nil, false, err
	}
	buckets := bq.PageSize(32).Iter()
	out := make([]Message, 0, min(limit+1, 1000))
	var bucket int
	for len(out) <= limit && buckets.Scan(&bucket) {
		q, err := s.query(ctx, selectMessagesUp, conv.ID, bucket, after, limit+1-len(out))
		if err != nil {
			buckets.Close()
			return nil, false, err
		}
		iter := q.PageSize(min(limit+1, 1000)).Iter()
		for m, ok := scanMessage(iter, conv.ID); ok; m, ok = scanMessage(iter, conv.ID) {
			out = append(out, m)
		}
		if err := iter.Close(); err != nil {
			buckets.Close()
			return nil, false, s.fail("replay messages of "+conv.ID, err)
		}
	}
	if err := buckets.Close(); err != nil {
		return nil, false, s.fail("list buckets of "+conv.ID, err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// CountMessagesAfter counts the messages of room posted after the message
// id after, stopping at limit: the live stream asks it whether a backlog is
// small enough to replay before it sends any of it. It reads ids only.
func (s *Store) CountMessagesAfter(ctx context.Context, in Place, after gocql.UUID, limit int) (int, error) {
	conv := in.Conversation()
	if floor := floorOf(conv); after.Time().Before(floor.Time()) {
		after = floor
	}
	bq, err := s.query(ctx, selectBucketsUp, conv.ID, bucketOf(after))
	if err != nil {
		return 0, err
	}
	buckets := bq.PageSize(32).Iter()
	n, bucket := 0, 0
	for n < limit && buckets.Scan(&bucket) {
		q, err := s.query(ctx, selectMessageIDsUp, conv.ID, bucket, after, limit-n)
		if err != nil {
			buckets.Close()
			return 0, err
		}
		iter := q.PageSize(1000).Iter()
		var id gocql.UUID
		for iter.Scan(&id) {
			n++
		}
		if err := iter.Close(); err != nil {
			buckets.Close()
			return 0, s.fail("count messages of "+conv.ID, err)
		}
	}
	if err := buckets.Close(); err != nil {
		return 0, s.fail("list buckets of "+conv.ID, err)
	}
	return n, nil
}

func scanMessage(iter *gocql.Iter, room string) (Message, bool) {
	m := Message{Room: room}
	ok := iter.Scan(&m.ID, &m.Author, &m.Content, &m.System, &m.Attachment)
	return m, ok
}

// oldestFirst reverses a newest-first slice in place: the one place where
// messages are put in display order.
func oldestFirst(ms []Message) []Message {
	for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
		ms[i], ms[j] = ms[j], ms[i]
	}
	return ms
}

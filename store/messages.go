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
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertMessage = `INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message, attachment)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	// markWriter marks a write of messages in their day's partition (see
	// insertMessages).
	markWriter    = `UPDATE chat_room_messages USING TIMESTAMP ? SET writers[?] = ? WHERE room_name = ? AND time_bucket = ?`
	selectWriters = `SELECT writers FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? LIMIT 1`
	deleteMessage = `DELETE FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	insertBucket  = `INSERT INTO messages_bucket (room_name, time_bucket) VALUES (?, ?)`
	// Buckets between the room's creation and the cursor, newest first.
	// Every read of messages names one bucket: never IN over buckets.
	selectBucketsDown = `SELECT time_bucket FROM messages_bucket
		WHERE room_name = ? AND time_bucket <= ? AND time_bucket >= ?`
	selectBucketsUp = `SELECT time_bucket FROM messages_bucket
		WHERE room_name = ? AND time_bucket >= ? ORDER BY time_bucket ASC`
	selectMessagesDown = `SELECT message_id, author, content, system_message, attachment, edited FROM chat_room_messages
		WHERE room_name = ? AND time_bucket = ? AND message_id < ? AND message_id > ? LIMIT ?`
	// The LIMIT keeps one replay page to one round trip: with only a page
	// size, the driver would prefetch the next page as this one is read.
	selectMessagesUp = `SELECT message_id, author, content, system_message, attachment, edited FROM chat_room_messages
		WHERE room_name = ? AND time_bucket = ? AND message_id > ? ORDER BY message_id ASC LIMIT ?`
	selectMessageIDsUp = `SELECT message_id FROM chat_room_messages
		WHERE room_name = ? AND time_bucket = ? AND message_id > ? ORDER BY message_id ASC LIMIT ?`
)

// PostMessage stores a message by author in room: DraftMessage then
// SaveMessage. It returns chat.ErrNotParticipant unless author takes part in
// room, and a chat.ValidationError for empty or too long content.
func (s *Store) PostMessage(ctx context.Context, in chat.Place, author chat.UserRef, content string) (chat.Message, error) {
	m, err := s.DraftMessage(in, author, content)
	if err != nil {
		return chat.Message{}, err
	}
	return m, s.SaveMessage(ctx, in, m)
}

// DraftMessage checks a message and gives it its id, without storing it;
// ids are made in the order of the calls. It returns chat.ErrNotParticipant
// unless author takes part in room, and a chat.ValidationError for empty or too
// long content.
func (s *Store) DraftMessage(in chat.Place, author chat.UserRef, content string) (chat.Message, error) {
	conv := in.Conversation()
	if !conv.Has(author.Login) {
		return chat.Message{}, fmt.Errorf("store: post in %q by %q: %w", conv.ID, author.Login, chat.ErrNotParticipant)
	}
	content, err := chat.CheckContent(content)
	if err != nil {
		return chat.Message{}, err
	}
	return chat.Message{ID: s.ids.Next(s.Now()), Room: conv.ID, Author: author, Content: content}, nil
}

// DraftAttachmentMessage is DraftMessage for a message that carries a
// file: its content may be empty. It returns chat.ErrNotParticipant unless
// author takes part in room, and a chat.ValidationError for content that is
// not valid (see CheckContent) when there is any.
func (s *Store) DraftAttachmentMessage(in chat.Place, author chat.UserRef, content string, file chat.AttachmentRef) (chat.Message, error) {
	conv := in.Conversation()
	if !conv.Has(author.Login) {
		return chat.Message{}, fmt.Errorf("store: post in %q by %q: %w", conv.ID, author.Login, chat.ErrNotParticipant)
	}
	content, err := chat.CheckCaption(content)
	if err != nil {
		return chat.Message{}, err
	}
	return chat.Message{ID: s.ids.Next(s.Now()), Room: conv.ID, Author: author, Content: content, Attachment: &file}, nil
}

// DraftSystemMessage makes a message written by the server about someone,
// such as "Ada Lovelace joins the room", without storing it.
func (s *Store) DraftSystemMessage(in chat.Place, about chat.UserRef, text string) chat.Message {
	return chat.Message{ID: s.ids.Next(s.Now()), Room: in.Conversation().ID, Author: about, Content: text, System: true}
}

// SaveMessage stores a drafted message in its day bucket, recording the
// bucket first so paging can always reach the message, and then moves the
// conversation's head to it and counts the change. The posts of one
// conversation that arrive while a write of its messages is under way
// share the next one (see postGrouped): one statement for their messages,
// one for the head, one for the count.
//
// In a room it then reads the room's creation time and the author's entry
// (beside the head's write, so the post waits for one round trip more, not
// two): a room deleted, or deleted and created again, since the caller
// read it loses the message again, and SaveMessage returns chat.ErrNotFound; an
// author removed (or gone) since loses it too, with chat.ErrNotParticipant, so
// no message is stored after a removal is acknowledged. The read comes after the
// insert, so it holds whatever instance deleted the room and whatever its
// caches knew: either the read sees the delete's LWT, or that LWT
// finished after the insert and the delete's clean-up, which runs after
// its LWT, deletes the message with its bucket.
func (s *Store) SaveMessage(ctx context.Context, in chat.Place, m chat.Message) error {
	return s.saveMessage(ctx, in, m, true)
}

// SaveFencedMessage stores a drafted message as SaveMessage does, without
// the read after the write: three statements, no read, shared by the
// posts that go in one group. It is for a caller
// whose check of the room is kept by a fence (live/fence): every change
// that takes the right to post away waits for the caller's write before it
// is acknowledged. A caller whose fence did not hold calls ConfirmPost.
func (s *Store) SaveFencedMessage(ctx context.Context, in chat.Place, m chat.Message) error {
	return s.saveMessage(ctx, in, m, false)
}

func (s *Store) saveMessage(ctx context.Context, in chat.Place, m chat.Message, check bool) error {
	// With the posts of the conversation that come meanwhile (see
	// postGrouped); the check reads after the message is stored, beside
	// the head and the count.
	var confirm func() error
	if r, isRoom := chat.RoomOf(in); isRoom && check {
		confirm = func() error { return s.ConfirmPost(ctx, r, m) }
	}
	return s.postGrouped(ctx, in.Conversation(), m, confirm)
}

// ConfirmPost reads the room's creation time and the author's entry after
// m was stored in r: if the room was deleted (or deleted and created
// again) since the caller read it, or the author removed, the message is
// taken back and chat.ErrNotFound or chat.ErrNotParticipant returned (see
// SaveMessage).
func (s *Store) ConfirmPost(ctx context.Context, r chat.Room, m chat.Message) error {
	created, member, err := s.standing(ctx, r.Name, r.CreatedAt, m.Author.Login)
	switch {
	case errors.Is(err, chat.ErrNotFound):
		// Deleted since: taken back below.
	case err != nil:
		return err
	case !created.Equal(r.CreatedAt):
		err = fmt.Errorf("store: room %q was deleted and created again: %w", r.Name, chat.ErrNotFound)
	case !member && !m.System:
		// Removed (or gone) since the caller's check: the removal's LWT
		// applied before this read, so the message is taken back.
		err = fmt.Errorf("store: post in %q by %q: %w", r.Name, m.Author.Login, chat.ErrNotParticipant)
	default:
		return nil
	}
	if derr := s.exec(context.WithoutCancel(ctx), "unpost message in "+m.Room, deleteMessage, m.Room, chat.BucketOf(m.ID), gocql.UUID(m.ID)); derr != nil {
		s.log.Warn("store: a message posted in a deleted room is left", "room", m.Room, "id", m.ID, "err", derr)
	} else if cerr := s.bumpVersion(context.WithoutCancel(ctx), m.Room); cerr != nil {
		s.log.Warn("store: a message taken back is not counted", "room", m.Room, "id", m.ID, "err", cerr)
	}
	return fmt.Errorf("store: post in %q: %w", m.Room, err)
}

// recordBucket writes (conversation, bucket) to messages_bucket before the
// first message of that bucket, so paging can always reach it; the memo
// only saves repeating the write. Its key has the conversation's start, so
// a room deleted and created again under the same name records anew.
func (s *Store) recordBucket(ctx context.Context, conv chat.Conversation, bucket int) error {
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
	s.months.forget(conv) // its search months may have one more
	return nil
}

// floorOf is an id below every message of conv: messages left behind by
// an earlier room of the same name are never shown.
func floorOf(conv chat.Conversation) chat.ID {
	return chat.MinIDAt(conv.Since.Add(-time.Millisecond))
}

// MessagesBefore returns up to n messages of room posted before the
// message id before (the newest ones if before is the zero UUID), oldest
// first, ready to display with their reactions (one more statement per
// day the page spans, see addReactions), and whether older ones exist. It reads the day
// bucket of before with one single-partition query of at most n+1 rows,
// which is the whole page whenever that day holds a page; only a short day
// walks the older buckets listed in messages_bucket (see walkBuckets). A
// page therefore reads about the rows it returns, however many messages
// its day holds: never an IN over days with ORDER BY, which Cassandra
// answers by reading every row of those days (docs/data-model.md, rule 14).
func (s *Store) MessagesBefore(ctx context.Context, in chat.Place, before chat.ID, n int) ([]chat.Message, bool, error) {
	conv := in.Conversation()
	now := s.Now()
	if before == (chat.ID{}) {
		// An hour ahead, for messages of an instance whose clock is ahead.
		before = chat.MaxIDAt(now.Add(time.Hour))
	}
	floor := floorOf(conv)
	start := chat.TimeBucket(conv.Since)
	to := before.Time()
	if now.Before(to) {
		to = now
	}
	first := daysDown(before.Time(), to, start)
	newestFirst := make([]chat.Message, 0, n+1)
	var list func() (*gocql.Query, error)
	if len(first) > 0 && first[len(first)-1] > start {
		list = func() (*gocql.Query, error) {
			return s.query(ctx, selectBucketsDown, conv.ID, first[len(first)-1]-1, start)
		}
	}
	err := walkBuckets(s, conv.ID, first, list,
		func() int { return n + 1 - len(newestFirst) },
		func(bucket, limit int) ([]chat.Message, error) {
			q, err := s.query(ctx, selectMessagesDown, conv.ID, bucket, gocql.UUID(before), gocql.UUID(floor), limit)
			if err != nil {
				return nil, err
			}
			return s.scanMessages(q.PageSize(limit).Iter(), conv.ID, "read messages of ")
		},
		func(ms []chat.Message) { newestFirst = append(newestFirst, ms...) })
	if err != nil {
		return nil, false, err
	}
	more := len(newestFirst) > n
	if more {
		newestFirst = newestFirst[:n]
	}
	page := oldestFirst(newestFirst)
	if err := s.addReactions(ctx, conv, page); err != nil {
		return nil, false, err
	}
	return page, more, nil
}

// bucketSpan is the most buckets a walk reads at once.
const bucketSpan = 8

// walkBuckets reads a conversation's day buckets in the order of a walk
// (newest first for pages and counts, oldest first for replay) until it
// has what it wants, one single-partition query per bucket. It reads the
// buckets of first at once (usually one: the day a page starts on); then,
// only while want() is above zero, the buckets that list names (nil: none
// further), in waves of 2, 4 and then bucketSpan buckets read
// concurrently, so a quiet conversation with a few messages a day takes a
// few round trips, not one per day. Every read of a wave asks for at most
// want() rows, as it stood when the wave began: a walk reads at most
// bucketSpan times the rows it still wants, whatever the size of the
// buckets. keep gets each bucket's result in the order of the walk.
func walkBuckets[T any](s *Store, conv string, first []int, list func() (*gocql.Query, error),
	want func() int, read func(bucket, limit int) (T, error), keep func(T)) (err error) {
	var buckets *gocql.Iter
	defer func() {
		if buckets == nil {
			return
		}
		if cerr := buckets.Close(); cerr != nil && err == nil {
			err = s.fail("list buckets of "+conv, cerr)
		}
	}()
	wave, size := first, 2
	for {
		limit := want()
		if limit <= 0 {
			return nil
		}
		if len(wave) > 0 {
			results, errs := make([]T, len(wave)), make([]error, len(wave))
			if len(wave) == 1 {
				results[0], errs[0] = read(wave[0], limit)
			} else {
				var wg sync.WaitGroup
				for i, bucket := range wave {
					wg.Add(1)
					go func() {
						defer wg.Done()
						results[i], errs[i] = read(bucket, limit)
					}()
				}
				wg.Wait()
			}
			if err := errors.Join(errs...); err != nil {
				return err
			}
			for _, r := range results {
				keep(r)
			}
		}
		if list == nil || want() <= 0 {
			return nil
		}
		if buckets == nil {
			q, err := list()
			if err != nil {
				return err
			}
			buckets = q.PageSize(32).Iter()
		}
		wave = make([]int, 0, size)
		var bucket int
		for len(wave) < size && buckets.Scan(&bucket) {
			wave = append(wave, bucket)
		}
		if len(wave) == 0 {
			return nil
		}
		size = min(2*size, bucketSpan)
	}
}

// daysDown are the day buckets from the day of from down to the day of
// to, newest first, none before the bucket start: what a walk down from
// from reads first. That is one day, or two when the newest page is read
// in the last hour of a day (it reads an hour ahead of the clock), or
// none when from is before start.
func daysDown(from, to time.Time, start int) []int {
	var out []int
	last := max(chat.TimeBucket(to), start)
	for day := from.UTC(); chat.TimeBucket(day) >= last; day = day.AddDate(0, 0, -1) {
		out = append(out, chat.TimeBucket(day))
	}
	return out
}

// MessagesAfter returns the messages of room posted after the message id
// after, oldest first, at most limit of them, and whether more follow. The
// live stream replays a backlog with it one page at a time (the next page
// starts after the last id of this one), so a replay never holds more
// than a page in memory. It reads the day of after first, and lists the
// later days only if that one is short (see walkBuckets).
func (s *Store) MessagesAfter(ctx context.Context, in chat.Place, after chat.ID, limit int) ([]chat.Message, bool, error) {
	conv := in.Conversation()
	after = fromStart(conv, after)
	out := make([]chat.Message, 0, min(limit+1, 1000))
	err := walkUp(ctx, s, conv, after, func() int { return limit + 1 - len(out) },
		func(bucket, want int) ([]chat.Message, error) {
			q, err := s.query(ctx, selectMessagesUp, conv.ID, bucket, gocql.UUID(after), want)
			if err != nil {
				return nil, err
			}
			return s.scanMessages(q.PageSize(min(want, 1000)).Iter(), conv.ID, "replay messages of ")
		},
		func(ms []chat.Message) { out = append(out, ms...) })
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// CountMessagesAfter counts the messages of room posted after the message
// id after, stopping at limit: the live stream asks it whether a backlog is
// small enough to replay before it sends any of it. It reads ids only.
func (s *Store) CountMessagesAfter(ctx context.Context, in chat.Place, after chat.ID, limit int) (int, error) {
	conv := in.Conversation()
	after = fromStart(conv, after)
	n := 0
	err := walkUp(ctx, s, conv, after, func() int { return limit - n },
		func(bucket, want int) (int, error) {
			q, err := s.query(ctx, selectMessageIDsUp, conv.ID, bucket, gocql.UUID(after), want)
			if err != nil {
				return 0, err
			}
			iter := q.PageSize(min(want, 1000)).Iter()
			got := 0
			var id chat.ID
			for iter.Scan((*gocql.UUID)(&id)) {
				got++
			}
			if err := iter.Close(); err != nil {
				return 0, s.fail("count messages of "+conv.ID, err)
			}
			return got, nil
		},
		func(got int) { n += got })
	return min(n, limit), err
}

// fromStart is after, or the conversation's floor if after is older.
func fromStart(conv chat.Conversation, after chat.ID) chat.ID {
	if floor := floorOf(conv); after.Time().Before(floor.Time()) {
		return floor
	}
	return after
}

// walkUp walks conv's buckets oldest first from the day of after: that day
// first, and the later listed days only if it is short. No day after the
// clock's next hour can hold a message, so from that day on nothing is
// listed.
func walkUp[T any](ctx context.Context, s *Store, conv chat.Conversation, after chat.ID,
	want func() int, read func(bucket, limit int) (T, error), keep func(T)) error {
	from := chat.BucketOf(after)
	var list func() (*gocql.Query, error)
	if from < chat.TimeBucket(s.Now().Add(time.Hour)) {
		list = func() (*gocql.Query, error) { return s.query(ctx, selectBucketsUp, conv.ID, from+1) }
	}
	return walkBuckets(s, conv.ID, []int{from}, list, want, read, keep)
}

// scanMessages reads every message of iter; op names the read in errors.
func (s *Store) scanMessages(iter *gocql.Iter, conv, op string) ([]chat.Message, error) {
	var out []chat.Message
	for m, ok := scanMessage(iter, conv); ok; m, ok = scanMessage(iter, conv) {
		out = append(out, m)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail(op+conv, err)
	}
	return out, nil
}

// scanMessage reads the next message of iter, from a SELECT of
// message_id, author, content, system_message, attachment, edited. It
// passes over a row with
// no author: what an edit that raced the message's delete leaves behind
// (its update wrote the content alone).
func scanMessage(iter *gocql.Iter, room string) (chat.Message, bool) {
	for {
		m := chat.Message{Room: room}
		var edited *gocql.UUID
		var file *attachmentUDT
		if !iter.Scan((*gocql.UUID)(&m.ID), &m.Author, &m.Content, &m.System, &file, &edited) {
			return m, false
		}
		m.Attachment = file.ref()
		if m.Author.Login == "" {
			continue
		}
		m.Edited = chat.ID(deref(edited))
		return m, true
	}
}

// oldestFirst reverses a newest-first slice in place: the one place where
// messages are put in display order.
func oldestFirst(ms []chat.Message) []chat.Message {
	for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
		ms[i], ms[j] = ms[j], ms[i]
	}
	return ms
}

// This file owns what happens to a message after it is posted: edits,
// deletes and reactions, and the conversation's change log that a resumed
// live stream replays beside new messages. Every change has its own
// timeuuid from the store's id generator, so changes and messages of an
// instance are ordered together (the live engine publishes both in id
// order), and a stream's last id covers both.

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	selectMessage = `SELECT message_id, author, content, system_message, attachment, edited FROM chat_room_messages
		WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	updateContent = `UPDATE chat_room_messages USING TIMESTAMP ? SET content = ?, edited = ?
		WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	deleteMessageReactions = `DELETE FROM message_reactions WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	deleteMention          = `DELETE FROM mentions WHERE login = ? AND month = ? AND message_id = ?`
	insertReaction         = `INSERT INTO message_reactions (room_name, time_bucket, message_id, emoji, login, reactor, change_id)
		VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	deleteReaction = `DELETE FROM message_reactions USING TIMESTAMP ?
		WHERE room_name = ? AND time_bucket = ? AND message_id = ? AND emoji = ? AND login = ?`
	// A page's reactions: one slice of the partition of the page's
	// messages, from its oldest message to its newest.
	selectReactions = `SELECT message_id, emoji, login, reactor, change_id FROM message_reactions
		WHERE room_name = ? AND time_bucket = ? AND message_id >= ? AND message_id <= ?`
	deleteBucketReactions = `DELETE FROM message_reactions WHERE room_name = ? AND time_bucket = ?`
	// Before a reaction is added: does the message exist (one row by its
	// key), and which reactions has it (its slice, one row a reaction)?
	selectMessageExists  = `SELECT message_id FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	selectReactionGroups = `SELECT emoji FROM message_reactions WHERE room_name = ? AND time_bucket = ? AND message_id = ?
		GROUP BY room_name, time_bucket, message_id, emoji LIMIT ?`
	insertChange = `INSERT INTO message_changes (conversation, day, change_id, message_id, kind, content, emoji, reactor, added)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	selectChangesUp = `SELECT change_id, message_id, kind, content, emoji, reactor, added FROM message_changes
		WHERE conversation = ? AND day = ? AND change_id > ? LIMIT ?`
	// Which of some messages of one bucket are still stored.
	selectStoredIDs = `SELECT message_id FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id IN ?`
	// When a member of a room's incarnation joined (null: its creator, or
	// from before it was recorded).
	selectJoined = `SELECT joined FROM rooms WHERE room_name = ? AND since = ? AND login = ?`
)

// NewChangeID is the id of a change made now, in the order of the
// store's other ids (messages' too), in a microsecond of its own (see
// chat.IDGenerator.nextMicro).
func (s *Store) NewChangeID() chat.ID { return s.ids.NextMicro(s.Now()) }

// Message returns the message id of in, or chat.ErrNotFound (also for a
// message of an earlier room of the same name).
func (s *Store) Message(ctx context.Context, in chat.Place, id chat.ID) (chat.Message, error) {
	conv := in.Conversation()
	if !id.After(floorOf(conv)) {
		return chat.Message{}, fmt.Errorf("store: message %s of %q: %w", id, conv.ID, chat.ErrNotFound)
	}
	q, err := s.query(ctx, selectMessage, conv.ID, chat.BucketOf(id), gocql.UUID(id))
	if err != nil {
		return chat.Message{}, err
	}
	ms, err := s.scanMessages(q.Iter(), conv.ID, "read message of ")
	if err != nil {
		return chat.Message{}, err
	}
	if len(ms) == 0 {
		return chat.Message{}, fmt.Errorf("store: message %s of %q: %w", id, conv.ID, chat.ErrNotFound)
	}
	return ms[0], nil
}

// EditMessage replaces the content of m (read with Message; the caller
// checked CanEdit) by content, as the change id change, and records the
// change: two statements. Mentions are the caller's (see MentionChanges).
// It returns a chat.ValidationError for content that CheckContent refuses, and
// the message as edited.
func (s *Store) EditMessage(ctx context.Context, in chat.Place, m chat.Message, content string, change chat.ID) (chat.Message, error) {
	content, err := chat.CheckContent(content)
	if err != nil && !(m.Attachment != nil && strings.TrimSpace(content) == "") {
		return chat.Message{}, err
	}
	conv := in.Conversation()
	// USING TIMESTAMP the change's time: of two edits racing, the later
	// change wins, whatever order they reach Cassandra in.
	if err := s.exec(ctx, "edit message in "+conv.ID, updateContent, writeTime(change), content, gocql.UUID(change),
		conv.ID, chat.BucketOf(m.ID), gocql.UUID(m.ID)); err != nil {
		return chat.Message{}, err
	}
	m.Content, m.Edited = content, change
	if d, ok := in.(chat.DM); ok {
		if err := s.followDMEntry(ctx, d, m.ID, &content, change); err != nil {
			return chat.Message{}, err
		}
	}
	return m, s.recordChange(ctx, conv, chat.Change{ID: change, Message: m.ID, Kind: chat.ChangeEdit, Content: content})
}

// DeleteMessage deletes m (read with Message; the caller checked
// CanDelete) with its reactions, and records the change: three
// statements. Then ForgetMessage frees what m leaves behind.
func (s *Store) DeleteMessage(ctx context.Context, in chat.Place, m chat.Message, change chat.ID) error {
	conv := in.Conversation()
	bucket := chat.BucketOf(m.ID)
	if err := s.exec(ctx, "delete message in "+conv.ID, deleteMessage, conv.ID, bucket, gocql.UUID(m.ID)); err != nil {
		return err
	}
	if err := s.exec(ctx, "delete reactions in "+conv.ID, deleteMessageReactions, conv.ID, bucket, gocql.UUID(m.ID)); err != nil {
		return err
	}
	if d, ok := in.(chat.DM); ok {
		if err := s.followDMEntry(ctx, d, m.ID, nil, change); err != nil {
			return err
		}
	}
	return s.recordChange(ctx, conv, chat.Change{ID: change, Message: m.ID, Kind: chat.ChangeDelete})
}

// ForgetMessage deletes what a deleted message m leaves behind: the
// mentions it made (they stop counting as unread) and its attachment,
// chunks first. None of it is shown once m is gone, so a failure here is
// for the logs; a message without mentions or file costs nothing.
func (s *Store) ForgetMessage(ctx context.Context, in chat.Place, m chat.Message) error {
	conv, err := s.Mentionable(ctx, in, m.Content)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, login := range chat.Mentioned(m.Content, conv.Members) {
		if login != m.Author.Login {
			errs = append(errs, s.exec(ctx, "delete mention of "+login, deleteMention, login, monthOf(m.Time()), gocql.UUID(m.ID)))
		}
	}
	if a := m.Attachment; a != nil {
		errs = append(errs, s.deleteMessageFile(ctx, conv.ID, *a))
	}
	return errors.Join(errs...)
}

// deleteMessageFile deletes a message's attachment and its preview.
func (s *Store) deleteMessageFile(ctx context.Context, conv string, a chat.AttachmentRef) error {
	ids := []chat.ID{a.ID}
	if a.HasPreview() && a.PreviewID != a.ID {
		ids = append(ids, a.PreviewID)
	}
	for _, id := range ids {
		meta, err := s.Attachment(ctx, id)
		if errors.Is(err, chat.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if err := s.deleteAttachment(ctx, conv, id, meta.Chunks); err != nil {
			return err
		}
	}
	return nil
}

// UpdateMentions records the mentions that an edit from before to after
// makes, with the new text, and deletes those it took away.
func (s *Store) UpdateMentions(ctx context.Context, conv chat.Conversation, before, after chat.Message) error {
	now := chat.Mentioned(after.Content, conv.Members)
	var errs []error
	for _, l := range chat.Mentioned(before.Content, conv.Members) {
		if l != after.Author.Login && !slices.Contains(now, l) {
			errs = append(errs, s.exec(ctx, "delete mention of "+l, deleteMention, l, monthOf(after.Time()), gocql.UUID(after.ID)))
		}
	}
	if len(now) > 0 {
		// Rewrites the ones that stay too: the same rows, the new text
		// (an edit that keeps a mention changes its excerpt).
		errs = append(errs, s.RecordMentions(ctx, conv, after))
	}
	return errors.Join(errs...)
}

// React adds (add) or takes back who's reaction emoji to the message id
// of in, as the change id change, and records the change: two writes,
// both USING TIMESTAMP the change's time, so of two actions of one person
// the later change wins. Taking back reads nothing; adding first reads,
// at once, whether the message exists and its reactions (see
// checkReactable). It returns a chat.ValidationError for a reaction
// CheckReaction refuses or a new one beyond chat.MaxReactions, and
// chat.ErrNotFound when id names no message of in.
func (s *Store) React(ctx context.Context, in chat.Place, id chat.ID, who chat.UserRef, emoji string, add bool, change chat.ID) (chat.Change, error) {
	emoji, err := chat.CheckReaction(emoji)
	if err != nil {
		return chat.Change{}, err
	}
	conv := in.Conversation()
	bucket := chat.BucketOf(id)
	if add {
		if err := s.checkReactable(ctx, conv, id, emoji); err != nil {
			return chat.Change{}, err
		}
	}
	if add {
		err = s.exec(ctx, "react in "+conv.ID, insertReaction, conv.ID, bucket, gocql.UUID(id), emoji, who.Login, who, gocql.UUID(change), writeTime(change))
	} else {
		err = s.exec(ctx, "take back a reaction in "+conv.ID, deleteReaction, writeTime(change), conv.ID, bucket, gocql.UUID(id), emoji, who.Login)
	}
	if err != nil {
		return chat.Change{}, err
	}
	ch := chat.Change{ID: change, Message: id, Kind: chat.ChangeReaction, Emoji: emoji, Reactor: who, Added: add}
	return ch, s.recordChange(ctx, conv, ch)
}

// checkReactable says whether emoji may be added to the message id of
// conv: chat.ErrNotFound if no such message is stored, a
// chat.ValidationError if emoji would be a new reaction beyond
// chat.MaxReactions. Cassandra cannot condition a plain write on other
// rows (an LWT would read too, with four round trips), so two reads go
// out together, in one round trip: the message's row by its key, and its
// reactions' slice grouped by emoji (at most MaxReactions+1 groups; its
// rows, one a person, are what a page showing the message reads anyway).
// Two people adding different new reactions at the same moment may pass
// the bound together; GroupReactions still shows MaxReactions.
func (s *Store) checkReactable(ctx context.Context, conv chat.Conversation, id chat.ID, emoji string) error {
	bucket := chat.BucketOf(id)
	var exists bool
	var groups []string
	err := s.eachConcurrently(ctx, 2, 2, func(ctx context.Context, i int) error {
		if i == 0 {
			q, err := s.query(ctx, selectMessageExists, conv.ID, bucket, gocql.UUID(id))
			if err != nil {
				return err
			}
			var got gocql.UUID
			switch err := q.Scan(&got); {
			case err == nil:
				exists = true
			case !errors.Is(err, gocql.ErrNotFound):
				return s.fail("check a message of "+conv.ID, err)
			}
			return nil
		}
		q, err := s.query(ctx, selectReactionGroups, conv.ID, bucket, gocql.UUID(id), chat.MaxReactions+1)
		if err != nil {
			return err
		}
		iter := q.Iter()
		var e string
		for iter.Scan(&e) {
			groups = append(groups, e)
		}
		if err := iter.Close(); err != nil {
			return s.fail("read the reactions of a message of "+conv.ID, err)
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case !exists:
		return fmt.Errorf("store: react to %s in %q: %w", id, conv.ID, chat.ErrNotFound)
	case len(groups) >= chat.MaxReactions && !slices.Contains(groups, emoji):
		return chat.ValidationError{"emoji": fmt.Sprintf("A message takes at most %d different reactions: add yours to one of them.", chat.MaxReactions)}
	}
	return nil
}

// recordChange appends ch to conv's change log, in the day of its id.
func (s *Store) recordChange(ctx context.Context, conv chat.Conversation, ch chat.Change) error {
	var content, emoji any = gocql.UnsetValue, gocql.UnsetValue
	var reactor any = gocql.UnsetValue
	var added any = gocql.UnsetValue
	switch ch.Kind {
	case chat.ChangeEdit:
		content = ch.Content
	case chat.ChangeReaction:
		emoji, reactor, added = ch.Emoji, ch.Reactor, ch.Added
	}
	if err := s.exec(ctx, "record change in "+conv.ID, insertChange, conv.ID, chat.BucketOf(ch.ID), gocql.UUID(ch.ID), gocql.UUID(ch.Message), ch.Kind,
		content, emoji, reactor, added); err != nil {
		return err
	}
	// Last: the change is stored when it is counted (see countChange).
	s.countChange(context.WithoutCancel(ctx), conv.ID)
	return nil
}

// ChangesAfter returns up to limit changes of in after the id after,
// oldest first, and whether more follow. It reads the day of after and
// the days after it up to the clock's next hour, one single-partition
// query each, until it has limit+1. It returns chat.ErrNotFound when after is
// older than the log keeps (ChangeRetention) and than the conversation:
// the caller cannot resume.
func (s *Store) ChangesAfter(ctx context.Context, in chat.Place, after chat.ID, limit int) ([]chat.Change, bool, error) {
	conv := in.Conversation()
	now := s.Now()
	// From the conversation's start at the earliest: only a cursor past
	// both the log's reach and the start may have lost changes.
	after = fromStart(conv, after)
	if after.Time().Before(now.Add(-chat.ChangeRetention + time.Hour)) {
		return nil, false, fmt.Errorf("store: changes of %q since %s: %w", conv.ID, after.Time(), chat.ErrNotFound)
	}
	var out []chat.Change
	for day := after.Time().UTC(); chat.TimeBucket(day) <= chat.TimeBucket(now.Add(time.Hour)) && len(out) <= limit; day = day.AddDate(0, 0, 1) {
		q, err := s.query(ctx, selectChangesUp, conv.ID, chat.TimeBucket(day), gocql.UUID(after), limit+1-len(out))
		if err != nil {
			return nil, false, err
		}
		iter := q.PageSize(limit + 1).Iter()
		var ch chat.Change
		var content, emoji *string
		var added *bool
		var reactor *chat.UserRef
		for iter.Scan((*gocql.UUID)(&ch.ID), (*gocql.UUID)(&ch.Message), &ch.Kind, &content, &emoji, &reactor, &added) {
			ch.Content, ch.Emoji, ch.Added, ch.Reactor = deref(content), deref(emoji), deref(added), deref(reactor)
			out = append(out, ch)
			ch = chat.Change{}
		}
		if err := iter.Close(); err != nil {
			return nil, false, s.fail("read changes of "+conv.ID, err)
		}
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	out, err := s.withoutGone(ctx, conv, out)
	return out, more, err
}

// withoutGone drops from changes (oldest first) the edits and reactions
// of messages that are gone: deleted later in the list, or no longer
// stored (a delete whose record failed). A deleted message leaves no
// trace in a replay but its delete, which carries no text. The edited
// messages that the list does not delete are looked up, one statement a
// day bucket.
func (s *Store) withoutGone(ctx context.Context, conv chat.Conversation, changes []chat.Change) ([]chat.Change, error) {
	gone := map[chat.ID]bool{}
	for _, ch := range changes {
		if ch.Kind == chat.ChangeDelete {
			gone[ch.Message] = true
		}
	}
	edited := map[int][]gocql.UUID{}
	seen := map[chat.ID]bool{}
	for _, ch := range changes {
		if ch.Kind == chat.ChangeEdit && !gone[ch.Message] && !seen[ch.Message] {
			seen[ch.Message] = true
			edited[chat.BucketOf(ch.Message)] = append(edited[chat.BucketOf(ch.Message)], gocql.UUID(ch.Message))
		}
	}
	for bucket, ids := range edited {
		q, err := s.query(ctx, selectStoredIDs, conv.ID, bucket, ids)
		if err != nil {
			return nil, err
		}
		iter := q.Iter()
		var id gocql.UUID
		for iter.Scan(&id) {
			delete(seen, chat.ID(id))
		}
		if err := iter.Close(); err != nil {
			return nil, s.fail("check the edited messages of "+conv.ID, err)
		}
	}
	for id := range seen { // edited, and no longer stored
		gone[id] = true
	}
	return slices.DeleteFunc(changes, func(ch chat.Change) bool { return ch.Kind != chat.ChangeDelete && gone[ch.Message] }), nil
}

// JoinedAt is when login joined the room r (of r's incarnation), or zero
// when that is not recorded (r's creator, a row from before it was) or
// login is no member.
func (s *Store) JoinedAt(ctx context.Context, r chat.Room, login string) (time.Time, error) {
	q, err := s.query(ctx, selectJoined, r.Name, r.CreatedAt, login)
	if err != nil {
		return time.Time{}, err
	}
	var at time.Time
	if err := q.Scan(&at); err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return time.Time{}, s.fail("read when "+login+" joined "+r.Name, err)
	}
	return at, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// AddReactions sets the Reactions of msgs (oldest first, of in) as
// MessagesBefore sets those of its page: for a page that also holds
// messages read by MessagesAfter (a page opened at a message).
func (s *Store) AddReactions(ctx context.Context, in chat.Place, msgs []chat.Message) error {
	return s.addReactions(ctx, in.Conversation(), msgs)
}

// addReactions reads the reactions of msgs (oldest first, from one
// walk of in) and sets each message's Reactions: one single-partition
// slice per day bucket the messages span, from the oldest message to the
// newest, which reads the reactions of these messages and no others.
func (s *Store) addReactions(ctx context.Context, conv chat.Conversation, msgs []chat.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	byID := make(map[chat.ID]int, len(msgs))
	for i, m := range msgs {
		byID[m.ID] = i
	}
	for lo := 0; lo < len(msgs); {
		bucket := chat.BucketOf(msgs[lo].ID)
		hi := lo
		for hi+1 < len(msgs) && chat.BucketOf(msgs[hi+1].ID) == bucket {
			hi++
		}
		q, err := s.query(ctx, selectReactions, conv.ID, bucket, gocql.UUID(msgs[lo].ID), gocql.UUID(msgs[hi].ID))
		if err != nil {
			return err
		}
		iter := q.PageSize(1000).Iter()
		var (
			id chat.ID
			r  chat.Reaction
			l  string
		)
		for iter.Scan((*gocql.UUID)(&id), &r.Emoji, &l, &r.Reactor, (*gocql.UUID)(&r.Change)) {
			if i, ok := byID[id]; ok {
				if r.Reactor.Login == "" {
					r.Reactor.Login = l
				}
				msgs[i].Reactions = append(msgs[i].Reactions, r)
			}
			r = chat.Reaction{}
		}
		if err := iter.Close(); err != nil {
			return s.fail("read reactions of "+conv.ID, err)
		}
		lo = hi + 1
	}
	return nil
}

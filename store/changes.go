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
	insertChange          = `INSERT INTO message_changes (conversation, day, change_id, message_id, kind, content, emoji, reactor, added)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	selectChangesUp = `SELECT change_id, message_id, kind, content, emoji, reactor, added FROM message_changes
		WHERE conversation = ? AND day = ? AND change_id > ? LIMIT ?`

	// MaxReactionText is the longest reaction, in characters: one emoji
	// (which may be several code points) or a short word.
	MaxReactionText = 16
	// MaxReactions is how many distinct reactions a message shows.
	MaxReactions = 20
	// ChangeRetention is how long the change log keeps a change (the
	// table's TTL): a stream that resumes from further back reloads.
	ChangeRetention = 30 * 24 * time.Hour
)

// Kinds of change.
const (
	ChangeEdit     = "edit"
	ChangeDelete   = "delete"
	ChangeReaction = "reaction"
)

// Reaction is one person's reaction to a message.
type Reaction struct {
	Emoji   string
	Reactor UserRef
	// Change is the id of the change that added it: the newest action of
	// a person on an emoji wins, here as in Cassandra.
	Change chat.ID
}

// Change is one edit, delete or reaction of a message, as the change log
// holds it for a resumed stream.
type Change struct {
	ID      chat.ID
	Message chat.ID
	Kind    string
	// Content is an edit's new text.
	Content string
	// Emoji, Reactor and Added say who added (or took back) which reaction.
	Emoji   string
	Reactor UserRef
	Added   bool
}

// NewChangeID is the id of a change made now, in the order of the
// store's other ids (messages' too), in a microsecond of its own (see
// chat.IDGenerator.nextMicro).
func (s *Store) NewChangeID() chat.ID { return s.ids.NextMicro(s.Now()) }

// Message returns the message id of in, or chat.ErrNotFound (also for a
// message of an earlier room of the same name).
func (s *Store) Message(ctx context.Context, in Place, id chat.ID) (Message, error) {
	conv := in.Conversation()
	if !id.After(floorOf(conv)) {
		return Message{}, fmt.Errorf("store: message %s of %q: %w", id, conv.ID, chat.ErrNotFound)
	}
	q, err := s.query(ctx, selectMessage, conv.ID, chat.BucketOf(id), gocql.UUID(id))
	if err != nil {
		return Message{}, err
	}
	ms, err := s.scanMessages(q.Iter(), conv.ID, "read message of ")
	if err != nil {
		return Message{}, err
	}
	if len(ms) == 0 {
		return Message{}, fmt.Errorf("store: message %s of %q: %w", id, conv.ID, chat.ErrNotFound)
	}
	return ms[0], nil
}

// CanEdit returns chat.ErrNotAuthor unless login wrote m, and a system message
// is nobody's to edit.
func CanEdit(m Message, login string) error {
	if m.System || m.Author.Login != login {
		return fmt.Errorf("store: edit %s by %q: %w", m.ID, login, chat.ErrNotAuthor)
	}
	return nil
}

// CanDelete says whether login may delete m: its author may (a system
// message has none), and so may a moderator of its room (its creator or
// one of its admins, as the caller read the room).
func CanDelete(m Message, login string, moderator bool) error {
	if (m.Author.Login == login && !m.System) || moderator {
		return nil
	}
	return fmt.Errorf("store: delete %s by %q: %w", m.ID, login, chat.ErrNotAuthor)
}

// EditMessage replaces the content of m (read with Message; the caller
// checked CanEdit) by content, as the change id change, and records the
// change: two statements. Mentions are the caller's (see MentionChanges).
// It returns a chat.ValidationError for content that CheckContent refuses, and
// the message as edited.
func (s *Store) EditMessage(ctx context.Context, in Place, m Message, content string, change chat.ID) (Message, error) {
	content, err := CheckContent(content)
	if err != nil && !(m.Attachment != nil && strings.TrimSpace(content) == "") {
		return Message{}, err
	}
	conv := in.Conversation()
	// USING TIMESTAMP the change's time: of two edits racing, the later
	// change wins, whatever order they reach Cassandra in.
	if err := s.exec(ctx, "edit message in "+conv.ID, updateContent, writeTime(change), content, gocql.UUID(change),
		conv.ID, chat.BucketOf(m.ID), gocql.UUID(m.ID)); err != nil {
		return Message{}, err
	}
	m.Content, m.Edited = content, change
	return m, s.recordChange(ctx, conv, Change{ID: change, Message: m.ID, Kind: ChangeEdit, Content: content})
}

// DeleteMessage deletes m (read with Message; the caller checked
// CanDelete) with its reactions, and records the change: three
// statements. Then ForgetMessage frees what m leaves behind.
func (s *Store) DeleteMessage(ctx context.Context, in Place, m Message, change chat.ID) error {
	conv := in.Conversation()
	bucket := chat.BucketOf(m.ID)
	if err := s.exec(ctx, "delete message in "+conv.ID, deleteMessage, conv.ID, bucket, gocql.UUID(m.ID)); err != nil {
		return err
	}
	if err := s.exec(ctx, "delete reactions in "+conv.ID, deleteMessageReactions, conv.ID, bucket, gocql.UUID(m.ID)); err != nil {
		return err
	}
	return s.recordChange(ctx, conv, Change{ID: change, Message: m.ID, Kind: ChangeDelete})
}

// ForgetMessage deletes what a deleted message m leaves behind: the
// mentions it made (they stop counting as unread) and its attachment,
// chunks first. None of it is shown once m is gone, so a failure here is
// for the logs; a message without mentions or file costs nothing.
func (s *Store) ForgetMessage(ctx context.Context, in Place, m Message) error {
	conv, err := s.Mentionable(ctx, in, m.Content)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, login := range Mentioned(m.Content, conv.Members) {
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
func (s *Store) deleteMessageFile(ctx context.Context, conv string, a AttachmentRef) error {
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
// added, and deletes those it took away: none when the mentions stay.
func (s *Store) UpdateMentions(ctx context.Context, conv Conversation, before, after Message) error {
	old := map[string]bool{}
	for _, l := range Mentioned(before.Content, conv.Members) {
		old[l] = true
	}
	added := false
	var errs []error
	for _, l := range Mentioned(after.Content, conv.Members) {
		if !old[l] {
			added = true
		}
		delete(old, l)
	}
	for l := range old {
		if l != after.Author.Login {
			errs = append(errs, s.exec(ctx, "delete mention of "+l, deleteMention, l, monthOf(after.Time()), gocql.UUID(after.ID)))
		}
	}
	if added {
		// Rewrites the ones that stay too: the same rows, the new excerpt.
		errs = append(errs, s.RecordMentions(ctx, conv, after))
	}
	return errors.Join(errs...)
}

// CheckReaction cleans a reaction (edges trimmed) and returns it, or a
// chat.ValidationError unless it is one line of 1 to MaxReactionText visible
// characters.
func CheckReaction(text string) (string, error) {
	text, problem := cleanText(text, textRule{required: true, max: MaxReactionText, empty: "Pick a reaction."})
	if problem == "" && strings.ContainsAny(text, "\t") {
		problem = "Must be on one line."
	}
	if problem != "" {
		return "", chat.ValidationError{"emoji": problem}
	}
	return text, nil
}

// React adds (add) or takes back who's reaction emoji to the message id
// of in, as the change id change, and records the change: two statements
// and no read. Both are written USING TIMESTAMP the change's time, so of
// two actions of one person the later change wins. It returns a
// chat.ValidationError for a reaction CheckReaction refuses. That the message
// exists is the caller's to know: a reaction to a message that is not
// there is never shown.
func (s *Store) React(ctx context.Context, in Place, id chat.ID, who UserRef, emoji string, add bool, change chat.ID) (Change, error) {
	emoji, err := CheckReaction(emoji)
	if err != nil {
		return Change{}, err
	}
	conv := in.Conversation()
	bucket := chat.BucketOf(id)
	if add {
		err = s.exec(ctx, "react in "+conv.ID, insertReaction, conv.ID, bucket, gocql.UUID(id), emoji, who.Login, who, gocql.UUID(change), writeTime(change))
	} else {
		err = s.exec(ctx, "take back a reaction in "+conv.ID, deleteReaction, writeTime(change), conv.ID, bucket, gocql.UUID(id), emoji, who.Login)
	}
	if err != nil {
		return Change{}, err
	}
	ch := Change{ID: change, Message: id, Kind: ChangeReaction, Emoji: emoji, Reactor: who, Added: add}
	return ch, s.recordChange(ctx, conv, ch)
}

// recordChange appends ch to conv's change log, in the day of its id.
func (s *Store) recordChange(ctx context.Context, conv Conversation, ch Change) error {
	var content, emoji any = gocql.UnsetValue, gocql.UnsetValue
	var reactor any = gocql.UnsetValue
	var added any = gocql.UnsetValue
	switch ch.Kind {
	case ChangeEdit:
		content = ch.Content
	case ChangeReaction:
		emoji, reactor, added = ch.Emoji, ch.Reactor, ch.Added
	}
	return s.exec(ctx, "record change in "+conv.ID, insertChange, conv.ID, chat.BucketOf(ch.ID), gocql.UUID(ch.ID), gocql.UUID(ch.Message), ch.Kind,
		content, emoji, reactor, added)
}

// ChangesAfter returns up to limit changes of in after the id after,
// oldest first, and whether more follow. It reads the day of after and
// the days after it up to the clock's next hour, one single-partition
// query each, until it has limit+1. It returns chat.ErrNotFound when after is
// older than the log keeps (ChangeRetention) and than the conversation:
// the caller cannot resume.
func (s *Store) ChangesAfter(ctx context.Context, in Place, after chat.ID, limit int) ([]Change, bool, error) {
	conv := in.Conversation()
	now := s.Now()
	// From the conversation's start at the earliest: only a cursor past
	// both the log's reach and the start may have lost changes.
	after = fromStart(conv, after)
	if after.Time().Before(now.Add(-ChangeRetention + time.Hour)) {
		return nil, false, fmt.Errorf("store: changes of %q since %s: %w", conv.ID, after.Time(), chat.ErrNotFound)
	}
	var out []Change
	for day := after.Time().UTC(); chat.TimeBucket(day) <= chat.TimeBucket(now.Add(time.Hour)) && len(out) <= limit; day = day.AddDate(0, 0, 1) {
		q, err := s.query(ctx, selectChangesUp, conv.ID, chat.TimeBucket(day), gocql.UUID(after), limit+1-len(out))
		if err != nil {
			return nil, false, err
		}
		iter := q.PageSize(limit + 1).Iter()
		var ch Change
		var content, emoji *string
		var added *bool
		var reactor *UserRef
		for iter.Scan((*gocql.UUID)(&ch.ID), (*gocql.UUID)(&ch.Message), &ch.Kind, &content, &emoji, &reactor, &added) {
			ch.Content, ch.Emoji, ch.Added, ch.Reactor = deref(content), deref(emoji), deref(added), deref(reactor)
			out = append(out, ch)
			ch = Change{}
		}
		if err := iter.Close(); err != nil {
			return nil, false, s.fail("read changes of "+conv.ID, err)
		}
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// addReactions reads the reactions of msgs (oldest first, from one
// walk of in) and sets each message's Reactions: one single-partition
// slice per day bucket the messages span, from the oldest message to the
// newest, which reads the reactions of these messages and no others.
func (s *Store) addReactions(ctx context.Context, conv Conversation, msgs []Message) error {
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
			r  Reaction
			l  string
		)
		for iter.Scan((*gocql.UUID)(&id), &r.Emoji, &l, &r.Reactor, (*gocql.UUID)(&r.Change)) {
			if i, ok := byID[id]; ok {
				if r.Reactor.Login == "" {
					r.Reactor.Login = l
				}
				msgs[i].Reactions = append(msgs[i].Reactions, r)
			}
			r = Reaction{}
		}
		if err := iter.Close(); err != nil {
			return s.fail("read reactions of "+conv.ID, err)
		}
		lo = hi + 1
	}
	return nil
}

// ReactionGroup is the people who reacted to a message with one emoji.
type ReactionGroup struct {
	Emoji  string
	People []UserRef
}

// Has reports whether login is among the group's people.
func (g ReactionGroup) Has(login string) bool {
	for _, p := range g.People {
		if p.Login == login {
			return true
		}
	}
	return false
}

// GroupReactions groups a message's reactions by emoji, in the order each
// emoji was first used, keeping the first MaxReactions emojis: no read
// stands before a reaction, so the bound is kept where reactions are shown.
func GroupReactions(rs []Reaction) []ReactionGroup {
	var out []ReactionGroup
	index := map[string]int{}
	for _, r := range sortedByChange(rs) {
		i, ok := index[r.Emoji]
		if !ok {
			if len(out) == MaxReactions {
				continue
			}
			i = len(out)
			index[r.Emoji] = i
			out = append(out, ReactionGroup{Emoji: r.Emoji})
		}
		out[i].People = append(out[i].People, r.Reactor)
	}
	return out
}

// sortedByChange is a copy of rs, oldest change first.
func sortedByChange(rs []Reaction) []Reaction {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b Reaction) int {
		switch {
		case b.Change.After(a.Change):
			return -1
		case a.Change.After(b.Change):
			return 1
		}
		return 0
	})
	return out
}

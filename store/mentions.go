// This file owns mentions: "@login" of a member in a message, recorded
// under the person mentioned, one partition per person and month.

package store

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertMention = `INSERT INTO mentions (login, month, message_id, conversation, author, excerpt)
		VALUES (?, ?, ?, ?, ?, ?)`
	selectMentions = `SELECT message_id, conversation, author, excerpt FROM mentions
		WHERE login = ? AND month = ? AND message_id < ? LIMIT ?`
	selectMentionsSince = `SELECT conversation, message_id FROM mentions
		WHERE login = ? AND month = ? AND message_id > ? LIMIT ?`

	// mentionMonths is how far back the list of mentions reaches.
	mentionMonths = 12
	// mentionScan bounds the rows read to count unread mentions.
	mentionScan = 1000
)

// Mentionable is the conversation of in, whose members include every
// member that contents mention: a DM's members are all there already, as
// are those of a room read with every participant; a room's are read for
// the logins the contents name (one read of their rows), never all of
// them, and added to the one whose standing was read with the room.
func (s *Store) Mentionable(ctx context.Context, in chat.Place, contents ...string) (chat.Conversation, error) {
	conv := in.Conversation()
	var (
		r    chat.Room
		read string // whose standing in holds
	)
	switch p := in.(type) {
	case chat.Room:
		r = p
	case chat.RoomFor:
		r, read = p.Room, p.Login()
	default: // a DM, or a room read with every participant
		return conv, nil
	}
	var want []string
	for _, l := range chat.MentionCandidates(contents) {
		if l != read {
			want = append(want, l)
		}
	}
	if len(want) == 0 {
		return conv, nil
	}
	found, err := s.MembersOf(ctx, r, want)
	if err != nil {
		return conv, err
	}
	members := make(map[string]chat.UserRef, len(conv.Members)+len(found))
	for l, p := range conv.Members {
		members[l] = p
	}
	for l, p := range found {
		members[l] = p
	}
	conv.Members = members
	return conv, nil
}

// monthOf is the UTC month of t as yyyyMM, the partition of a mention.
func monthOf(t time.Time) int {
	y, m, _ := t.UTC().Date()
	return y*100 + int(m)
}

// RecordMentions records m under every member of conv it mentions, except
// its author, and makes m their newest mention in conv (the mention head
// beside their read marker, see ReadMarkers). The writes run concurrently.
func (s *Store) RecordMentions(ctx context.Context, conv chat.Conversation, m chat.Message) error {
	excerpt := m.Content
	if utf8.RuneCountInString(excerpt) > excerptLength {
		excerpt = string([]rune(excerpt)[:excerptLength]) + "…"
	}
	var logins []string
	for _, login := range chat.Mentioned(m.Content, conv.Members) {
		if login != m.Author.Login {
			logins = append(logins, login)
		}
	}
	errs := make(chan error, 2*len(logins))
	for _, login := range logins {
		go func() {
			errs <- s.exec(ctx, "record mention of "+login, insertMention,
				login, monthOf(m.Time()), gocql.UUID(m.ID), conv.ID, m.Author, excerpt)
		}()
		go func() {
			errs <- s.exec(ctx, "mention head of "+login, updateMentionHead, writeTime(m.ID), gocql.UUID(m.ID), login, conv.ID)
		}()
	}
	var first error
	for range 2 * len(logins) {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Mentions returns up to n mentions of login before the message id before
// (the newest if zero), newest first, from the last twelve months.
func (s *Store) Mentions(ctx context.Context, login string, before chat.ID, n int) ([]chat.Mention, error) {
	if before == (chat.ID{}) {
		before = chat.MaxIDAt(s.Now().Add(time.Hour))
	}
	var out []chat.Mention
	month := before.Time()
	for i := 0; i < mentionMonths && len(out) < n; i++ {
		q, err := s.query(ctx, selectMentions, login, monthOf(month), gocql.UUID(before), n-len(out))
		if err != nil {
			return nil, err
		}
		iter := q.Iter()
		var m chat.Mention
		for iter.Scan((*gocql.UUID)(&m.MessageID), &m.Conversation, &m.Author, &m.Excerpt) {
			out = append(out, m)
		}
		if err := iter.Close(); err != nil {
			return nil, s.fail("read mentions of "+login, err)
		}
		month = time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC).Add(-time.Hour)
	}
	return out, nil
}

// mentionRef is where a mention was made: its conversation and message.
type mentionRef struct {
	conversation string
	id           chat.ID
}

// recentMentions reads the mentions of login after the message id after,
// from this month and the last at most: one single-partition statement per
// month, both at once (an IN over the months with a LIMIT would read the
// rows in the order of the months, not the newest first). Each stops at
// mentionScan rows; with after the oldest marker of a conversation with an
// unread mention, it reads little more than the unread mentions.
func (s *Store) recentMentions(ctx context.Context, login string, after chat.ID) ([]mentionRef, error) {
	now := s.Now().UTC()
	since := chat.MinIDAt(time.Date(now.Year(), now.Month()-1, 1, 0, 0, 0, 0, time.UTC))
	if after.After(since) {
		since = after
	}
	months := []int{monthOf(now)}
	if m := monthOf(since.Time()); m < months[0] {
		months = append(months, m)
	}
	var out []mentionRef
	err := walkBuckets(s, login, months, nil,
		func() int { return mentionScan - len(out) },
		func(month, limit int) ([]mentionRef, error) {
			q, err := s.query(ctx, selectMentionsSince, login, month, gocql.UUID(since), limit)
			if err != nil {
				return nil, err
			}
			var got []mentionRef
			iter := q.PageSize(limit).Iter()
			var m mentionRef
			for iter.Scan(&m.conversation, (*gocql.UUID)(&m.id)) {
				got = append(got, m)
			}
			if err := iter.Close(); err != nil {
				return nil, s.fail("count mentions of "+login, err)
			}
			return got, nil
		},
		func(got []mentionRef) { out = append(out, got...) })
	return out, err
}

// countMentions counts the mentions newer than the marker of their
// conversation, each count stopping at MaxUnread; with only set, only in
// those conversations.
func countMentions(recent []mentionRef, markers map[string]chat.ID, only map[string]time.Time) map[string]int {
	out := map[string]int{}
	for _, m := range recent {
		if only != nil {
			if _, ok := only[m.conversation]; !ok {
				continue
			}
		}
		if m.id.After(markers[m.conversation]) && out[m.conversation] < MaxUnread {
			out[m.conversation]++
		}
	}
	return out
}

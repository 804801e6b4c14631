// This file owns mentions: "@login" of a member in a message, recorded
// under the person mentioned, one partition per person and month.
package store

import (
	"context"
	"regexp"
	"strings"
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

// mentionToken is "@" and a login-shaped word, not inside an e-mail
// address or another word.
var mentionToken = regexp.MustCompile(`(?:^|[^\w@.+-])@([a-zA-Z0-9][a-zA-Z0-9_.-]{1,40})`)

// MentionSpan is where a message's text mentions a member: the byte range
// [Start, End) of "@login" as typed, and the member's login.
type MentionSpan struct {
	Start, End int
	Login      string
}

// MentionSpans returns every mention of a member in content, in order
// (repeats included), so that a reader shows exactly what Mentioned
// records. Trailing ".", "_" and "-" end a sentence, not a login.
func MentionSpans(content string, members map[string]chat.UserRef) []MentionSpan {
	if strings.IndexByte(content, '@') < 0 || len(members) == 0 {
		return nil // most messages mention no one: no regexp to run
	}
	var out []MentionSpan
	for _, loc := range mentionToken.FindAllStringSubmatchIndex(content, -1) {
		raw := strings.TrimRight(content[loc[2]:loc[3]], "._-")
		login := strings.ToLower(raw)
		if _, ok := members[login]; ok {
			out = append(out, MentionSpan{Start: loc[2] - 1, End: loc[2] + len(raw), Login: login})
		}
	}
	return out
}

// Mentioned returns the logins of members that content mentions, each
// once, in order of first mention (author included if they mention
// themselves). An "@login" in Markdown code (a fenced block or a `span`)
// is not a mention: the page shows it as code.
func Mentioned(content string, members map[string]chat.UserRef) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range MentionSpans(withoutCode(content), members) {
		if !seen[m.Login] {
			seen[m.Login] = true
			out = append(out, m.Login)
		}
	}
	return out
}

// maxMentionLookups bounds the logins one lookup of a room's members
// reads (see Mentionable).
const maxMentionLookups = 100

// mentionCandidates are the logins that contents name after "@", each
// once: who they mention if they are members.
func mentionCandidates(contents []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range contents {
		if strings.IndexByte(c, '@') < 0 {
			continue
		}
		for _, loc := range mentionToken.FindAllStringSubmatchIndex(c, -1) {
			login := strings.ToLower(strings.TrimRight(c[loc[2]:loc[3]], "._-"))
			if !seen[login] && chat.ValidName(login) && len(out) < maxMentionLookups {
				seen[login] = true
				out = append(out, login)
			}
		}
	}
	return out
}

// Mentionable is the conversation of in, whose members include every
// member that contents mention: a DM's members are all there already; a
// room's are read for the logins the contents name (one read of their
// rows), never all of them, and added to those read with the room.
func (s *Store) Mentionable(ctx context.Context, in chat.Place, contents ...string) (chat.Conversation, error) {
	conv := in.Conversation()
	r, ok := in.(chat.Room)
	if !ok {
		return conv, nil
	}
	var want []string
	for _, l := range mentionCandidates(contents) {
		if !r.Knows(l) {
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

// Mention is a message that mentions someone.
type Mention struct {
	MessageID    chat.ID
	Conversation string
	Author       chat.UserRef
	Excerpt      string
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
	for _, login := range Mentioned(m.Content, conv.Members) {
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
func (s *Store) Mentions(ctx context.Context, login string, before chat.ID, n int) ([]Mention, error) {
	if before == (chat.ID{}) {
		before = chat.MaxIDAt(s.Now().Add(time.Hour))
	}
	var out []Mention
	month := before.Time()
	for i := 0; i < mentionMonths && len(out) < n; i++ {
		q, err := s.query(ctx, selectMentions, login, monthOf(month), gocql.UUID(before), n-len(out))
		if err != nil {
			return nil, err
		}
		iter := q.Iter()
		var m Mention
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

// withoutCode is content with its Markdown code (fenced blocks and code
// spans) blanked out, byte for byte, as the page's renderer reads them in
// the common cases.
func withoutCode(content string) string {
	if !strings.ContainsAny(content, "`~") {
		return content
	}
	b := []byte(content)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	// Fenced blocks: from a line opening with ``` or ~~~ to the line that
	// closes it with at least as many of the same, or the end.
	var fence string
	start := 0
	for lineStart := 0; lineStart < len(b); {
		end := strings.IndexByte(content[lineStart:], '\n')
		if end < 0 {
			end = len(content)
		} else {
			end += lineStart + 1
		}
		line := strings.TrimLeft(content[lineStart:end], " ")
		switch {
		case fence == "" && (strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~")):
			n := len(line) - len(strings.TrimLeft(line, line[:1]))
			fence, start = strings.Repeat(line[:1], n), lineStart
		case fence != "" && strings.HasPrefix(strings.TrimSpace(line), fence):
			blank(start, end)
			fence = ""
		}
		lineStart = end
	}
	if fence != "" {
		blank(start, len(b))
	}
	// Code spans: a run of backticks up to the next run of the same length.
	s := string(b)
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		n := len(s[i:]) - len(strings.TrimLeft(s[i:], "`"))
		closing := -1
		for j := i + n; j < len(s); {
			k := strings.IndexByte(s[j:], '`')
			if k < 0 {
				break
			}
			k += j
			m := len(s[k:]) - len(strings.TrimLeft(s[k:], "`"))
			if m == n {
				closing = k
				break
			}
			j = k + m
		}
		if closing < 0 {
			i += n
			continue
		}
		blank(i, closing+n)
		i = closing + n
	}
	return string(b)
}

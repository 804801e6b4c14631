// This file owns conversations: what rooms and direct messages (DMs) share.
// A conversation has an id, a start and its members; messages, paging,
// heads, read markers and live streams are written once, for
// conversations. A room's members are its participants (changed by LWT); a
// DM's members are fixed and encoded in its address, so two people writing
// to each other for the first time land in the same conversation without
// anything to agree on.
package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	selectUserRefs = `SELECT login, firstname, lastname FROM users WHERE login IN ?`
	// The last message's columns are written USING TIMESTAMP of the message,
	// so the newest wins whatever order concurrent sends arrive in.
	updateDMList = `UPDATE dm_lists USING TIMESTAMP ? SET members = ?, last_id = ?, last_author = ?, last_excerpt = ?
		WHERE login = ? AND conversation = ?`
	selectDMList = `SELECT conversation, members, last_id, last_author, last_excerpt FROM dm_lists WHERE login = ?`
	// The same entry in the person's read_markers row for the DM (schema
	// 010), which the sidebar reads with the markers in one statement.
	updateDMEntry = `UPDATE read_markers USING TIMESTAMP ? SET members = ?, last_id = ?, last_author = ?, last_excerpt = ?
		WHERE login = ? AND conversation = ?`
	selectPersonal = `SELECT conversation, marker, mention, members, last_id, last_author, last_excerpt, dms_moved, level
		FROM read_markers WHERE login = ?`
	updateDMsMoved = `UPDATE read_markers SET dms_moved = true WHERE login = ?`

	// dmPrefix starts a DM's conversation id; no room name can contain ':'.
	dmPrefix = "dm:"
	// MinDMMembers and MaxDMMembers bound the people in a DM.
	MinDMMembers, MaxDMMembers = 2, 8
	// excerptLength is how much of the last message a DM list shows.
	excerptLength = 100
)

// dmEpoch is the start of every DM: DMs are never deleted, so their
// messages have no earlier conversation to be told apart from.
var dmEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// Place is where messages are posted and read: a Room, a DM, or a
// Conversation itself. The message functions take it, so rooms and DMs
// share one path.
type Place interface{ Conversation() Conversation }

// Conversation is itself.
func (c Conversation) Conversation() Conversation { return c }

// Conversation is where messages are posted and read: a room or a DM.
type Conversation struct {
	// ID is a room's name, or "dm:" and a DM's address.
	ID string
	// Since is when it started: messages of an earlier conversation with
	// the same ID (a deleted room) are older and never shown.
	Since time.Time
	// Members are who may read and post, by login: all of a DM's; of a
	// room's, those read with it (see Room.Conversation).
	Members map[string]UserRef
}

// Has reports whether login is a member.
func (c Conversation) Has(login string) bool {
	_, ok := c.Members[login]
	return ok
}

// IsDM reports whether a conversation id is a DM's.
func IsDM(id string) bool { return strings.HasPrefix(id, dmPrefix) }

// Conversation is the room as a conversation: its members are the
// participants read with the room (the reader's standing, or those a text
// mentions: see Mentionable), never all of a room's rows.
func (r Room) Conversation() Conversation {
	return Conversation{ID: r.Name, Since: r.CreatedAt, Members: r.Participants}
}

// DM is a direct conversation between 2 to 8 people.
type DM struct {
	// Address is the members' logins, lower-case, sorted, joined by "+".
	Address string
	// Members, sorted by login.
	Members []UserRef
}

// Conversation is the DM as a conversation.
func (d DM) Conversation() Conversation {
	c := Conversation{ID: dmPrefix + d.Address, Since: dmEpoch, Members: make(map[string]UserRef, len(d.Members))}
	for _, m := range d.Members {
		c.Members[m.Login] = m
	}
	return c
}

// Others are the members other than login.
func (d DM) Others(login string) []UserRef {
	out := make([]UserRef, 0, len(d.Members))
	for _, m := range d.Members {
		if m.Login != login {
			out = append(out, m)
		}
	}
	return out
}

// DMAddress is the canonical address of a DM between logins: lower-case,
// sorted, without repeats, joined by "+". It returns an error wrapping
// chat.ErrInvalid for a malformed login or fewer than 2 or more than 8 people.
func DMAddress(logins []string) (string, error) {
	seen := map[string]bool{}
	var out []string
	for _, l := range logins {
		l = strings.ToLower(strings.TrimSpace(l))
		if !ValidName(l) {
			return "", fmt.Errorf("store: dm member %q: %w", l, chat.ErrInvalid)
		}
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	if len(out) < MinDMMembers || len(out) > MaxDMMembers {
		return "", fmt.Errorf("store: a dm has %d to %d people, not %d: %w", MinDMMembers, MaxDMMembers, len(out), chat.ErrInvalid)
	}
	sort.Strings(out)
	return strings.Join(out, "+"), nil
}

// ParseDMAddress splits an address as found in a URL into its canonical
// form. The bool says whether the given form was already canonical.
func ParseDMAddress(address string) (string, bool, error) {
	canonical, err := DMAddress(strings.Split(address, "+"))
	return canonical, err == nil && canonical == address, err
}

// DM returns the DM at address (canonical or not) with its members read
// from their accounts, or chat.ErrNotFound if the address is malformed or names
// someone without an account.
func (s *Store) DM(ctx context.Context, address string) (DM, error) {
	canonical, _, err := ParseDMAddress(address)
	if err != nil {
		return DM{}, fmt.Errorf("store: dm %q: %w", address, chat.ErrNotFound)
	}
	logins := strings.Split(canonical, "+")
	refs, err := s.UserRefs(ctx, logins)
	if err != nil {
		return DM{}, err
	}
	if len(refs) != len(logins) {
		return DM{}, fmt.Errorf("store: dm %q: someone has no account: %w", address, chat.ErrNotFound)
	}
	return DM{Address: canonical, Members: refs}, nil
}

// UserRefs returns the people with these logins that have accounts,
// sorted by login, in one query.
func (s *Store) UserRefs(ctx context.Context, logins []string) ([]UserRef, error) {
	q, err := s.query(ctx, selectUserRefs, logins)
	if err != nil {
		return nil, err
	}
	var out []UserRef
	iter := q.Iter()
	var u UserRef
	for iter.Scan(&u.Login, &u.Firstname, &u.Lastname) {
		out = append(out, u)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read people", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Login < out[j].Login })
	return out, nil
}

// DMEntry is one line of a person's list of DMs.
type DMEntry struct {
	DM DM
	// Last is the newest message: its id, author and first characters.
	LastID      chat.ID
	LastAuthor  UserRef
	LastExcerpt string
}

// RecordDMMessage puts m as the last message of d in every member's list.
// Each write carries the message's time, so the newest message wins in
// every list however concurrent sends interleave. A member's entry is
// written to read_markers (what this version reads) and to dm_lists (what
// versions before schema 010 read, during a rolling upgrade) in one
// batch: both rows are in the member's partition, so it is one mutation.
func (s *Store) RecordDMMessage(ctx context.Context, d DM, m Message) error {
	excerpt := m.Content
	if utf8.RuneCountInString(excerpt) > excerptLength {
		excerpt = string([]rune(excerpt)[:excerptLength]) + "…"
	}
	sess, err := s.db()
	if err != nil {
		return err
	}
	errs := make(chan error, len(d.Members))
	for _, member := range d.Members {
		go func() {
			args := []any{writeTime(m.ID), d.Members, gocql.UUID(m.ID), m.Author, excerpt, member.Login, dmPrefix + d.Address}
			b := sess.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
			b.SetConsistency(s.cfg.Consistency)
			b.Entries = append(b.Entries,
				gocql.BatchEntry{Stmt: updateDMEntry, Args: args, Idempotent: true},
				gocql.BatchEntry{Stmt: updateDMList, Args: args, Idempotent: true})
			if err := sess.ExecuteBatch(b); err != nil {
				errs <- s.fail("list dm of "+member.Login, err)
				return
			}
			errs <- nil
		}()
	}
	var first error
	for range d.Members {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// PersonalState is what the sidebar needs of login's own rows, in one
// partition read: their read marker, newest mention and level in every
// conversation, and their DMs with each one's last message, most recent
// activity first. A person whose DM list was written before schema 010
// has it moved on this first read (see moveDMList).
func (s *Store) PersonalState(ctx context.Context, login string) (Markers, []DMEntry, error) {
	q, err := s.query(ctx, selectPersonal, login)
	if err != nil {
		return Markers{}, nil, err
	}
	m := Markers{Read: map[string]chat.ID{}, Mention: map[string]chat.ID{}, Level: map[string]Level{}}
	var (
		dms   []DMEntry
		moved bool
		iter  = q.Iter()
	)
	for {
		var (
			e               DMEntry
			conv            string
			marker, mention chat.ID
			rowMoved        *bool
			level           string
		)
		if !iter.Scan(&conv, (*gocql.UUID)(&marker), (*gocql.UUID)(&mention), &e.DM.Members, (*gocql.UUID)(&e.LastID), &e.LastAuthor, &e.LastExcerpt, &rowMoved, &level) {
			break
		}
		if level != "" {
			m.Level[conv] = Level(level)
		}
		moved = moved || (rowMoved != nil && *rowMoved)
		if marker != (chat.ID{}) {
			m.Read[conv] = marker
		}
		if mention != (chat.ID{}) {
			m.Mention[conv] = mention
		}
		if len(e.DM.Members) > 0 {
			e.DM.Address = strings.TrimPrefix(conv, dmPrefix)
			dms = append(dms, e)
		}
	}
	if err := iter.Close(); err != nil {
		return Markers{}, nil, s.fail("read the markers and dms of "+login, err)
	}
	if !moved {
		if dms, err = s.moveDMList(ctx, login); err != nil {
			return Markers{}, nil, err
		}
	}
	sortDMs(dms)
	return m, dms, nil
}

// moveDMList copies login's entries of dm_lists, which every version
// writes, into their read_markers rows, then marks the move done. Each
// entry is written with its last message's time, as RecordDMMessage
// writes it, so a message recorded meanwhile is never overwritten by an
// older copy; the flag is set only once every entry is copied, so a move
// cut short is done again (its writes are idempotent). It returns the
// entries read.
func (s *Store) moveDMList(ctx context.Context, login string) ([]DMEntry, error) {
	dms, err := s.oldDMList(ctx, login)
	if err != nil {
		return nil, err
	}
	err = s.eachConcurrently(ctx, len(dms), 8, func(ctx context.Context, i int) error {
		e := dms[i]
		return s.exec(ctx, "move the dm list of "+login, updateDMEntry,
			writeTime(e.LastID), e.DM.Members, gocql.UUID(e.LastID), e.LastAuthor, e.LastExcerpt, login, dmPrefix+e.DM.Address)
	})
	if err != nil {
		return nil, err
	}
	if err := s.exec(ctx, "move the dm list of "+login, updateDMsMoved, login); err != nil {
		return nil, err
	}
	return dms, nil
}

// DMList is login's DMs, most recent activity first (see PersonalState).
func (s *Store) DMList(ctx context.Context, login string) ([]DMEntry, error) {
	_, dms, err := s.PersonalState(ctx, login)
	return dms, err
}

// oldDMList is login's entries of dm_lists, as versions before schema
// 010 kept them.
func (s *Store) oldDMList(ctx context.Context, login string) ([]DMEntry, error) {
	q, err := s.query(ctx, selectDMList, login)
	if err != nil {
		return nil, err
	}
	var out []DMEntry
	iter := q.Iter()
	for {
		var (
			e    DMEntry
			conv string
		)
		if !iter.Scan(&conv, &e.DM.Members, (*gocql.UUID)(&e.LastID), &e.LastAuthor, &e.LastExcerpt) {
			break
		}
		e.DM.Address = strings.TrimPrefix(conv, dmPrefix)
		out = append(out, e)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read dms of "+login, err)
	}
	return out, nil
}

// sortDMs puts the most recent activity first.
func sortDMs(dms []DMEntry) {
	slices.SortFunc(dms, func(a, b DMEntry) int {
		switch {
		case a.LastID.After(b.LastID):
			return -1
		case b.LastID.After(a.LastID):
			return 1
		}
		return strings.Compare(a.DM.Address, b.DM.Address)
	})
}

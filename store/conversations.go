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
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
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
	// An edit or a delete of the last message of a DM: its excerpt in the
	// members' lists follows (FollowDMEntry).
	selectDMLast        = `SELECT last_id FROM read_markers WHERE login = ? AND conversation = ?`
	updateDMExcerpt     = `UPDATE read_markers USING TIMESTAMP ? SET last_excerpt = ? WHERE login = ? AND conversation = ?`
	updateDMListExcerpt = `UPDATE dm_lists USING TIMESTAMP ? SET last_excerpt = ? WHERE login = ? AND conversation = ?`

	// excerptLength is how much of the last message a DM list shows.
	excerptLength = 100
)

// DM returns the DM at address (canonical or not) with its members read
// from their accounts, or chat.ErrNotFound if the address is malformed or names
// someone without an account.
func (s *Store) DM(ctx context.Context, address string) (chat.DM, error) {
	canonical, _, err := chat.ParseDMAddress(address)
	if err != nil {
		return chat.DM{}, fmt.Errorf("store: dm %q: %w", address, chat.ErrNotFound)
	}
	logins := strings.Split(canonical, "+")
	refs, err := s.UserRefs(ctx, logins)
	if err != nil {
		return chat.DM{}, err
	}
	if len(refs) != len(logins) {
		return chat.DM{}, fmt.Errorf("store: dm %q: someone has no account: %w", address, chat.ErrNotFound)
	}
	return chat.DM{Address: canonical, Members: refs}, nil
}

// UserRefs returns the people with these logins that have accounts,
// sorted by login, in one query.
func (s *Store) UserRefs(ctx context.Context, logins []string) ([]chat.UserRef, error) {
	q, err := s.query(ctx, selectUserRefs, logins)
	if err != nil {
		return nil, err
	}
	var out []chat.UserRef
	iter := q.Iter()
	var u chat.UserRef
	for iter.Scan(&u.Login, &u.Firstname, &u.Lastname) {
		out = append(out, u)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read people", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Login < out[j].Login })
	return out, nil
}

// excerptOf is what a DM list shows of a message's text.
func excerptOf(content string) string {
	if utf8.RuneCountInString(content) > excerptLength {
		return string([]rune(content)[:excerptLength]) + "…"
	}
	return content
}

// followDMEntry has the members' lists of d follow the change (an id of
// now) of their last message id: its new text (nil: deleted, the excerpt
// goes). One read (a member's entry; they are the same) tells whether id
// is the last message; a later message's entry, written before, wins
// anyway. The writes carry the change's time, later than the message's:
// a message posted between the read and the writes with an earlier id
// may be listed with this excerpt until the next message.
func (s *Store) followDMEntry(ctx context.Context, d chat.DM, id chat.ID, content *string, change chat.ID) error {
	if len(d.Members) == 0 {
		return nil
	}
	conv := chat.DMPrefix + d.Address
	q, err := s.query(ctx, selectDMLast, d.Members[0].Login, conv)
	if err != nil {
		return err
	}
	var last chat.ID
	if err := q.Scan((*gocql.UUID)(&last)); err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return s.fail("read the dm entry of "+conv, err)
	}
	if last != id {
		return nil
	}
	var excerpt any // null: the message is gone
	if content != nil {
		excerpt = excerptOf(*content)
	}
	var errs []error
	for _, member := range d.Members {
		args := []any{writeTime(change), excerpt, member.Login, conv}
		if err := s.writeDMEntry(ctx, updateDMExcerpt, updateDMListExcerpt, args); err != nil {
			errs = append(errs, s.fail("follow a change in the dm list of "+member.Login, err))
		}
	}
	return errors.Join(errs...)
}

// writeDMEntry writes a member's DM entry in read_markers (entry) and in
// dm_lists (list), with the same values, in one batch: both rows are in
// the member's partition, so it is one mutation.
func (s *Store) writeDMEntry(ctx context.Context, entry, list string, args []any) error {
	sess, err := s.db()
	if err != nil {
		return err
	}
	b := sess.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
	b.SetConsistency(s.cfg.Consistency)
	b.Entries = append(b.Entries,
		gocql.BatchEntry{Stmt: entry, Args: args, Idempotent: true},
		gocql.BatchEntry{Stmt: list, Args: args, Idempotent: true})
	return sess.ExecuteBatch(b)
}

// RecordDMMessage puts m as the last message of d in every member's list.
// Each write carries the message's time, so the newest message wins in
// every list however concurrent sends interleave. A member's entry is
// written to read_markers (what this version reads) and to dm_lists (what
// versions before schema 010 read, during a rolling upgrade) in one
// batch: both rows are in the member's partition, so it is one mutation.
func (s *Store) RecordDMMessage(ctx context.Context, d chat.DM, m chat.Message) error {
	excerpt := excerptOf(m.Content)
	errs := make(chan error, len(d.Members))
	for _, member := range d.Members {
		go func() {
			args := []any{writeTime(m.ID), d.Members, gocql.UUID(m.ID), m.Author, excerpt, member.Login, chat.DMPrefix + d.Address}
			if err := s.writeDMEntry(ctx, updateDMEntry, updateDMList, args); err != nil {
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
func (s *Store) PersonalState(ctx context.Context, login string) (chat.Markers, []chat.DMEntry, error) {
	q, err := s.query(ctx, selectPersonal, login)
	if err != nil {
		return chat.Markers{}, nil, err
	}
	m := chat.Markers{Read: map[string]chat.ID{}, Mention: map[string]chat.ID{}, Level: map[string]chat.Level{}}
	var (
		dms   []chat.DMEntry
		moved bool
		iter  = q.Iter()
	)
	for {
		var (
			e               chat.DMEntry
			conv            string
			marker, mention chat.ID
			rowMoved        *bool
			level           string
		)
		if !iter.Scan(&conv, (*gocql.UUID)(&marker), (*gocql.UUID)(&mention), &e.DM.Members, (*gocql.UUID)(&e.LastID), &e.LastAuthor, &e.LastExcerpt, &rowMoved, &level) {
			break
		}
		if level != "" {
			m.Level[conv] = chat.Level(level)
		}
		moved = moved || (rowMoved != nil && *rowMoved)
		if marker != (chat.ID{}) {
			m.Read[conv] = marker
		}
		if mention != (chat.ID{}) {
			m.Mention[conv] = mention
		}
		if len(e.DM.Members) > 0 {
			e.DM.Members = eachOnce(e.DM.Members)
			e.DM.Address = strings.TrimPrefix(conv, chat.DMPrefix)
			dms = append(dms, e)
		}
	}
	if err := iter.Close(); err != nil {
		return chat.Markers{}, nil, s.fail("read the markers and dms of "+login, err)
	}
	if !moved {
		if dms, err = s.moveDMList(ctx, login); err != nil {
			return chat.Markers{}, nil, err
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
func (s *Store) moveDMList(ctx context.Context, login string) ([]chat.DMEntry, error) {
	dms, err := s.oldDMList(ctx, login)
	if err != nil {
		return nil, err
	}
	err = s.eachConcurrently(ctx, len(dms), 8, func(ctx context.Context, i int) error {
		e := dms[i]
		return s.exec(ctx, "move the dm list of "+login, updateDMEntry,
			writeTime(e.LastID), e.DM.Members, gocql.UUID(e.LastID), e.LastAuthor, e.LastExcerpt, login, chat.DMPrefix+e.DM.Address)
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
func (s *Store) DMList(ctx context.Context, login string) ([]chat.DMEntry, error) {
	_, dms, err := s.PersonalState(ctx, login)
	return dms, err
}

// oldDMList is login's entries of dm_lists, as versions before schema
// 010 kept them.
func (s *Store) oldDMList(ctx context.Context, login string) ([]chat.DMEntry, error) {
	q, err := s.query(ctx, selectDMList, login)
	if err != nil {
		return nil, err
	}
	var out []chat.DMEntry
	iter := q.Iter()
	for {
		var (
			e    chat.DMEntry
			conv string
		)
		if !iter.Scan(&conv, &e.DM.Members, (*gocql.UUID)(&e.LastID), &e.LastAuthor, &e.LastExcerpt) {
			break
		}
		e.DM.Members = eachOnce(e.DM.Members)
		e.DM.Address = strings.TrimPrefix(conv, chat.DMPrefix)
		out = append(out, e)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read dms of "+login, err)
	}
	return out, nil
}

// eachOnce is members with each login once. members is a list column
// written USING TIMESTAMP the message's time: a list's overwrite removes
// the cells older than its timestamp only, so a repeat of the same write
// (a driver's retry, a speculative second try) appends a second copy at
// the same timestamp, until the next message's write replaces them all.
func eachOnce(members []chat.UserRef) []chat.UserRef {
	seen := make(map[string]bool, len(members))
	return slices.DeleteFunc(members, func(m chat.UserRef) bool {
		if seen[m.Login] {
			return true
		}
		seen[m.Login] = true
		return false
	})
}

// sortDMs puts the most recent activity first.
func sortDMs(dms []chat.DMEntry) {
	slices.SortFunc(dms, func(a, b chat.DMEntry) int {
		switch {
		case a.LastID.After(b.LastID):
			return -1
		case b.LastID.After(a.LastID):
			return 1
		}
		return strings.Compare(a.DM.Address, b.DM.Address)
	})
}

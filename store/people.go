// This file owns the people directory (/people): each person listed under
// their login and their folded first and last names (schema 019), found
// by prefix a page at a time, and the one move that lists the people who
// signed up before it existed.

package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertPerson = `INSERT INTO people (kind, initial, term, login, firstname, lastname) VALUES (?, ?, ?, ?, ?, ?)`
	selectPeople = `SELECT term, login, firstname, lastname FROM people
		WHERE kind = ? AND initial = ? AND (term, login) > (?, ?) AND term < ? LIMIT ?`
	selectAllUsers = `SELECT login, firstname, lastname FROM users`
	// peopleMove names the listing of earlier sign-ups in data_moves.
	peopleMove = "019_people"
)

// Kinds of rows of people.
const (
	byLogin = "login"
	byName  = "name"
)

// loginInitials are the first characters a login key can have, in order.
const loginInitials = "0123456789abcdefghijklmnopqrstuvwxyz"

// RecordPerson lists u in the directory under their login and names. It
// is idempotent.
func (s *Store) RecordPerson(ctx context.Context, u chat.UserRef) error {
	for _, row := range personRows(u) {
		if err := s.exec(ctx, "list person "+u.Login, insertPerson, row...); err != nil {
			return err
		}
	}
	return nil
}

// personRows are the values of u's rows of people: under the login, and
// each name that folds to something.
func personRows(u chat.UserRef) [][]any {
	rows := [][]any{{byLogin, initialOf(u.Login), u.Login, u.Login, u.Firstname, u.Lastname}}
	for _, name := range []string{u.Firstname, u.Lastname} {
		if term := chat.FoldName(name); term != "" {
			rows = append(rows, []any{byName, initialOf(term), term, u.Login, u.Firstname, u.Lastname})
		}
	}
	return rows
}

// personRow is one row of people.
type personRow struct {
	term string
	who  chat.UserRef
}

// peopleSlice reads up to n rows of one partition of people whose term
// starts with prefix ("" for all), after (term, login).
func (s *Store) peopleSlice(ctx context.Context, kind, initial, prefix, afterTerm, afterLogin string, n int) ([]personRow, error) {
	if afterTerm < prefix {
		afterTerm, afterLogin = prefix, ""
	}
	q, err := s.query(ctx, selectPeople, kind, initial, afterTerm, afterLogin, prefix+"\U0010FFFF", n)
	if err != nil {
		return nil, err
	}
	iter := q.PageSize(0).Iter()
	var (
		out []personRow
		r   personRow
	)
	for iter.Scan(&r.term, &r.who.Login, &r.who.Firstname, &r.who.Lastname) {
		out = append(out, r)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("list people", err)
	}
	return out, nil
}

// People are up to n people of the directory after the cursor, and the
// cursor after them if more follow (nil if not). With no prefix, the
// whole directory in login order (the login partitions one after the
// other); with one, those whose login or a name starts with it (folded),
// ordered by the matching term, each person once per page.
func (s *Store) People(ctx context.Context, prefix string, after chat.PeopleCursor, n int) ([]chat.UserRef, *chat.PeopleCursor, error) {
	prefix = chat.FoldName(prefix)
	if prefix == "" {
		return s.allPeople(ctx, after, n)
	}
	logins, err := s.peopleSlice(ctx, byLogin, initialOf(prefix), prefix, after.Login, after.Login, n+1)
	if err != nil {
		return nil, nil, err
	}
	names, err := s.peopleSlice(ctx, byName, initialOf(prefix), prefix, after.NameTerm, after.NameLogin, n+1)
	if err != nil {
		return nil, nil, err
	}
	// Merge the two sorted slices, n rows at most; the cursor keeps each
	// slice's last row taken.
	type taken struct {
		personRow
		name bool
	}
	all := make([]taken, 0, len(logins)+len(names))
	for _, r := range logins {
		all = append(all, taken{r, false})
	}
	for _, r := range names {
		all = append(all, taken{r, true})
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].term != all[j].term {
			return all[i].term < all[j].term
		}
		return all[i].who.Login < all[j].who.Login
	})
	next := after
	var out []chat.UserRef
	seen := map[string]bool{}
	for i, r := range all {
		if i == n {
			return out, &next, nil
		}
		if r.name {
			next.NameTerm, next.NameLogin = r.term, r.who.Login
		} else {
			next.Login = r.who.Login
		}
		if !seen[r.who.Login] {
			seen[r.who.Login] = true
			out = append(out, r.who)
		}
	}
	return out, nil, nil
}

// allPeople is the directory in login order, from the login partitions
// after after.Login's.
func (s *Store) allPeople(ctx context.Context, after chat.PeopleCursor, n int) ([]chat.UserRef, *chat.PeopleCursor, error) {
	var out []chat.UserRef
	for _, c := range loginInitials {
		initial := string(c)
		if after.Login != "" && initial < initialOf(after.Login) {
			continue
		}
		rows, err := s.peopleSlice(ctx, byLogin, initial, "", after.Login, after.Login, n+1-len(out))
		if err != nil {
			return nil, nil, err
		}
		for _, r := range rows {
			if len(out) == n {
				return out, &chat.PeopleCursor{Login: out[n-1].Login}, nil
			}
			out = append(out, r.who)
		}
	}
	return out, nil, nil
}

// movePeople lists every person who signed up before the directory
// existed, once (data_moves). It is idempotent.
func (s *Store) movePeople(ctx context.Context, sess *gocql.Session) error {
	var done time.Time
	err := sess.Query(selectMove, peopleMove).WithContext(ctx).Scan(&done)
	if err == nil {
		return nil
	}
	if !errors.Is(err, gocql.ErrNotFound) {
		return fmt.Errorf("store: list people: %w", err)
	}
	iter := sess.Query(selectAllUsers).WithContext(ctx).PageSize(200).Iter()
	var u chat.UserRef
	listed := 0
	for iter.Scan(&u.Login, &u.Firstname, &u.Lastname) {
		for _, row := range personRows(u) {
			if err := sess.Query(insertPerson, row...).WithContext(ctx).Exec(); err != nil {
				iter.Close()
				return fmt.Errorf("store: list person %q: %w", u.Login, err)
			}
		}
		listed++
		u = chat.UserRef{}
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("store: list people: %w", err)
	}
	if err := sess.Query(insertMove, peopleMove, time.Now()).WithContext(ctx).Exec(); err != nil {
		return fmt.Errorf("store: list people: %w", err)
	}
	s.log.Info("store: people listed in the directory", "listed", listed)
	return nil
}

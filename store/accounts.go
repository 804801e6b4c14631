// This file owns the life of an account as administrators see it: its
// state (active, deactivated, deleted), finding people by the start of
// their login, name or email, their sessions at a glance, setting a
// password without the old one, and deleting an account.

package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	updateStatus = `UPDATE users SET status = ?, status_at = ? WHERE login = ?`
	// eraseUser keeps the row (the login stays taken, so no one else
	// signs up under a deleted person's name and inherits their
	// messages) and drops what it held.
	eraseUser = `UPDATE users SET status = ?, status_at = ?, pass = null, firstname = null, lastname = null,
		email = null, bio = null, chat_rooms = null, chat_room_titles = null WHERE login = ?`

	insertPersonTerm  = `INSERT INTO people_terms (kind, term, login) VALUES (?, ?, ?)`
	deletePersonTerm  = `DELETE FROM people_terms WHERE kind = ? AND term = ? AND login = ?`
	selectPeopleFrom  = `SELECT term, login FROM people_terms WHERE kind = ? AND (term, login) > (?, ?) AND (term) < (?) LIMIT ?`
	selectUsersToList = `SELECT login, firstname, lastname, email FROM users`
	// The closed accounts are rows of kind 'closed': term the login,
	// login its state, so every instance reads them in one query.
	reopenAccount    = `DELETE FROM people_terms WHERE kind = ? AND term = ?`
	selectClosed     = `SELECT term, login FROM people_terms WHERE kind = ?`
	peopleKindClosed = "closed"
	selectSessionAge = `SELECT WRITETIME(data) FROM sessions WHERE id = ?`

	// peopleKindLogin lists everyone by login; peopleKindAny holds every
	// term of everyone.
	peopleKindLogin = "login"
	peopleKindAny   = "any"
	peopleIndexMove = "018_people_terms"
)

// personTerms are the lower-case words a person is found by.
func personTerms(login, first, last, email string) []string {
	var terms []string
	for _, t := range []string{login, first, last, email} {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" {
			terms = append(terms, t)
		}
	}
	return terms
}

// indexPerson lists u for the administration page's search.
func (s *Store) indexPerson(ctx context.Context, login, first, last, email string) error {
	if err := s.exec(ctx, "index person", insertPersonTerm, peopleKindLogin, login, login); err != nil {
		return err
	}
	for _, t := range personTerms(login, first, last, email) {
		if err := s.exec(ctx, "index person", insertPersonTerm, peopleKindAny, t, login); err != nil {
			return err
		}
	}
	return nil
}

// unindexPerson takes u out of the search, but for their login.
func (s *Store) unindexPerson(ctx context.Context, u chat.User) error {
	for _, t := range personTerms("", u.Firstname, u.Lastname, u.Email) {
		if t == u.Login {
			continue
		}
		if err := s.exec(ctx, "unindex person", deletePersonTerm, peopleKindAny, t, u.Login); err != nil {
			return err
		}
	}
	return nil
}

// People are up to n logins, by login, of the people whose login, first
// name, last name or email starts with prefix (lower case; "" for
// everyone), after the cursor; and the cursor of the next page (zero
// when there is none).
func (s *Store) AdminPeople(ctx context.Context, prefix string, after chat.AdminCursor, n int) ([]string, chat.AdminCursor, error) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	kind := peopleKindAny
	if prefix == "" {
		kind = peopleKindLogin
	}
	if after.Term < prefix {
		after = chat.AdminCursor{Term: prefix}
	}
	q, err := s.query(ctx, selectPeopleFrom, kind, after.Term, after.Login, prefix+"\U0010FFFF", n+1)
	if err != nil {
		return nil, chat.AdminCursor{}, err
	}
	var (
		logins      []string
		seen        = map[string]bool{}
		next        chat.AdminCursor
		term, login string
		rows        int
	)
	iter := q.Iter()
	for iter.Scan(&term, &login) {
		rows++
		if rows > n {
			break
		}
		next = chat.AdminCursor{Term: term, Login: login}
		if !seen[login] {
			seen[login] = true
			logins = append(logins, login)
		}
	}
	if err := iter.Close(); err != nil {
		return nil, chat.AdminCursor{}, s.fail("find people", err)
	}
	if rows <= n {
		next = chat.AdminCursor{}
	}
	return logins, next, nil
}

// SessionsSeen is how many sessions login has and when the newest was
// last saved (zero if none).
func (s *Store) SessionsSeen(ctx context.Context, login string) (int, time.Time, error) {
	ids, err := s.Sessions(ctx, login)
	if err != nil {
		return 0, time.Time{}, err
	}
	var last time.Time
	n := 0
	for _, id := range ids {
		q, err := s.query(ctx, selectSessionAge, id)
		if err != nil {
			return 0, time.Time{}, err
		}
		var micros int64
		if err := q.Scan(&micros); err != nil {
			if errors.Is(err, gocql.ErrNotFound) {
				continue // expired, its listing not yet
			}
			return 0, time.Time{}, s.fail("read session of "+login, err)
		}
		n++
		if t := time.UnixMicro(micros); t.After(last) {
			last = t
		}
	}
	return n, last, nil
}

// SetStatus sets login's account state (chat.AccountActive,
// chat.AccountDeactivated). chat.ErrNotFound if there is no such
// account, or it is deleted.
func (s *Store) SetStatus(ctx context.Context, login, status string) error {
	u, err := s.User(ctx, login)
	if err != nil {
		return err
	}
	if u.Status == chat.AccountDeleted {
		return fmt.Errorf("store: set status of %q: deleted: %w", login, chat.ErrNotFound)
	}
	var value any
	if status != chat.AccountActive {
		value = status
	}
	if err := s.exec(ctx, "set status of "+u.Login, updateStatus, value, s.Now().UTC(), u.Login); err != nil {
		return err
	}
	return s.markClosed(ctx, u.Login, status)
}

// markClosed lists login among the closed accounts with status, or takes
// them out for chat.AccountActive.
func (s *Store) markClosed(ctx context.Context, login, status string) error {
	if err := s.exec(ctx, "reopen "+login, reopenAccount, peopleKindClosed, login); err != nil {
		return err
	}
	if status == chat.AccountActive {
		return nil
	}
	return s.exec(ctx, "close "+login, insertPersonTerm, peopleKindClosed, login, status)
}

// ClosedAccounts are the deactivated and deleted accounts: login to
// chat.AccountDeactivated or chat.AccountDeleted.
func (s *Store) ClosedAccounts(ctx context.Context) (map[string]string, error) {
	q, err := s.query(ctx, selectClosed, peopleKindClosed)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var login, status string
	iter := q.Iter()
	for iter.Scan(&login, &status) {
		out[login] = status
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read closed accounts", err)
	}
	return out, nil
}

// SetPassword sets login's password without the old one (a reset
// link); a bad one is a chat.ValidationError.
func (s *Store) SetPassword(ctx context.Context, login, password, confirm string) error {
	v := chat.ValidationError{}
	chat.CheckPassword(v, password, confirm)
	if err := v.Err(); err != nil {
		return err
	}
	hash, err := hashPassword(ctx, password)
	if err != nil {
		return err
	}
	return s.exec(ctx, "set password of "+login, updatePassword, hash, chat.NameKey(login))
}

// EraseUser deletes login's profile: their name, email, bio, password
// and list of rooms go, the row stays as "deleted" so the login is never
// given again. Their sessions are ended by the caller.
func (s *Store) EraseUser(ctx context.Context, u chat.User) error {
	if err := s.unindexPerson(ctx, u); err != nil {
		return err
	}
	if err := s.exec(ctx, "erase user "+u.Login, eraseUser, chat.AccountDeleted, s.Now().UTC(), u.Login); err != nil {
		return err
	}
	return s.markClosed(ctx, u.Login, chat.AccountDeleted)
}

// settleSite runs once per site (data_moves): it lists every person who
// signed up before the search of people existed, and gives a site that
// had people before administrators existed a row with none, so that no
// later sign-up becomes its administrator by itself.
func (s *Store) settleSite(ctx context.Context, sess *gocql.Session) error {
	var done time.Time
	err := sess.Query(selectMove, peopleIndexMove).WithContext(ctx).Scan(&done)
	if err == nil {
		return nil
	}
	if !errors.Is(err, gocql.ErrNotFound) {
		return fmt.Errorf("store: settle site: %w", err)
	}
	iter := sess.Query(selectUsersToList).WithContext(ctx).PageSize(500).Iter()
	var login, first, last, email string
	people := 0
	for iter.Scan(&login, &first, &last, &email) {
		people++
		for _, t := range append([]string{""}, personTerms(login, first, last, email)...) {
			kind, term := peopleKindAny, t
			if t == "" {
				kind, term = peopleKindLogin, login
			}
			if err := sess.Query(insertPersonTerm, kind, term, login).WithContext(ctx).Exec(); err != nil {
				iter.Close()
				return fmt.Errorf("store: settle site: %w", err)
			}
		}
		login, first, last, email = "", "", "", ""
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("store: settle site: %w", err)
	}
	if people > 0 {
		if err := sess.Query(establishSite, time.Now().UTC(), siteRowKey).WithContext(ctx).
			SerialConsistency(s.cfg.SerialConsistency).Exec(); err != nil {
			return fmt.Errorf("store: settle site: %w", err)
		}
	}
	return sess.Query(insertMove, peopleIndexMove, time.Now()).WithContext(ctx).Exec()
}

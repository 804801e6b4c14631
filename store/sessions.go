// This file owns the sessions table: one row per login session, written
// USING TTL so it expires by itself, deleted on logout so a copied cookie
// stops working at once. Each session is also listed under its login in
// sessions_by_user (same TTL), so a password change can end the others.

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertSession = `INSERT INTO sessions (id, login, data, created_at) VALUES (?, ?, ?, ?) USING TTL ?`
	selectSession = `SELECT login, data FROM sessions WHERE id = ?`
	deleteSession = `DELETE FROM sessions WHERE id = ?`
	selectTTL     = `SELECT TTL(data) FROM sessions WHERE id = ?`

	insertUserSession  = `INSERT INTO sessions_by_user (login, session_id) VALUES (?, ?) USING TTL ?`
	selectUserSessions = `SELECT session_id FROM sessions_by_user WHERE login = ?`
	deleteUserSession  = `DELETE FROM sessions_by_user WHERE login = ? AND session_id = ?`
)

// SaveSession writes (or rewrites) the session id with a TTL of maxAge
// (whole seconds; under a second is chat.ErrInvalid). A logged-in session
// is listed under its login first, so there is never a session that a
// password change cannot find. It implements web/session's Sessions, with
// Session and DeleteSession.
func (s *Store) SaveSession(ctx context.Context, id string, row chat.SessionRow, maxAge time.Duration) error {
	ttl := int(maxAge / time.Second)
	if ttl < 1 {
		return fmt.Errorf("store: save session: max age %v: %w", maxAge, chat.ErrInvalid)
	}
	if row.Login != "" {
		if err := s.exec(ctx, "list session", insertUserSession, row.Login, id, ttl); err != nil {
			return err
		}
	}
	q, err := s.query(ctx, insertSession, id, row.Login, row.Data, s.Now().UTC(), ttl)
	if err != nil {
		return err
	}
	if err := q.Exec(); err != nil {
		return s.fail("save session", err)
	}
	return nil
}

// Session returns the stored session id, or chat.ErrNotFound if it never existed,
// expired or was deleted.
func (s *Store) Session(ctx context.Context, id string) (chat.SessionRow, error) {
	q, err := s.query(ctx, selectSession, id)
	if err != nil {
		return chat.SessionRow{}, err
	}
	var row chat.SessionRow
	err = q.Scan(&row.Login, &row.Data)
	if errors.Is(err, gocql.ErrNotFound) {
		return chat.SessionRow{}, fmt.Errorf("store: session: %w", chat.ErrNotFound)
	}
	if err != nil {
		return chat.SessionRow{}, s.fail("read session", err)
	}
	return row, nil
}

// DeleteSession removes the session id of login (login may be "" for a
// session nobody logged into); deleting a missing one is no error.
func (s *Store) DeleteSession(ctx context.Context, login, id string) error {
	if err := s.exec(ctx, "delete session", deleteSession, id); err != nil {
		return err
	}
	if login == "" {
		return nil
	}
	return s.exec(ctx, "unlist session", deleteUserSession, login, id)
}

// EndOtherSessions deletes every session of login except keep and returns
// the ids it ended, so their live streams can be closed too.
func (s *Store) EndOtherSessions(ctx context.Context, login, keep string) ([]string, error) {
	ids, err := s.Sessions(ctx, login)
	if err != nil {
		return nil, err
	}
	ended := ids[:0]
	for _, id := range ids {
		if id == keep {
			continue
		}
		if err := s.DeleteSession(ctx, login, id); err != nil {
			return nil, err
		}
		ended = append(ended, id)
	}
	return ended, nil
}

// Sessions lists the live session ids of login.
func (s *Store) Sessions(ctx context.Context, login string) ([]string, error) {
	q, err := s.query(ctx, selectUserSessions, login)
	if err != nil {
		return nil, err
	}
	var ids []string
	iter := q.Iter()
	for id := ""; iter.Scan(&id); {
		ids = append(ids, id)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("list sessions of "+login, err)
	}
	return ids, nil
}

// SessionTTL is the time the session id has left, or chat.ErrNotFound.
func (s *Store) SessionTTL(ctx context.Context, id string) (time.Duration, error) {
	q, err := s.query(ctx, selectTTL, id)
	if err != nil {
		return 0, err
	}
	var ttl int
	err = q.Scan(&ttl)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, fmt.Errorf("store: session ttl: %w", chat.ErrNotFound)
	}
	if err != nil {
		return 0, s.fail("read session ttl", err)
	}
	return time.Duration(ttl) * time.Second, nil
}

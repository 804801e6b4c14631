// This file owns the sessions table: one row per login session, written
// USING TTL so it expires by itself, deleted on logout so a copied cookie
// stops working at once.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
)

const (
	insertSession = `INSERT INTO sessions (id, login, data, created_at) VALUES (?, ?, ?, ?) USING TTL ?`
	selectSession = `SELECT login, data FROM sessions WHERE id = ?`
	deleteSession = `DELETE FROM sessions WHERE id = ?`
	selectTTL     = `SELECT TTL(data) FROM sessions WHERE id = ?`
)

// SessionRow is a stored session: whose it is and its encoded values.
type SessionRow struct {
	Login string
	Data  []byte
}

// SaveSession writes (or rewrites) the session id with a TTL of maxAge.
func (s *Store) SaveSession(ctx context.Context, id string, row SessionRow, maxAge time.Duration) error {
	ttl := int(maxAge / time.Second)
	if ttl < 1 {
		return fmt.Errorf("store: save session: max age %v: %w", maxAge, ErrInvalid)
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

// Session returns the stored session id, or ErrNotFound if it never existed,
// expired or was deleted.
func (s *Store) Session(ctx context.Context, id string) (SessionRow, error) {
	q, err := s.query(ctx, selectSession, id)
	if err != nil {
		return SessionRow{}, err
	}
	var row SessionRow
	err = q.Scan(&row.Login, &row.Data)
	if errors.Is(err, gocql.ErrNotFound) {
		return SessionRow{}, fmt.Errorf("store: session: %w", ErrNotFound)
	}
	if err != nil {
		return SessionRow{}, s.fail("read session", err)
	}
	return row, nil
}

// DeleteSession removes the session id; deleting a missing one is no error.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	q, err := s.query(ctx, deleteSession, id)
	if err != nil {
		return err
	}
	if err := q.Exec(); err != nil {
		return s.fail("delete session", err)
	}
	return nil
}

// SessionTTL is the time the session id has left, or ErrNotFound.
func (s *Store) SessionTTL(ctx context.Context, id string) (time.Duration, error) {
	q, err := s.query(ctx, selectTTL, id)
	if err != nil {
		return 0, err
	}
	var ttl int
	err = q.Scan(&ttl)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, fmt.Errorf("store: session ttl: %w", ErrNotFound)
	}
	if err != nil {
		return 0, s.fail("read session ttl", err)
	}
	return time.Duration(ttl) * time.Second, nil
}

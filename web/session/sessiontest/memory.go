// This file owns Memory, the in-memory Sessions: rows with an expiry in
// whole seconds, as Cassandra's TTL counts them.

package sessiontest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// Memory keeps session rows in a map. Its zero value is not ready: use
// NewMemory.
type Memory struct {
	// Now is the clock that rows expire by; tests move it.
	Now func() time.Time

	mu   sync.Mutex
	rows map[string]memoryRow
}

type memoryRow struct {
	row     chat.SessionRow
	expires time.Time
}

// NewMemory is an empty store on the wall clock.
func NewMemory() *Memory {
	return &Memory{Now: time.Now, rows: map[string]memoryRow{}}
}

// Session returns the row of id, or chat.ErrNotFound once it expired or
// was deleted.
func (m *Memory) Session(_ context.Context, id string) (chat.SessionRow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	if !ok || !m.Now().Before(r.expires) {
		delete(m.rows, id)
		return chat.SessionRow{}, fmt.Errorf("memory: session: %w", chat.ErrNotFound)
	}
	return chat.SessionRow{Login: r.row.Login, Data: clone(r.row.Data)}, nil
}

// SaveSession writes the row of id to expire after maxAge in whole
// seconds; under a second is chat.ErrInvalid.
func (m *Memory) SaveSession(_ context.Context, id string, row chat.SessionRow, maxAge time.Duration) error {
	ttl := maxAge.Truncate(time.Second)
	if ttl < time.Second {
		return fmt.Errorf("memory: save session: max age %v: %w", maxAge, chat.ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows[id] = memoryRow{row: chat.SessionRow{Login: row.Login, Data: clone(row.Data)}, expires: m.Now().Add(ttl)}
	return nil
}

// DeleteSession removes the row of id; a missing row is no error.
func (m *Memory) DeleteSession(_ context.Context, _, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rows, id)
	return nil
}

// clone copies b, as a database does between what is written and what is
// read back.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

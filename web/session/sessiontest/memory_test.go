package sessiontest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/web/session"
	"github.com/killrchat/killrchat/web/session/sessiontest"
)

// TestMemory holds the in-memory Sessions to the contract the store's
// Cassandra implementation passes (store's TestSessionsContract).
func TestMemory(t *testing.T) {
	t.Parallel()
	sessiontest.Run(t, func(t *testing.T) (session.Sessions, func(time.Duration)) {
		var mu sync.Mutex
		now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		m := sessiontest.NewMemory()
		m.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		return m, func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	})
}

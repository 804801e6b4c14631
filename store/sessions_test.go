package store_test

import (
	"testing"
	"time"

	"github.com/killrchat/killrchat/web/session"
	"github.com/killrchat/killrchat/web/session/sessiontest"
)

// TestSessionsContract holds the sessions table to the contract of
// session.Sessions, the one the in-memory implementation of the fast tier
// passes too (web/session/sessiontest's TestMemory).
func TestSessionsContract(t *testing.T) {
	t.Parallel()
	sessiontest.Run(t, func(t *testing.T) (session.Sessions, func(time.Duration)) {
		return db.Store, time.Sleep
	})
}

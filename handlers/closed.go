// This file owns the closed accounts as pages show them: the messages of
// a deactivated person carry a mark, a deleted person's are shown under
// "deleted user". Each instance keeps the list (one partition) for a
// while, and drops it when a deactivation, reactivation or deletion on
// any instance says so (live.Invalidation.Accounts) or the hub resets.

package handlers

import (
	"context"
	"sync"
	"time"

	"github.com/killrchat/killrchat/live"
)

// closedTTL bounds how long an instance trusts its list of closed
// accounts when it heard of no change.
const closedTTL = 5 * time.Minute

type closedAccounts struct {
	mu     sync.Mutex
	list   map[string]string
	readAt time.Time
}

// watchClosed drops the list on every change of an account's state.
func (s *Server) watchClosed() {
	s.hub.WatchInvalidations(func(inv live.Invalidation) {
		if len(inv.Accounts) > 0 {
			s.closed.drop()
		}
	})
	s.hub.Watch(func(live.StreamEnd) {}, s.closed.drop)
}

func (c *closedAccounts) drop() {
	c.mu.Lock()
	c.list = nil
	c.mu.Unlock()
}

// closedList is the closed accounts, read again when dropped or old; a
// failed read shows no mark rather than failing the page.
func (s *Server) closedList(ctx context.Context) map[string]string {
	c := &s.closed
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.list != nil && time.Since(c.readAt) < closedTTL {
		return c.list
	}
	list, err := s.db.ClosedAccounts(ctx)
	if err != nil {
		s.log.Warn("closed accounts", "err", err)
		return nil
	}
	c.list, c.readAt = list, time.Now()
	return list
}

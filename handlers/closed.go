// This file owns the closed accounts as pages show them: the messages of
// a deactivated person carry a mark, a deleted person's are shown under
// "deleted user"; a bot's name carries "bot". Each instance keeps the
// lists (one partition each) for a while, and drops it when a deactivation, reactivation or deletion on
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
	// bots are the bots' logins, read and dropped with list (a bot's
	// creation invalidates Accounts too).
	bots map[string]bool
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
	c.list, c.bots = nil, nil
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
	bots, err := s.db.BotLogins(ctx)
	if err != nil {
		s.log.Warn("bots", "err", err)
		return nil
	}
	c.list, c.bots, c.readAt = list, bots, time.Now()
	return list
}

// botList is the bots' logins, read with the closed accounts.
func (s *Server) botList(ctx context.Context) map[string]bool {
	s.closedList(ctx)
	c := &s.closed
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bots
}

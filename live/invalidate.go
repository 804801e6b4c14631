// This file owns cache invalidation across instances: after a write that
// changes a room's row (join, leave, delete) or a person's row (their list
// of rooms, their profile), the handler names what changed in an
// Invalidation, and the hub takes it to the caches of every instance (see
// caches.go). Like a stream end, it is at-most-once through the broker: a
// broker reconnect resets every cache (Hub.Watch), and each entry lives at
// most its TTL, which bounds what a partition can leave stale.

package live

import (
	"context"
)

// Invalidation names cached rows that changed: rooms by name key, people
// by login.
type Invalidation struct {
	Rooms []string `json:"rooms,omitempty"`
	Users []string `json:"users,omitempty"`
	// Avatars are pictures changed: login to the new version, "" when
	// it was taken away.
	Avatars map[string]string `json:"avatars,omitempty"`
	// Accounts are people whose account closed (deactivated, deleted):
	// every instance drops their cached sessions, so their next request
	// reads the session from storage, where it is gone.
	Accounts []string `json:"accounts,omitempty"`
	// Levels are conversations in which someone's notification level
	// changed (service/cache.Levels).
	Levels []string `json:"levels,omitempty"`
}

// WatchInvalidations registers f (see Hub.WatchInvalidations).
func (h *LocalHub) WatchInvalidations(f func(Invalidation)) {
	h.mu.Lock()
	h.invalidated = append(h.invalidated, f)
	h.mu.Unlock()
}

// Invalidate tells this instance's caches at once.
func (h *LocalHub) Invalidate(_ context.Context, inv Invalidation) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, f := range h.invalidated {
		f(inv)
	}
	return nil
}

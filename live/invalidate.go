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
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Invalidation names cached rows that changed: rooms by name key, people
// by login.
type Invalidation struct {
	Rooms []string `json:"rooms,omitempty"`
	Users []string `json:"users,omitempty"`
}

type natsInvalidationEnvelope struct {
	Origin       string       `json:"origin"`
	Invalidation Invalidation `json:"invalidation"`
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

// WatchInvalidations registers f: the other instances' invalidations
// arrive through the local hub.
func (h *NATSHub) WatchInvalidations(f func(Invalidation)) { h.local.WatchInvalidations(f) }

// Invalidate tells this instance's caches at once and the others' through
// NATS.
func (h *NATSHub) Invalidate(ctx context.Context, inv Invalidation) error {
	_ = h.local.Invalidate(ctx, inv)
	data, err := json.Marshal(natsInvalidationEnvelope{Origin: h.origin, Invalidation: inv})
	if err != nil {
		return fmt.Errorf("nats: encode invalidation: %w", err)
	}
	if err := h.nc.Publish(natsInvalidateSubject, data); err != nil {
		return fmt.Errorf("nats: publish invalidation: %w", err)
	}
	return nil
}

func (h *NATSHub) deliverInvalidation(m *nats.Msg) {
	var env natsInvalidationEnvelope
	if err := json.Unmarshal(m.Data, &env); err != nil {
		h.log.Warn("nats: unreadable invalidation", "err", err)
		return
	}
	if env.Origin == h.origin {
		return // already told locally
	}
	_ = h.local.Invalidate(context.Background(), env.Invalidation)
}

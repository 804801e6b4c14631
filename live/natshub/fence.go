package natshub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/live/fence"
)

// peerWindow is how recently another instance must have been heard for
// a fence to wait for it, and for this instance's passes to need word
// from it: one silent for longer is gone or cut off, and its own passes
// are not held (live/fence).
const peerWindow = 3 * time.Second

// Enter lets a post of room in (live/fence). The pass is held if, when
// it leaves, this instance is connected, missed nothing since it entered,
// and has heard from every other instance something sent less than
// fence.LeaseFor before: then any fence sent before that moment was heard
// first, and its drain found the pass.
func (h *Hub) Enter(room string) *fence.Pass {
	epoch := h.epoch.Load()
	local := h.local.Enter(room)
	return fence.NewPass(func() { local.Leave() }, func() bool {
		return h.nc.IsConnected() && h.epoch.Load() == epoch && h.heardFromAll(time.Now())
	})
}

// heardFromAll says whether every instance heard within peerWindow sent
// its last word here less than fence.LeaseFor before now.
func (h *Hub) heardFromAll(now time.Time) bool {
	h.heardMu.Lock()
	defer h.heardMu.Unlock()
	for origin, f := range h.heard {
		if now.Sub(f.at) > peerWindow {
			if now.Sub(f.at) > time.Minute {
				delete(h.heard, origin)
			}
			continue
		}
		if now.UnixNano()-f.sent > int64(fence.LeaseFor) {
			return false
		}
	}
	return true
}

// peers are the instances heard within peerWindow.
func (h *Hub) peers(now time.Time) map[string]bool {
	h.heardMu.Lock()
	defer h.heardMu.Unlock()
	ps := map[string]bool{}
	for origin, f := range h.heard {
		if now.Sub(f.at) <= peerWindow {
			ps[origin] = true
		}
	}
	return ps
}

// Fence drops inv from this instance's caches and drains its gate of
// room, then asks every instance heard lately to do the same, on the
// events' subject, and waits for each one's answer, at most
// fence.FenceTimeout (live/fence).
func (h *Hub) Fence(ctx context.Context, room string, inv live.Invalidation) error {
	_ = h.local.Fence(ctx, room, inv)
	peers := h.peers(time.Now())
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	id := hex.EncodeToString(b)
	p := &pendingFence{waiting: peers, done: make(chan struct{})}
	if len(peers) == 0 {
		close(p.done)
	} else {
		h.fencesMu.Lock()
		h.fences[id] = p
		h.fencesMu.Unlock()
		defer func() {
			h.fencesMu.Lock()
			delete(h.fences, id)
			h.fencesMu.Unlock()
		}()
	}
	data, err := json.Marshal(natsEnvelope{Origin: h.origin, Sent: time.Now().UnixNano(),
		Fence: &fenceMsg{ID: id, Room: room, Invalidation: inv}})
	if err != nil {
		return fmt.Errorf("nats: encode fence: %w", err)
	}
	// Sent even with no peer known: an instance that has not been heard
	// yet still drops its caches.
	if err := h.nc.Publish(natsSubject, data); err != nil {
		return fmt.Errorf("nats: publish fence: %w", err)
	}
	timer := time.NewTimer(fence.FenceTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	h.fencesMu.Lock()
	missing := len(p.waiting)
	h.fencesMu.Unlock()
	return fmt.Errorf("nats: fence of %q: %d instances did not answer", room, missing)
}

// answerFence drops the fence's rows from the caches at once (before
// anything sent after the fence is handled here), then drains the gate
// away from the broker's delivery, and answers.
func (h *Hub) answerFence(from string, f fenceMsg) {
	_ = h.local.Invalidate(context.Background(), f.Invalidation)
	go func() {
		h.local.Drain(f.Room)
		data, err := json.Marshal(natsEnvelope{Origin: h.origin, Sent: time.Now().UnixNano(), Ack: &fenceAck{ID: f.ID, To: from}})
		if err == nil {
			_ = h.nc.Publish(natsSubject, data)
		}
	}()
}

// acknowledged takes note of from's answer to fence id.
func (h *Hub) acknowledged(from, id string) {
	h.fencesMu.Lock()
	defer h.fencesMu.Unlock()
	p := h.fences[id]
	if p == nil || !p.waiting[from] {
		return
	}
	delete(p.waiting, from)
	if len(p.waiting) == 0 {
		close(p.done)
	}
}

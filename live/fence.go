// This file is the in-process side of fences (live/fence): the local
// hub's gate, which every transport's fence drains.

package live

import (
	"context"

	"github.com/killrchat/killrchat/live/fence"
)

// Enter lets a post of room in (see fence.Pass). In one process every fence
// finds every pass, so the pass is always held.
func (h *LocalHub) Enter(room string) *fence.Pass { return fence.NewPass(h.gate.Enter(room), nil) }

// Fence drops what inv names from this instance's caches, then drains the
// gate of room here. In one process that is every instance.
func (h *LocalHub) Fence(ctx context.Context, room string, inv Invalidation) error {
	_ = h.Invalidate(ctx, inv)
	h.gate.Drain(room)
	return nil
}

// Drain is fence.Gate.Drain of this hub's gate, for a transport that hears of
// another instance's fence.
func (h *LocalHub) Drain(room string) { h.gate.Drain(room) }

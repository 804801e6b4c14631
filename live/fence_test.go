package live

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestFenceDrainsPasses: a fence drops its rows from the caches first,
// then returns only once the passes of its room that entered before have
// left; passes of other rooms do not hold it (unless they share a lock).
func TestFenceDrainsPasses(t *testing.T) {
	h := NewLocalHub()
	defer h.Close()
	var dropped atomic.Bool
	h.WatchInvalidations(func(inv Invalidation) {
		if len(inv.Rooms) == 1 && inv.Rooms[0] == "kitchen" {
			dropped.Store(true)
		}
	})
	pass := h.Enter("kitchen")
	done := make(chan error, 1)
	go func() { done <- h.Fence(context.Background(), "kitchen", Invalidation{Rooms: []string{"kitchen"}}) }()
	for !dropped.Load() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the fence returned (%v) while a post of its room was still writing", err)
	default:
	}
	if !pass.Leave() {
		t.Error("a pass of the in-process hub is always held")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !pass.Leave() {
		t.Error("a second Leave changed the answer")
	}
	// A pass entered after the fence is not waited for by it.
	if !h.Enter("kitchen").Leave() {
		t.Error("a later pass is not held")
	}
}

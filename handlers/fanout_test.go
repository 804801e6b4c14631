package handlers_test

import (
	"runtime"
	"testing"
	"time"
)

// TestIdleStreamTakesOneGoroutine: an open, idle stream costs the server
// one goroutine (before: two, the handler's and net/http's background
// reader). The client side of each takes three (Go's transport reads and
// writes in goroutines of their own, and the test reads the events in a
// third), so n streams add at most 4n.
func TestIdleStreamTakesOneGoroutine(t *testing.T) {
	a := newApp(t, nil, nil)
	owner := a.signedUp(t, unique("owner"))
	room := roomWith(t, owner)
	settle := func() int {
		time.Sleep(300 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	before := settle()
	const n = 15 // under the per-user cap
	for i := 0; i < n; i++ {
		if s := owner.subscribe(t, room, ""); s.status != 200 {
			t.Fatalf("stream %d: %d", i, s.status)
		}
	}
	per := float64(settle()-before) / n
	t.Logf("goroutines per open stream, client and server: %.2f", per)
	if per > 4.5 {
		t.Fatalf("%.2f goroutines per stream (client 3 + server): the server holds more than one", per)
	}
}

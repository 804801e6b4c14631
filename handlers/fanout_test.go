package handlers_test

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/store"
)

// TestHubEncodesAnEventOnce: every subscriber of a room gets the same
// event, encoded once as stream bytes (id line, data lines), not a copy
// to encode per connection.
func TestHubEncodesAnEventOnce(t *testing.T) {
	hub := handlers.NewLocalHub()
	a := hub.Subscribe("r", handlers.Subscriber{Login: "a"})
	b := hub.Subscribe("r", handlers.Subscriber{Login: "b"})
	defer a.Close()
	defer b.Close()
	id, _ := store.ParseMessageID(firstTimeUUID)
	m := store.Message{ID: id, Room: "r"}
	if err := hub.Publish(context.Background(), handlers.RoomEvent{Kind: handlers.EventMessage, Room: "r", Message: &m, HTML: []byte("<li>x\ny</li>")}); err != nil {
		t.Fatal(err)
	}
	evA, evB := <-a.C, <-b.C
	if evA != evB {
		t.Fatal("the subscribers got two copies of the event")
	}
	want := "id: " + firstTimeUUID + "\ndata: <li>x\ndata: y</li>\n\n"
	if got := handlers.Frame(evA); !bytes.Equal(got, []byte(want)) {
		t.Fatalf("frame %q, want %q", got, want)
	}
}

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

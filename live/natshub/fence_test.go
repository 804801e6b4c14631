package natshub

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/killrchat/killrchat/live"
)

func startNATS(t *testing.T) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats did not start")
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

func hubOn(t *testing.T, url string) *Hub {
	t.Helper()
	h, err := New(url, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	h.SetWatermark(func() int64 { return time.Now().UnixNano() / 100 }, time.Second)
	return h
}

// eventually waits up to 10 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFenceAcrossInstances (live/fence): a fence sent from A drops its
// rows from B's caches, and returns only once B's posts of the room that
// entered before have left; an instance that has gone silent makes a
// fence return an error after its timeout, and the passes of the others
// are not held until it is forgotten.
func TestFenceAcrossInstances(t *testing.T) {
	ns := startNATS(t)
	a, b := hubOn(t, ns.ClientURL()), hubOn(t, ns.ClientURL())
	eventually(t, "A and B to hear each other", func() bool { return a.peers(time.Now())[b.origin] && b.peers(time.Now())[a.origin] })
	var droppedOnB atomic.Bool
	b.WatchInvalidations(func(inv live.Invalidation) {
		if len(inv.Rooms) == 1 && inv.Rooms[0] == "kitchen" {
			droppedOnB.Store(true)
		}
	})

	pass := b.Enter("kitchen")
	done := make(chan error, 1)
	go func() {
		done <- a.Fence(context.Background(), "kitchen", live.Invalidation{Rooms: []string{"kitchen"}})
	}()
	eventually(t, "B to drop the room from its caches", droppedOnB.Load)
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the fence returned (%v) while a post of the room was still writing on B", err)
	default:
	}
	if !pass.Leave() {
		t.Fatal("B's pass was not held, though B heard A all along")
	}
	if err := <-done; err != nil {
		t.Fatalf("fence: %v", err)
	}

	// C joins, is heard, and dies without a word.
	c := hubOn(t, ns.ClientURL())
	eventually(t, "A and B to hear C", func() bool { return a.peers(time.Now())[c.origin] && b.peers(time.Now())[c.origin] })
	c.Close()
	// Until C is forgotten, B's passes are not held (C could have sent a
	// fence B has not heard), and A's fences wait for C in vain.
	eventually(t, "B's passes not to be held once C is silent", func() bool { return !b.Enter("pantry").Leave() })
	if err := a.Fence(context.Background(), "pantry", live.Invalidation{Rooms: []string{"pantry"}}); err == nil {
		t.Error("a fence with a silent instance said every instance answered")
	}
	eventually(t, "C to be forgotten", func() bool { return b.Enter("pantry").Leave() })
	if err := a.Fence(context.Background(), "pantry", live.Invalidation{Rooms: []string{"pantry"}}); err != nil {
		t.Errorf("fence once C is forgotten: %v", err)
	}
}

// TestPassNotHeldAcrossABrokerAbsence: a pass that was in flight while
// the broker went away and came back is not held (a fence may have been
// missed meanwhile); passes entered after that are.
func TestPassNotHeldAcrossABrokerAbsence(t *testing.T) {
	ns := startNATS(t)
	port := ns.Addr().(*net.TCPAddr).Port
	a := hubOn(t, ns.ClientURL())
	pass := a.Enter("kitchen")
	ns.Shutdown()
	eventually(t, "A to lose the broker", func() bool { return !a.nc.IsConnected() })
	again, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go again.Start()
	t.Cleanup(again.Shutdown)
	eventually(t, "A to reconnect", a.nc.IsConnected)
	if pass.Leave() {
		t.Error("a pass across the broker's absence was held")
	}
	eventually(t, "a pass entered after the reconnect to be held", func() bool { return a.Enter("kitchen").Leave() })
}

package handlers_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/store"
)

// syncBuffer is a log sink that tests can read while the app writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startNATS(t *testing.T, port int) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats did not start")
	}
	return ns
}

// instance is one app instance with its own store (and bucket memo) and
// its own NATS connection, sharing the keyspace with the others.
func instance(t *testing.T, natsURL string, logs *syncBuffer, opts ...appOption) *app {
	t.Helper()
	st, err := db.Another()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	hub, err := handlers.NewNATSHub(natsURL, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	return newApp(t, st, hub, opts...)
}

func waitLog(t *testing.T, logs *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log never said %q:\n%s", want, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTwoInstancesOverNATS(t *testing.T) {
	ns := startNATS(t, -1)
	url := ns.ClientURL()
	var logsA, logsB syncBuffer
	a, b := instance(t, url, &logsA), instance(t, url, &logsB)

	// Signed up on A; the same cookies work on B (sessions live in Cassandra).
	posterA := a.signedUp(t, unique("alice"))
	posterOnB := posterA.on(b)
	if p := posterOnB.get("/"); p.StatusCode != http.StatusOK {
		t.Fatalf("A's session on B: %d", p.StatusCode)
	}
	readerB := b.signedUp(t, unique("bob"))
	room := roomWith(t, posterA, readerB.on(a))

	subB := readerB.subscribe(t, room, "")
	readerOnA := readerB.on(a)
	subA := readerOnA.subscribe(t, room, "")

	postMessage(t, posterA, room, "from A")
	idB, ev := subB.nextMessage(t, 5*time.Second)
	if !strings.Contains(ev.data, "from A") {
		t.Fatalf("B got %s", ev.data)
	}
	idA, _ := subA.nextMessage(t, 5*time.Second)
	if idA != idB {
		t.Fatalf("A and B saw different messages: %s %s", idA, idB)
	}

	// A's subscriber leaves, messages are posted on both instances, and it
	// comes back on B with its Last-Event-ID: it misses nothing.
	subA.close()
	for i := 0; i < 10; i++ {
		postMessage(t, posterA, room, fmt.Sprintf("a%d", i))
		postMessage(t, posterOnB, room, fmt.Sprintf("b%d", i))
	}
	resumed := readerB.subscribe(t, room, idA)
	expectStored(t, resumed, room, idA)

	t.Run("BrokerLost", func(t *testing.T) {
		last := lastStored(t, room)
		addr := ns.Addr().(interface{ String() string }).String()
		ns.Shutdown()
		waitLog(t, &logsA, "nats: lost the broker")
		waitLog(t, &logsB, "nats: lost the broker")
		// Posting still works and is stored while the broker is away.
		for i := 0; i < 5; i++ {
			postMessage(t, posterA, room, fmt.Sprintf("while down %d", i))
		}
		// A subscriber that reconnects catches up by replay.
		sub := readerB.subscribe(t, room, last)
		expectStored(t, sub, room, last)

		// The broker comes back on the same address; both instances
		// reconnect by themselves and live delivery across them resumes.
		var p int
		fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &p)
		ns2 := startNATS(t, p)
		defer ns2.Shutdown()
		waitLog(t, &logsA, "nats: reconnected")
		waitLog(t, &logsB, "nats: reconnected")
		live := readerB.subscribe(t, room, "")
		postMessage(t, posterA, room, "after the broker came back")
		if _, ev := live.nextMessage(t, 5*time.Second); !strings.Contains(ev.data, "after the broker came back") {
			t.Fatalf("live across instances after reconnect: %s", ev.data)
		}
	})
}

func lastStored(t *testing.T, room string) string {
	t.Helper()
	r, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := db.MessagesBefore(ctxT(t), r, [16]byte{}, 1)
	if err != nil || len(msgs) != 1 {
		t.Fatal(err)
	}
	return msgs[0].ID.String()
}

// expectStored reads from s exactly the messages stored after id, in order.
func expectStored(t *testing.T, s *stream, room, id string) {
	t.Helper()
	r, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := store.ParseMessageID(id)
	want, _, err := db.MessagesAfter(ctxT(t), r, after, 1000)
	if err != nil || len(want) == 0 {
		t.Fatalf("stored after %s: %d %v", id, len(want), err)
	}
	for _, m := range want {
		got, _ := s.nextMessage(t, 5*time.Second)
		if got != m.ID.String() {
			t.Fatalf("got %s, want %s (%s)", got, m.ID, m.Content)
		}
	}
	s.quiet(t, 200*time.Millisecond)
}

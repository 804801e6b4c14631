package live

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/ssetest"
)

// memSource is a conversation's stored messages in memory, for the
// engine's tests (the handlers' tests run it on Cassandra).
type memSource struct {
	mu      sync.Mutex
	msgs    []chat.Message // in id order
	changes []chat.Change  // in id order
	local   map[chat.ID]bool
	floor   int64
}

func (m *memSource) MessagesAfter(_ context.Context, _ chat.Place, after chat.ID, n int) ([]chat.Message, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []chat.Message
	for _, msg := range m.msgs {
		if msg.ID.After(after) {
			out = append(out, msg)
		}
	}
	if len(out) > n {
		return out[:n], true, nil
	}
	return out, false, nil
}

func (m *memSource) ChangesAfter(_ context.Context, _ chat.Place, after chat.ID, n int) ([]chat.Change, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []chat.Change
	for _, ch := range m.changes {
		if ch.ID.After(after) {
			out = append(out, ch)
		}
	}
	if len(out) > n {
		return out[:n], true, nil
	}
	return out, false, nil
}

func (m *memSource) CountMessagesAfter(ctx context.Context, in chat.Place, after chat.ID, limit int) (int, error) {
	msgs, _, err := m.MessagesAfter(ctx, in, after, limit)
	return len(msgs), err
}

func (m *memSource) MadeHere(id chat.ID) bool { return m.local[id] }

func (m *memSource) IDFloor() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.floor++
	return m.floor
}

type nopGauge struct{}

func (nopGauge) Inc() {}
func (nopGauge) Dec() {}

// TestReplayCursorStaysBelowWhatComesLive: a stream subscribes while this
// instance's message L is being stored; L is published into the stream's
// queue while the replay writes a newer message of another instance. The
// replayed message's id must be a cursor below L: a client that goes away
// right after it, before L is written, resumes from below L and gets it.
func TestReplayCursorStaysBelowWhatComesLive(t *testing.T) {
	base := chat.TicksOf(time.Now())
	src := &memSource{local: map[chat.ID]bool{}, floor: base}
	hub := NewLocalHub()
	defer hub.Close()
	render := func(_ context.Context, m chat.Message) ([]byte, error) {
		return []byte(`<li id="msg-` + m.ID.String() + `">` + m.Content + `</li>`), nil
	}
	e := New(hub, src, Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nopGauge{}, render,
		func(ev Event) { _ = hub.Publish(context.Background(), ev) })
	room := chat.Conversation{ID: "r"}

	since := idAt(base + 5)
	sl, err := e.Reserve("r", func() (chat.Message, error) {
		m := chat.Message{ID: idAt(src.IDFloor() + 100), Room: "r", Content: "local"}
		src.local[m.ID] = true
		src.floor = m.ID.Timestamp() // the floor is above every id made
		return m, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	local := sl.Msg
	remote := chat.Message{ID: idAt(local.ID.Timestamp() + 50), Room: "r", Content: "remote"}
	src.msgs = []chat.Message{local, remote} // both stored

	st, err := e.Open("a", "ip", "s", since)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.TakeReplay(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.Subscribe("r") // bound: local's id
	sl.HTML, _ = render(context.Background(), local)
	e.Finish(sl, true) // into the stream's queue, to be written after the replay

	rec := httptest.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	st.Resume("r", room, since, ctx)
	st.Run(ctx, rec, func() {})
	st.Close()

	var got []ssetest.SpecRecord
	_ = ssetest.ParseSpecStream(bytes.NewReader(rec.Body.Bytes()), func(r ssetest.SpecRecord) bool {
		if r.Dispatched {
			got = append(got, r)
		}
		return true
	})
	if len(got) != 2 {
		t.Fatalf("events %+v, want the remote message replayed and the local one live", got)
	}
	cur, err := chat.ParseID(got[0].LastID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains([]byte(got[0].Data), []byte("remote")) || !local.ID.After(cur) {
		t.Fatalf("replayed %q with id %s: a resume from it would skip %s, still to come live", got[0].Data, cur, local.ID)
	}
}

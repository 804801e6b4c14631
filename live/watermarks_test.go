package live

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/store"
)

func idAt(ticks int64) gocql.UUID {
	return gocql.MinTimeUUID(store.TimeOfTicks(ticks))
}

// TestCursorStaysBelowAnotherInstancesMark: a message event carries its
// own id while every other instance's mark is past it, and the highest id
// below the lowest mark otherwise; a resume from that id reads everything
// at or above the mark.
func TestCursorStaysBelowAnotherInstancesMark(t *testing.T) {
	base := store.TicksOf(time.Now())
	id := idAt(base + 100)
	if got := cursor(id, noMark); got != id {
		t.Fatalf("no mark: %v, want the message's id", got)
	}
	if got := cursor(id, base+101); got != id {
		t.Fatalf("mark past it: %v, want the message's id", got)
	}
	got := cursor(id, base+50)
	if got.Timestamp() != base+49 || store.Later(idAt(base+49), got) {
		t.Fatalf("mark below it: cursor at %d, want the highest id at %d", got.Timestamp(), base+49)
	}
	// Every id at the mark lies after the cursor: a resume reads it.
	if !store.Later(idAt(base+50), got) {
		t.Fatal("an id at the mark does not come after the cursor")
	}
}

// TestHubCursorFollowsWatermarks: a hub that heard instance B's mark below
// a local message gives that message a cursor below the mark, and its own
// id once B's mark has passed it; a remote event never gets a cursor past
// the local watermark.
func TestHubCursorFollowsWatermarks(t *testing.T) {
	h := NewLocalHub()
	defer h.Close()
	base := store.TicksOf(time.Now())
	local := base + 1000
	h.SetWatermark(func() int64 { return local }, 0)
	sub := h.Subscribe("r", Subscriber{Login: "a"})
	defer sub.Close()

	h.heardMark("b", base+10)
	m := store.Message{ID: idAt(base + 20), Room: "r"}
	_ = h.Publish(context.Background(), Event{Kind: KindMessage, Conversation: "r", Message: &m, Watermark: base + 21})
	if ev := <-sub.C; ev.cursor.Timestamp() != base+9 {
		t.Fatalf("cursor at %d, want %d (below B's mark)", ev.cursor.Timestamp(), base+9)
	}
	h.heardMark("b", base+30)
	_ = h.Publish(context.Background(), Event{Kind: KindMessage, Conversation: "r", Message: &m, Watermark: base + 21})
	if ev := <-sub.C; ev.cursor != m.ID {
		t.Fatalf("cursor %v, want the message's own id once B's mark passed it", ev.cursor)
	}

	local = base + 40 // this instance holds back a message at base+40
	r := store.Message{ID: idAt(base + 45), Room: "r"}
	h.publishRemote(Event{Kind: KindMessage, Conversation: "r", ID: r.ID, Message: &r, Watermark: base + 46}, "b")
	if ev := <-sub.C; ev.cursor.Timestamp() != base+29 {
		t.Fatalf("remote cursor at %d, want %d (B's mark before this event)", ev.cursor.Timestamp(), base+29)
	}
}

// TestWatermarksFreezeAndForget: while the broker is away marks do not
// move; an instance silent past originTimeout no longer holds cursors
// back, and its return is reported.
func TestWatermarksFreezeAndForget(t *testing.T) {
	w := newWatermarks()
	now := time.Now()
	w.now = func() time.Time { return now }
	w.heard("b", 100)
	w.freeze()
	w.heard("b", 200)
	if m := w.min(); m != 100 {
		t.Fatalf("frozen: %d, want 100", m)
	}
	now = now.Add(2 * originTimeout)
	if m := w.min(); m != 100 {
		t.Fatalf("frozen marks expired: %d", m)
	}
	w.thaw()
	w.heard("b", 300)
	if m := w.min(); m != 300 {
		t.Fatalf("thawed: %d, want 300", m)
	}
	now = now.Add(originTimeout + time.Second)
	if m := w.min(); m != noMark {
		t.Fatalf("silent instance still holds cursors at %d", m)
	}
	if !w.heard("b", 400) {
		t.Fatal("a forgotten instance's return was not reported")
	}
}

// TestSequencerWatermark: the watermark stays at the oldest message still
// being stored, in any room, and each published event carries the mark
// as of its own publication.
func TestSequencerWatermark(t *testing.T) {
	var got []Event
	floor := int64(1000)
	q := newSequencer(func(ev Event) { got = append(got, ev) }, func() int64 { floor++; return floor })
	draft := func(room string, ticks int64) *Slot {
		sl, err := q.reserve(room, func() (store.Message, error) {
			return store.Message{ID: idAt(ticks), Room: room}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return sl
	}
	a1, b1, a2 := draft("a", 10), draft("b", 20), draft("a", 30)
	if m := q.watermark(); m != 10 {
		t.Fatalf("watermark %d, want 10", m)
	}
	q.finish(a2, true) // waits behind a1
	q.finish(a1, true)
	if len(got) != 2 || got[0].Watermark != 20 || got[1].Watermark != 20 {
		t.Fatalf("marks %+v, want both at 20 (b1 still pending)", got)
	}
	q.finish(b1, true)
	if got[2].Watermark <= 20 || q.watermark() <= 30 {
		t.Fatalf("marks after all stored: %d, %d", got[2].Watermark, q.watermark())
	}
}

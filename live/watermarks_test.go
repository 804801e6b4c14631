package live

import (
	"context"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

func idAt(ticks int64) chat.ID {
	return chat.MinIDAt(chat.TimeOfTicks(ticks))
}

// TestHubCursorFollowsWatermarks: a hub that heard instance B's mark below
// a local message gives that message a cursor below the mark, and its own
// id once B's mark has passed it; a remote event never gets a cursor past
// the local watermark.
func TestHubCursorFollowsWatermarks(t *testing.T) {
	h := NewLocalHub()
	defer h.Close()
	base := chat.TicksOf(time.Now())
	local := base + 1000
	h.SetWatermark(func() int64 { return local }, 0)
	sub := h.Subscribe("r", Subscriber{Login: "a"})
	defer sub.Close()

	h.heardMark("b", base+10)
	m := chat.Message{ID: idAt(base + 20), Room: "r"}
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
	r := chat.Message{ID: idAt(base + 45), Room: "r"}
	h.publishRemote(Event{Kind: KindMessage, Conversation: "r", ID: r.ID, Message: &r, Watermark: base + 46}, "b")
	if ev := <-sub.C; ev.cursor.Timestamp() != base+29 {
		t.Fatalf("remote cursor at %d, want %d (B's mark before this event)", ev.cursor.Timestamp(), base+29)
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
		sl, err := q.reserve(room, func() (chat.Message, error) {
			return chat.Message{ID: idAt(ticks), Room: room}, nil
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

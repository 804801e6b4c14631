package watermark

import (
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

func idAt(ticks int64) chat.ID {
	return chat.MinIDAt(chat.TimeOfTicks(ticks))
}

// TestCursorStaysBelowAnotherInstancesMark: a message event carries its
// own id while every other instance's mark is past it, and the highest id
// below the lowest mark otherwise; a resume from that id reads everything
// at or above the mark.
func TestCursorStaysBelowAnotherInstancesMark(t *testing.T) {
	base := chat.TicksOf(time.Now())
	id := idAt(base + 100)
	if got := Cursor(id, None); got != id {
		t.Fatalf("no mark: %v, want the message's id", got)
	}
	if got := Cursor(id, base+101); got != id {
		t.Fatalf("mark past it: %v, want the message's id", got)
	}
	got := Cursor(id, base+50)
	if got.Timestamp() != base+49 || idAt(base+49).After(got) {
		t.Fatalf("mark below it: cursor at %d, want the highest id at %d", got.Timestamp(), base+49)
	}
	// Every id at the mark lies after the cursor: a resume reads it.
	if !idAt(base + 50).After(got) {
		t.Fatal("an id at the mark does not come after the cursor")
	}
}

// TestWatermarksFreezeAndForget: while the broker is away marks do not
// move; an instance silent past originTimeout no longer holds cursors
// back, and its return is reported.
func TestWatermarksFreezeAndForget(t *testing.T) {
	w := New()
	now := time.Now()
	w.now = func() time.Time { return now }
	w.Heard("b", 100)
	w.Freeze()
	w.Heard("b", 200)
	if m := w.Min(); m != 100 {
		t.Fatalf("frozen: %d, want 100", m)
	}
	now = now.Add(2 * originTimeout)
	if m := w.Min(); m != 100 {
		t.Fatalf("frozen marks expired: %d", m)
	}
	w.Thaw()
	w.Heard("b", 300)
	if m := w.Min(); m != 300 {
		t.Fatalf("thawed: %d, want 300", m)
	}
	now = now.Add(originTimeout + time.Second)
	if m := w.Min(); m != None {
		t.Fatalf("silent instance still holds cursors at %d", m)
	}
	if !w.Heard("b", 400) {
		t.Fatal("a forgotten instance's return was not reported")
	}
}

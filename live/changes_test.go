package live

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/ssetest"
)

// TestReplayInterleavesChanges: a stream that resumes gets the edits,
// deletes and reactions it missed between the messages, in id order, each
// as its named event with an id of its own; a change published once the
// stream is up comes live, named the same way.
func TestReplayInterleavesChanges(t *testing.T) {
	base := chat.TicksOf(time.Now())
	src := &memSource{local: map[chat.ID]bool{}, floor: base + 1000}
	hub := NewLocalHub()
	defer hub.Close()
	render := func(_ context.Context, m chat.Message) ([]byte, error) {
		return []byte(`<li id="msg-` + m.ID.String() + `">` + m.Content + `</li>`), nil
	}
	e := New(hub, src, Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nopGauge{}, render,
		func(ev Event) { _ = hub.Publish(context.Background(), ev) })
	e.RenderChanges(func(_ context.Context, _ chat.Place, ch chat.Change) ([]byte, error) {
		return []byte(ch.Kind + " of " + ch.Message.String()), nil
	})
	m1 := chat.Message{ID: idAt(base + 10), Room: "r", Content: "one"}
	m2 := chat.Message{ID: idAt(base + 30), Room: "r", Content: "two"}
	src.msgs = []chat.Message{m1, m2}
	src.changes = []chat.Change{
		{ID: idAt(base + 20), Message: m1.ID, Kind: chat.ChangeEdit, Content: "one, edited"},
		{ID: idAt(base + 40), Message: m1.ID, Kind: chat.ChangeReaction, Emoji: "ok", Added: true},
		{ID: idAt(base + 50), Message: m2.ID, Kind: chat.ChangeDelete},
	}
	for _, id := range []chat.ID{m1.ID, m2.ID, src.changes[0].ID, src.changes[1].ID, src.changes[2].ID} {
		src.local[id] = true
	}

	st, err := e.Open("a", "ip", "s", idAt(base+5))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.TakeReplay(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.Subscribe("r")
	// Published live once the stream is subscribed: an edit of m1.
	sl, err := e.Reserve("r", func() (chat.Message, error) {
		return chat.Message{ID: idAt(src.IDFloor() + 100), Room: "r"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sl.Kind, sl.Target, sl.HTML = KindEdit, m1.ID, []byte("live edit")
	e.Finish(sl, true)

	rec := httptest.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	st.Resume("r", chat.Conversation{ID: "r"}, idAt(base+5), ctx)
	st.Run(ctx, rec, func() {})
	st.Close()

	var got []string
	_ = ssetest.ParseSpecStream(bytes.NewReader(rec.Body.Bytes()), func(r ssetest.SpecRecord) bool {
		if r.Dispatched {
			name := r.Name
			if name == "" {
				name = "message"
			}
			got = append(got, name+": "+r.Data+" @"+r.LastID)
		}
		return true
	})
	want := []string{
		"message: <li id=\"msg-" + m1.ID.String() + "\">one</li> @" + m1.ID.String(),
		"edit: edit of " + m1.ID.String() + " @" + src.changes[0].ID.String(),
		"message: <li id=\"msg-" + m2.ID.String() + "\">two</li> @" + m2.ID.String(),
		"reaction: reaction of " + m1.ID.String() + " @" + src.changes[1].ID.String(),
		"delete: delete of " + m2.ID.String() + " @" + src.changes[2].ID.String(),
		"edit: live edit @",
	}
	// The live edit's id is a cursor (live/watermark): at most its own id,
	// above everything replayed.
	if n := len(got); n == len(want) {
		i := strings.LastIndex(got[n-1], "@")
		cur, err := chat.ParseID(got[n-1][i+1:])
		if err != nil || cur.After(sl.Msg.ID) || !cur.After(src.changes[2].ID) {
			t.Errorf("the live edit's cursor %s (own id %s)", got[n-1][i+1:], sl.Msg.ID)
		}
		got[n-1] = got[n-1][:i+1]
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

package live

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/ssetest"
)

// convSource is a Source of several conversations' messages in memory, as if another
// instance had made them all (so a replay sends each, and a live copy of
// one is dropped by id).
type convSource struct {
	mu   sync.Mutex
	msgs map[string][]chat.Message
}

func (m *convSource) add(conv string, at time.Time, text string) chat.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.msgs == nil {
		m.msgs = map[string][]chat.Message{}
	}
	msg := chat.Message{ID: chat.IDAt(at), Room: conv, Content: text}
	m.msgs[conv] = append(m.msgs[conv], msg)
	return msg
}

func (m *convSource) MessagesAfter(_ context.Context, in chat.Place, after chat.ID, n int) ([]chat.Message, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []chat.Message
	for _, msg := range m.msgs[in.Conversation().ID] {
		if msg.ID.After(after) {
			out = append(out, msg)
		}
	}
	if len(out) > n {
		return out[:n], true, nil
	}
	return out, false, nil
}

// ChangesAfter: these conversations have no edits, deletes or reactions.
func (m *convSource) ChangesAfter(context.Context, chat.Place, chat.ID, int) ([]chat.Change, bool, error) {
	return nil, false, nil
}

func (m *convSource) CountMessagesAfter(ctx context.Context, in chat.Place, after chat.ID, limit int) (int, error) {
	out, _, err := m.MessagesAfter(ctx, in, after, limit)
	return len(out), err
}

func (m *convSource) MadeHere(chat.ID) bool { return false }
func (m *convSource) IDFloor() int64        { return chat.IDAt(time.Now()).Timestamp() }

type countGauge struct{ n atomic.Int64 }

func (g *countGauge) Inc() { g.n.Add(1) }
func (g *countGauge) Dec() { g.n.Add(-1) }

func renderTest(_ context.Context, m chat.Message) ([]byte, error) {
	return []byte(fmt.Sprintf("<li id=\"msg-%s\">%s</li>", m.ID, m.Content)), nil
}

// personalServer serves personal streams of "ada" on GET /?b=<browser>,
// carrying the conversations "a" and "b" from the resume points given,
// and refusing "gone".
func personalServer(t *testing.T, e *Engine, since map[string]chat.ID) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := e.OpenPersonal("ada", "127.0.0.1", "s1", r.URL.Query().Get("b"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusTooManyRequests)
			return
		}
		defer st.Close()
		for _, conv := range []string{"a", "b", "gone"} {
			st.Subscribe(conv)
		}
		st.Unsubscribe("gone")
		st.Refuse("gone", KindStreamEnd)
		for _, conv := range []string{"a", "b"} {
			st.Resume(conv, chat.Conversation{ID: conv}, since[conv], r.Context())
		}
		if err := st.TakeReplay(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		st.Run(r.Context(), w, func() {})
	}))
	t.Cleanup(ts.Close)
	return ts
}

// readStream reads the events of a stream at url until want of them came
// (or it ends), and returns them and the body, still open.
func readStream(t *testing.T, url string) (<-chan ssetest.SpecRecord, io.Closer) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	events := make(chan ssetest.SpecRecord, 100)
	go func() {
		defer close(events)
		_ = ssetest.ParseSpecStream(resp.Body, func(r ssetest.SpecRecord) bool {
			if r.Dispatched {
				events <- r
			}
			return true
		})
	}()
	return events, resp.Body
}

func next(t *testing.T, events <-chan ssetest.SpecRecord) ssetest.SpecRecord {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return ssetest.SpecRecord{}
}

// TestPersonalStreamCarriesSeveralConversations: one stream replays each
// conversation from its own resume point, says first which conversation
// it was refused, then carries the live events of its conversations (and
// of none other), each naming its conversation, with the message's id.
func TestPersonalStreamCarriesSeveralConversations(t *testing.T) {
	hub := NewLocalHub()
	defer hub.Close()
	src := &convSource{}
	base := time.Now().Add(-time.Minute)
	var a, b []chat.Message
	for i := 0; i < 3; i++ {
		a = append(a, src.add("a", base.Add(time.Duration(i)*time.Second), fmt.Sprint("a", i)))
		b = append(b, src.add("b", base.Add(time.Duration(i)*time.Second+time.Millisecond), fmt.Sprint("b", i)))
	}
	gauge := &countGauge{}
	e := New(hub, src, Config{}, slog.New(slog.DiscardHandler), gauge, renderTest, func(Event) {})
	defer e.Shutdown()
	// The browser has a up to a0, and b up to b1.
	ts := personalServer(t, e, map[string]chat.ID{"a": a[0].ID, "b": b[1].ID})
	events, body := readStream(t, ts.URL+"?b=browser1")
	defer body.Close()

	wide := func(conv, payload string) string { return conv + "\n" + payload }
	want := []ssetest.SpecRecord{
		{Name: KindStreamEnd, Data: wide("gone", "")},
		{Name: KindMessage, Data: wide("a", "<li id=\"msg-"+a[1].ID.String()+"\">a1</li>"), LastID: a[1].ID.String()},
		{Name: KindMessage, Data: wide("a", "<li id=\"msg-"+a[2].ID.String()+"\">a2</li>"), LastID: a[2].ID.String()},
		{Name: KindMessage, Data: wide("b", "<li id=\"msg-"+b[2].ID.String()+"\">b2</li>"), LastID: b[2].ID.String()},
	}
	for i, w := range want {
		got := next(t, events)
		if got.Name != w.Name || got.Data != w.Data || (w.LastID != "" && got.LastID != w.LastID) {
			t.Fatalf("event %d: %+v, want %+v", i, got, w)
		}
	}

	// Live: a replayed message that comes live too is not sent again;
	// the events of "c" are not carried.
	publish := func(conv, text string, at time.Time) chat.Message {
		m := chat.Message{ID: chat.IDAt(at), Room: conv, Content: text}
		html, _ := renderTest(context.Background(), m)
		if err := hub.Publish(context.Background(), Event{Kind: KindMessage, Conversation: conv, Message: &m, HTML: html}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	hub.Publish(context.Background(), Event{Kind: KindMessage, Conversation: "a", ID: a[2].ID, Message: &a[2], HTML: []byte("dup")})
	publish("c", "not carried", time.Now())
	la := publish("a", "live a", time.Now())
	lb := publish("b", "live b", time.Now())
	// Each conversation keeps its order; the two may interleave.
	got := map[string]ssetest.SpecRecord{}
	for range 2 {
		ev := next(t, events)
		conv, _, _ := strings.Cut(ev.Data, "\n")
		got[conv] = ev
	}
	for conv, m := range map[string]chat.Message{"a": la, "b": lb} {
		html, _ := renderTest(context.Background(), m)
		if ev := got[conv]; ev.Name != KindMessage || ev.Data != conv+"\n"+string(html) || ev.LastID != m.ID.String() {
			t.Fatalf("live event %+v, want %s's message %s", ev, conv, m.Content)
		}
	}
	// A room deleted ends its conversation, not the stream.
	if err := hub.Publish(context.Background(), Event{Kind: KindRoomDeleted, Conversation: "b"}); err != nil {
		t.Fatal(err)
	}
	if got := next(t, events); got.Name != KindRoomDeleted || got.Data != "b\n/?notice=room-deleted" {
		t.Fatalf("room deleted: %+v", got)
	}
	after := publish("a", "after the deletion", time.Now())
	if got := next(t, events); !strings.Contains(got.Data, after.ID.String()) {
		t.Fatalf("after b's deletion: %+v, want a's next message", got)
	}
	if n := gauge.n.Load(); n != 1 {
		t.Fatalf("gauge %d, want 1", n)
	}
}

// TestPersonalStreamOfABrowserReplacesItsOlder: the same browser opening
// a new personal stream (its tabs show other conversations) ends the one
// it had, which counts once under the caps; another browser's is left.
func TestPersonalStreamOfABrowserReplacesItsOlder(t *testing.T) {
	hub := NewLocalHub()
	defer hub.Close()
	gauge := &countGauge{}
	e := New(hub, &convSource{}, Config{MaxStreamsPerUser: 2}, slog.New(slog.DiscardHandler), gauge, renderTest, func(Event) {})
	defer e.Shutdown()
	ts := personalServer(t, e, nil)

	first, b1 := readStream(t, ts.URL+"?b=one")
	defer b1.Close()
	other, b2 := readStream(t, ts.URL+"?b=two")
	defer b2.Close()
	next(t, first) // the refusal of "gone": the stream is up
	next(t, other)
	// At the cap of 2, the same browser may still replace its stream.
	second, b3 := readStream(t, ts.URL+"?b=one")
	defer b3.Close()
	next(t, second)
	select {
	case _, ok := <-first:
		if ok {
			t.Fatal("the replaced stream got an event")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the replaced stream did not end")
	}
	deadline := time.Now().Add(5 * time.Second)
	for gauge.n.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := gauge.n.Load(); n != 2 {
		t.Fatalf("gauge %d, want 2 (one per browser)", n)
	}
	// A third browser is over the cap.
	resp, err := http.Get(ts.URL + "?b=three")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third browser: %s, want 429", resp.Status)
	}
	// The other browser's stream still delivers.
	m := chat.Message{ID: chat.IDAt(time.Now()), Room: "a", Content: "still here"}
	hub.Publish(context.Background(), Event{Kind: KindMessage, Conversation: "a", Message: &m, HTML: []byte("x")})
	for _, s := range []<-chan ssetest.SpecRecord{other, second} {
		if got := next(t, s); got.Data != "a\nx" {
			t.Fatalf("got %+v", got)
		}
	}
}

// TestWideFrameEncodedOnce: the personal streams of an instance share an
// event's second encoding, made once.
func TestWideFrameEncodedOnce(t *testing.T) {
	hub := NewLocalHub()
	defer hub.Close()
	x := hub.Subscribe("r", Subscriber{Login: "x"})
	y := hub.Subscribe("r", Subscriber{Login: "y"})
	defer x.Close()
	defer y.Close()
	id := chat.IDAt(time.Now())
	hub.Publish(context.Background(), Event{Kind: KindMessage, Conversation: "r", ID: id, HTML: []byte("<li>\r\nhi</li>")})
	ex, ey := <-x.C, <-y.C
	fx, fy := ex.wideFrame(), ey.wideFrame()
	if &fx[0] != &fy[0] {
		t.Fatal("two personal streams encoded the event twice")
	}
	want := "id: " + id.String() + "\nevent: message\ndata: r\ndata: <li>\ndata: hi</li>\n\n"
	if string(fx) != want {
		t.Fatalf("wide frame %q, want %q", fx, want)
	}
}

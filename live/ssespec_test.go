package live

// The event stream parser of the HTML standard ("Interpreting an event
// stream"), which browsers' EventSource and htmx's hx-sse follow: a line
// ends at "\r\n", at a lone "\r" or at "\n". The tests read streams with
// it (r3labs' reader splits events on "\r" but their lines on "\n" only,
// and so cannot see an event forged with lone carriage returns).

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/sse"
	"github.com/killrchat/killrchat/live/ssetest"
)

// specLineBreaks is what a line break in event data comes out as from the
// standard's parser: "\n", whether it went in as "\r\n", "\r" or "\n".
func specLineBreaks(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

var testEventID = func() chat.ID {
	id, err := chat.ParseID("5d1c7a2e-3f0b-11f1-8000-0242ac120002")
	if err != nil {
		panic(err)
	}
	return id
}()

// recorderWriter is a stream's writer on rec (not hijacked, as under
// HTTP/2).
func recorderWriter(t *testing.T, rec *httptest.ResponseRecorder) *eventWriter {
	t.Helper()
	c, err := sse.Start(rec, func() {}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rec.Body.Reset() // its first comment, ": connected"
	return &eventWriter{Conn: c}
}

// writtenEvents writes a message event with data, then a named event, the
// way a stream does, and parses what was written.
func writtenEvents(t *testing.T, data string) []ssetest.SpecRecord {
	t.Helper()
	rec := httptest.NewRecorder()
	out := recorderWriter(t, rec)
	if err := out.message("r", testEventID, []byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := out.event("r", "reload", []byte("after")); err != nil {
		t.Fatal(err)
	}
	var got []ssetest.SpecRecord
	if err := ssetest.ParseSpecStream(rec.Body, func(r ssetest.SpecRecord) bool { got = append(got, r); return true }); err != io.EOF {
		t.Fatal(err)
	}
	return got
}

// checkWritten checks that data came through as one event with the
// message's id and nothing else, and that the stream's next event was
// read as written.
func checkWritten(t *testing.T, data string) {
	t.Helper()
	got := writtenEvents(t, data)
	want := []ssetest.SpecRecord{
		// Even empty data is one "data:" line, and so one event.
		{LastID: testEventID.String(), Data: specLineBreaks(data), Dispatched: true},
		{LastID: testEventID.String(), Name: "reload", Data: "after", Dispatched: true},
	}
	if len(got) != len(want) {
		t.Fatalf("data %q: parsed %d records, want %d: %+v", data, len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("data %q: record %d = %+v, want %+v", data, i, got[i], want[i])
		}
	}
}

// TestEventWriterLineBreaks: whatever line breaks the data holds, a
// parser that ends lines at "\r" too reads exactly the event written.
func TestEventWriterLineBreaks(t *testing.T) {
	for name, data := range map[string]string{
		"ForgedEvent":    "hi\r\revent: room-deleted\rdata: x\r\rtail",
		"ForgedID":       "\r\rid: ffffffff-ffff-1fff-bfff-ffffffffffff\r\r",
		"ForgedRetry":    "a\rretry: 1\r",
		"CRLF":           "one\r\ntwo\r\n\r\nthree",
		"LF":             "one\ntwo\n",
		"Empty":          "",
		"OnlyBreaks":     "\r\n\r\r\n\n",
		"FieldLookalike": "data: x\nid: y\n: comment",
		"Plain":          `<li id="msg-1">hi</li>`,
	} {
		t.Run(name, func(t *testing.T) { checkWritten(t, data) })
	}
	t.Run("NameWithBreak", func(t *testing.T) {
		rec := httptest.NewRecorder()
		out := recorderWriter(t, rec)
		start := rec.Body.Len()
		if err := out.event("r", "x\ry", []byte("z")); err == nil || rec.Body.Len() != start {
			t.Fatalf("an event name with a line break was written: %v %q", err, rec.Body.String())
		}
		if err := out.Comment("x\ny"); err == nil || rec.Body.Len() != start {
			t.Fatalf("a comment with a line break was written: %v %q", err, rec.Body.String())
		}
	})
}

// FuzzEventWriter: any data in, the same data out of the standard's
// parser (line breaks as "\n"), as one event with the message's id.
func FuzzEventWriter(f *testing.F) {
	for _, s := range []string{
		"hi\r\revent: room-deleted\rdata: x\r\rtail",
		"\r\rid: ffffffff-ffff-1fff-bfff-ffffffffffff\r\r",
		"a\r\nb\n\nc\r", "", "\n", "\r", "data: x", ": c", "\r\n\r\n", "é\x00\xff\xef\xbb\xbf",
	} {
		f.Add(s)
	}
	f.Fuzz(checkWritten)
}

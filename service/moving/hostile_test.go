package moving

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// errWrite is what noWrites answers: the import got as far as writing.
var errWrite = errors.New("the import wrote")

// noWrites is a Target that refuses every call: a hostile zip must be
// refused before anything is written.
type noWrites struct{ calls atomic.Int64 }

func (n *noWrites) fail() error { n.calls.Add(1); return errWrite }
func (n *noWrites) RestoreUser(context.Context, chat.User, string) (bool, error) {
	return false, n.fail()
}
func (n *noWrites) User(context.Context, string) (chat.User, error) { return chat.User{}, n.fail() }
func (n *noWrites) SetAdmin(context.Context, string, bool) (chat.Site, error) {
	return chat.Site{}, n.fail()
}
func (n *noWrites) SaveSettings(context.Context, string, []string, string) (chat.Site, error) {
	return chat.Site{}, n.fail()
}
func (n *noWrites) RestoreRoom(context.Context, chat.Room, []chat.Member) error { return n.fail() }
func (n *noWrites) RestoreMessages(context.Context, chat.Place, []chat.Message) error {
	return n.fail()
}
func (n *noWrites) RestoreFile(context.Context, chat.StoredFile, io.Reader) error { return n.fail() }
func (n *noWrites) Mentionable(context.Context, chat.Place, ...string) (chat.Conversation, error) {
	return chat.Conversation{}, n.fail()
}
func (n *noWrites) RecordMentions(context.Context, chat.Conversation, chat.Message) error {
	return n.fail()
}
func (n *noWrites) RestoreDMEntry(context.Context, chat.DM, chat.Message) error { return n.fail() }
func (n *noWrites) IndexMessages(context.Context, []chat.Message) error         { return n.fail() }
func (n *noWrites) MarkRead(context.Context, string, string, chat.ID) error     { return n.fail() }

// entry is one entry of a test zip: its bytes, or (raw) its deflated
// bytes with the size its header claims.
type entry struct {
	name    string
	data    []byte
	raw     []byte
	claimed uint64
}

func zipOf(t *testing.T, entries ...entry) *zip.Reader {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		if e.raw != nil {
			w, err := zw.CreateRaw(&zip.FileHeader{Name: e.name, Method: zip.Deflate, CompressedSize64: uint64(len(e.raw)),
				UncompressedSize64: e.claimed, CRC32: 1})
			if err != nil {
				t.Fatal(err)
			}
			_, _ = w.Write(e.raw)
			continue
		}
		w, err := zw.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(e.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

// deflated is n bytes of spaces between "[" and "]", deflated.
func deflated(n int) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestCompression)
	_, _ = w.Write([]byte("["))
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for left := n; left > 0; left -= len(chunk) {
		_, _ = w.Write(chunk[:min(len(chunk), left)])
	}
	_, _ = w.Write([]byte("]"))
	w.Close()
	return b.Bytes()
}

var users = entry{name: "users.json", data: []byte(`[{"id":"U1","name":"ada"}]`)}

// peakHeap runs f and returns the most heap in use seen while it ran.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	return peak.Load()
}

// TestHostileSlackZips: each zip is refused with a sentence that says
// why, before anything is written, in bounded memory.
func TestHostileSlackZips(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []entry
		want    string
		// wrote: the zip is accepted and the import reaches its first
		// write (noWrites then stops it).
		wrote bool
	}{
		{"PathEscape", []entry{users, {name: "../../etc/cron.d/x.json", data: []byte("[]")}}, "leaves its folder", false},
		{"PathEscapeInside", []entry{users, {name: "general/../../x.json", data: []byte("[]")}}, "leaves its folder", false},
		{"AbsolutePath", []entry{users, {name: "/etc/passwd", data: []byte("x")}}, "not a relative path", false},
		{"BackslashPath", []entry{users, {name: `..\..\x.json`, data: []byte("x")}}, "not a relative path", false},
		{"NoUsers", []entry{{name: "channels.json", data: []byte("[]")}}, "no users.json", false},
		{"MalformedUsers", []entry{{name: "users.json", data: []byte(`[{"id":"U1","name":`)}}, "users.json, near byte", false},
		{"UsersNotAnArray", []entry{{name: "users.json", data: []byte(`{"id":"U1"}`)}}, "not a JSON array", false},
		{"BombHonestHeader", []entry{users, {name: "general/2020-01-01.json", raw: deflated(MaxSlackDayBytes + 1), claimed: MaxSlackDayBytes + 2}},
			"(a zip bomb?): refused", false},
		{"BombLyingHeader", []entry{{name: "users.json", raw: deflated(80 << 20), claimed: 1000}}, "other bytes than its header says", false},
		{"TenGigabyteDay", []entry{users, {name: "general/2020-01-01.json", raw: deflated(10), claimed: 10 << 30}}, "more than the", false},
		{"TenGigabyteOtherFile", []entry{users, {name: "integration_logs/big.bin", raw: deflated(10), claimed: 10 << 30}}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			zr := zipOf(t, c.entries...)
			target := &noWrites{}
			var err error
			peak := peakHeap(func() { _, err = ImportSlack(context.Background(), target, zr, SlackOptions{}) })
			t.Logf("error: %v; peak heap %d MiB", err, peak>>20)
			if c.wrote {
				if !errors.Is(err, errWrite) {
					t.Fatalf("the import did not go on to write: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if n := target.calls.Load(); n > 0 {
				t.Errorf("%d writes before the refusal", n)
			}
			// The bound: a list file's (256 MiB) or a day file's (64 MiB)
			// bytes at the most, held by the JSON decoder, and no more.
			if peak > MaxSlackListBytes+64<<20 {
				t.Errorf("peak heap %d MiB", peak>>20)
			}
		})
	}
}

// TestLyingDayFile: a day file whose header understates what it
// inflates to stops the import (not skipped as malformed), having held
// no more than its header's size.
func TestLyingDayFile(t *testing.T) {
	zr := zipOf(t, users, entry{name: "general/2020-01-01.json", raw: deflated(80 << 20), claimed: 1000})
	s := &slackImport{zr: zr, files: map[string]*zip.File{}}
	if err := s.index(); err != nil {
		t.Fatal(err)
	}
	var err error
	peak := peakHeap(func() {
		err = eachElement(s, "general/2020-01-01.json", MaxSlackDayBytes, func(slackMessage) error { return nil })
	})
	t.Logf("error: %v; peak heap %d MiB", err, peak>>20)
	if !errors.Is(err, errZipLies) {
		t.Fatalf("error %v, want the zip refused", err)
	}
}

// TestSlackLogins: names that are no login are made one, saying why.
func TestSlackLogins(t *testing.T) {
	for _, c := range []struct{ name, want, why string }{
		{"ada", "ada", ""},
		{"Ada", "ada", "lower case"},
		{"Dave Smith!", "dave-smith-", "characters a login may not"},
		{"_x", "x00", "at least 3"},
		{"--", "u0100", "nothing a login may hold"},
		{"émile", "mile", "starts with a letter"},
		{strings.Repeat("a", 40), strings.Repeat("a", 28), "at most 31"},
	} {
		got, why := loginOf(c.name, "U0100")
		if got != c.want || !strings.Contains(why, c.why) || (c.why == "" && why != "") {
			t.Errorf("loginOf(%q) = %q (%s), want %q (%s)", c.name, got, why, c.want, c.why)
		}
		if !chat.ValidName(got) {
			t.Errorf("loginOf(%q) = %q, not a valid login", c.name, got)
		}
	}
}

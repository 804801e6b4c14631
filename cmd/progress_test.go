package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/service/moving"
)

// TestProgress: off a terminal, a plain line with the counts and the
// share done and the time left; on one, a bar redrawn in place with the
// ETA, its line ended by done.
func TestProgress(t *testing.T) {
	n := moving.Counts{People: 3, Rooms: 2, DMs: 1, Messages: 500, Reactions: 7}
	var plain bytes.Buffer
	p := newProgress(&plain, "import slack", 0)
	p.start = time.Now().Add(-10 * time.Second)
	p.step(n, 250, 1000)
	p.step(n, 500, 1000) // within ten seconds: not printed
	p.done()
	want := "import slack: 3 people, 2 rooms, 1 DMs, 500 messages (50/s), 7 reactions, 0 files, 25% done, 30s left\n"
	if plain.String() != want {
		t.Errorf("plain progress %q, want %q", plain.String(), want)
	}

	var term bytes.Buffer
	p = newProgress(&term, "import slack", 0)
	p.terminal = true
	p.start = time.Now().Add(-10 * time.Second)
	p.step(n, 500, 1000)
	p.done()
	got := term.String()
	if !strings.HasPrefix(got, "\r\033[K[############............]  50% ETA 10s  import slack: 3 people") || !strings.HasSuffix(got, "\n") {
		t.Errorf("the bar is %q", got)
	}
}

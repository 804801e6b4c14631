// This file owns the progress of export and import: on a terminal a bar
// redrawn in place with the counts and, when the total is known, the
// time left; otherwise a plain line every ten seconds.

package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/killrchat/killrchat/service/moving"
)

type progress struct {
	mu       sync.Mutex
	w        io.Writer
	name     string
	terminal bool
	start    time.Time
	last     time.Time
	drawn    bool
}

// newProgress reports to w, a terminal or not.
func newProgress(w io.Writer, name string, _ int) *progress {
	p := &progress{w: w, name: name, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

// counts reports counts with no known total.
func (p *progress) counts(n moving.Counts) { p.step(n, 0, 0) }

// step reports counts and, when total > 0, done of total (the units the
// time left is reckoned in).
func (p *progress) step(n moving.Counts, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	every := 10 * time.Second
	if p.terminal {
		every = 200 * time.Millisecond
	}
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	elapsed := now.Sub(p.start)
	rate := float64(n.Messages) / max(elapsed.Seconds(), 0.001)
	text := fmt.Sprintf("%s: %d people, %d rooms, %d DMs, %d messages (%.0f/s), %d reactions, %d files",
		p.name, n.People, n.Rooms, n.DMs, n.Messages, rate, n.Reactions, n.Files)
	if total > 0 {
		frac := min(float64(done)/float64(total), 1)
		eta := "?"
		if frac > 0 {
			eta = (time.Duration(float64(elapsed)/frac) - elapsed).Round(time.Second).String()
		}
		if p.terminal {
			const width = 24
			filled := int(frac * width)
			text = fmt.Sprintf("[%s%s] %3.0f%% ETA %s  %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), frac*100, eta, text)
		} else {
			text = fmt.Sprintf("%s, %.0f%% done, %s left", text, frac*100, eta)
		}
	}
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", text)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, text)
}

// done ends a bar's line.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

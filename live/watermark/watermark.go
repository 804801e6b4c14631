// The guarantees it builds on:
//   - Each instance publishes its own messages in id order (sequencer), and
//     its watermark W says that every id it drafted below W is published
//     (or failed) and that every id it drafts later lies at or above W.
//   - Every instance's events and watermarks go through the broker on one
//     subject and one connection, so another instance hears them in the
//     order they were sent: having heard W from instance X, it has been
//     handed every message of X below W.
//
// So when this instance hands an event to its streams, every message below
// min(its own watermark, the watermarks heard from each other instance)
// has already been handed to them before it. That minimum is the cursor
// the event carries as its SSE id (or the message's own id, when that is
// lower): a page that has the event has every message below its id, and a
// resume replays from exactly there. Nothing depends on how late a message
// is, so the replay does not grow with load; it re-sends only what lies
// between the cursor and the last event, which is the time a watermark
// takes to travel (a heartbeat, 100 ms, at most).
//
// What the cursor cannot see, and how each is handled:
//   - The broker goes away: other instances' watermarks stay where they
//     were (frozen), so cursors stop advancing past messages this instance
//     may never hear. When it is back, every stream here is dropped, and
//     each page resumes from its cursor, by replay from Cassandra.
//   - An instance stops (crash, or shut down): it is forgotten once it has
//     been silent for originTimeout while this instance hears the broker.
//   - An instance this one has not heard yet (its first seconds here): for
//     discoverFor after connecting, cursors stay at least discoverWindow
//     behind the clock, as the old resume window did.
//   - An instance that comes back after being forgotten (a partition of its
//     own longer than originTimeout) may deliver messages below cursors
//     already given: this instance then drops its streams, so pages that
//     are open resume and get them; a page that was closed meanwhile and
//     resumes later can miss them. This is logged.

package watermark

import (
	"math"
	"sync"
	"time"

	"github.com/killrchat/killrchat/chat"
)

const (
	// originTimeout is how long an instance may be silent before the others
	// stop waiting for it.
	originTimeout = 10 * time.Second
	// discoverFor is how long after connecting an instance keeps cursors
	// discoverWindow behind, until it has heard the others.
	discoverFor = time.Second
)

// None is the mark of nothing known: above every timestamp.
const None = math.MaxInt64

// Marks are the watermarks this instance has heard from the others.
type Marks struct {
	mu      sync.Mutex
	origins map[string]*origin
	// frozen: the broker is away; marks neither rise nor expire.
	frozen bool
	// floor and floorUntil keep cursors behind while discovering.
	floor      int64
	floorUntil time.Time
	now        func() time.Time
}

type origin struct {
	mark      int64
	heard     time.Time
	forgotten bool // silent past originTimeout
}

// New is an empty set of marks.
func New() *Marks {
	return &Marks{origins: map[string]*origin{}, now: time.Now}
}

// Heard records mark from instance from; it reports whether that instance
// had been forgotten and returns below a cursor already given (see above).
func (w *Marks) Heard(from string, mark int64) (returned bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.frozen {
		return false
	}
	o := w.origins[from]
	if o == nil {
		w.origins[from] = &origin{mark: mark, heard: w.now()}
		return false
	}
	returned = o.forgotten
	o.forgotten = false
	o.mark, o.heard = max(o.mark, mark), w.now()
	return returned
}

// Min is the lowest mark of the instances still heard, or None.
func (w *Marks) Min() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	m := int64(None)
	if now.Before(w.floorUntil) {
		m = w.floor
	}
	for _, o := range w.origins {
		if o.forgotten {
			continue
		}
		if !w.frozen && now.Sub(o.heard) > originTimeout {
			o.forgotten = true
			continue
		}
		m = min(m, o.mark)
	}
	return m
}

// Freeze keeps every mark where it is (the broker went away).
func (w *Marks) Freeze() {
	w.mu.Lock()
	w.frozen = true
	w.mu.Unlock()
}

// Thaw lets marks move again, after the streams were dropped; the others
// count as heard now, so none is forgotten for the broker's absence.
func (w *Marks) Thaw() {
	w.mu.Lock()
	w.frozen = false
	now := w.now()
	for _, o := range w.origins {
		o.heard = now
	}
	w.mu.Unlock()
}

// Discover keeps cursors window behind the clock for discoverFor.
func (w *Marks) Discover(window time.Duration) {
	w.mu.Lock()
	now := w.now()
	w.floor = chat.TicksOf(now.Add(-window))
	w.floorUntil = now.Add(discoverFor)
	w.mu.Unlock()
}

// Cursor is the SSE id of a message event with id, where mark is the
// lowest watermark when it was handed to the streams: the message's own id
// if it lies below mark, else the highest id below mark.
func Cursor(id chat.ID, mark int64) chat.ID {
	if mark == None || id.Timestamp() < mark {
		return id
	}
	return chat.MaxIDAt(chat.TimeOfTicks(mark - 1))
}

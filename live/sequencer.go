// This file owns the order in which an instance publishes a
// conversation's messages, and the bound that tells a page or a stream
// which of this instance's messages it reads from Cassandra and which
// will reach it live.

package live

import (
	"sync"

	"github.com/killrchat/killrchat/chat"
)

// sequencer publishes each room's messages in the order of their ids, even
// though their inserts run concurrently and finish in any order. A client
// that resumes after the id it saw last therefore never misses a message
// of this instance that was still being written.
//
// It also gives live streams and pages their bound: every id this instance
// has drafted for a room but not yet published, and every id it drafts
// later, has a timestamp at or above the bound; everything below it is
// published (or failed) and so is in Cassandra.
type sequencer struct {
	mu      sync.Mutex
	pending map[string][]*Slot
	publish func(Event)
	floor   func() int64
}

// Slot is one message between its draft and its publication; the
// poster sets HTML (the message rendered for the live streams) before
// Finish.
type Slot struct {
	Msg chat.Message
	// Kind is the event's kind: KindMessage if unset, or a change (see
	// IsChange), whose Msg holds only its id and conversation.
	Kind string
	// Target is the message a change is about.
	Target chat.ID
	HTML   []byte
	done   bool
	ok     bool
}

func newSequencer(publish func(Event), floor func() int64) *sequencer {
	return &sequencer{pending: map[string][]*Slot{}, publish: publish, floor: floor}
}

// bound is the room's bound now (see sequencer).
func (q *sequencer) bound(room string) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.boundLocked(room)
}

func (q *sequencer) boundLocked(room string) int64 {
	if p := q.pending[room]; len(p) > 0 {
		return p[0].Msg.ID.Timestamp()
	}
	return q.floor()
}

// subscribe subscribes to the room's events and takes its bound at the
// same instant: local messages below the bound were published before the
// subscription (read them from Cassandra), the others will be delivered.
func (q *sequencer) subscribe(room string, subscribe func() *Subscription) (*Subscription, int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return subscribe(), q.boundLocked(room)
}

// reserve drafts a message (giving it its id) and queues it for publication.
func (q *sequencer) reserve(room string, draft func() (chat.Message, error)) (*Slot, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	m, err := draft()
	if err != nil {
		return nil, err
	}
	sl := &Slot{Msg: m}
	q.pending[room] = append(q.pending[room], sl)
	return sl, nil
}

// finish marks a message stored (ok) or failed, and publishes every stored
// message at the head of the room's queue. Each event carries the
// instance's watermark as of its publication (see watermark).
func (q *sequencer) finish(sl *Slot, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	sl.done, sl.ok = true, ok
	queue := q.pending[sl.Msg.Room]
	others := int64(-1) // the other rooms' mark, read once if needed
	i := 0
	for ; i < len(queue) && queue[i].done; i++ {
		if queue[i].ok {
			if others < 0 {
				others = q.markLocked(sl.Msg.Room)
			}
			mark := others
			if i+1 < len(queue) {
				mark = min(mark, queue[i+1].Msg.ID.Timestamp())
			}
			if c := queue[i]; c.Kind != "" {
				// A change (edit, delete, reaction): ordered and marked as
				// a message is; Target is the message it changes.
				q.publish(Event{Kind: c.Kind, Conversation: c.Msg.Room, ID: c.Msg.ID, Target: c.Target, HTML: c.HTML, Watermark: mark})
				continue
			}
			m := queue[i].Msg
			q.publish(Event{Kind: KindMessage, Conversation: m.Room, ID: m.ID, Message: &m, HTML: queue[i].HTML, Watermark: mark})
		}
	}
	if i == len(queue) {
		delete(q.pending, sl.Msg.Room)
	} else {
		q.pending[sl.Msg.Room] = queue[i:]
	}
}

// watermark is the instance's watermark: a timestamp such that every id
// this instance drafted below it, in any conversation, has been published
// (or failed), and every id it drafts later lies at or above it. Other
// instances learn it through the hub (see live/watermark), which is how a
// resume across instances knows where to start.
func (q *sequencer) watermark() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.markLocked("")
}

// markLocked is the watermark leaving out the queue of room ("": none).
func (q *sequencer) markLocked(room string) int64 {
	mark := q.floor()
	for r, p := range q.pending {
		if r != room && len(p) > 0 {
			mark = min(mark, p[0].Msg.ID.Timestamp())
		}
	}
	return mark
}

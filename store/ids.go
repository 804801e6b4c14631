// This file owns message ids and day buckets: the one bucket function that
// writers and readers share, and the timeuuid generator.
package store

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/gocql/gocql"
)

// timeBucket is the UTC day of t as yyyyMMdd, the time_bucket of a message
// partition. Writer and reader both call it, so they can never disagree.
func timeBucket(t time.Time) int {
	y, m, d := t.UTC().Date()
	return y*10000 + int(m)*100 + d
}

// bucketOf is the day bucket of a message id.
func bucketOf(id gocql.UUID) int { return timeBucket(id.Time()) }

// BucketOf is the day bucket (yyyyMMdd, UTC) of a message id.
func BucketOf(id gocql.UUID) int { return bucketOf(id) }

// uuidEpoch is the start of the timeuuid clock, 1582-10-15 UTC.
var uuidEpoch = time.Date(1582, time.October, 15, 0, 0, 0, 0, time.UTC)

// idGenerator makes version-1 timeuuids that are unique and strictly
// increasing within the process, even for ids made in the same 100 ns tick:
// a tick already used is bumped by one. The node part is random per process
// (not the MAC address) so that two instances on one host never collide.
type idGenerator struct {
	once  sync.Once
	mu    sync.Mutex
	last  int64
	node  [6]byte
	clock uint32
}

func (g *idGenerator) init() {
	g.once.Do(func() {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("store: no randomness for timeuuid node: %v", err))
		}
		copy(g.node[:], b[:6])
		g.node[0] |= 0x01 // multicast bit: marks a random node id (RFC 4122 4.5)
		g.clock = uint32(b[6])<<8 | uint32(b[7])
	})
}

func (g *idGenerator) next(now time.Time) gocql.UUID {
	g.init()
	ts := ticksOf(now)
	g.mu.Lock()
	if ts <= g.last {
		ts = g.last + 1
	}
	g.last = ts
	g.mu.Unlock()
	return gocql.TimeUUIDWith(ts, g.clock, g.node[:])
}

// nextMicro is next, in a microsecond that no earlier id of this process
// has: USING TIMESTAMP is in microseconds, so two changes of one cell
// (a reaction added and taken back from two tabs at once) written at
// their ids' times are ordered by their ids, never tied (a tie lets the
// delete win, whichever came last).
func (g *idGenerator) nextMicro(now time.Time) gocql.UUID {
	g.init()
	ts := ticksOf(now)
	g.mu.Lock()
	if ts <= g.last {
		ts = g.last + 1
	}
	if r := ts % 10; r != 0 { // the epoch lies on a microsecond, so does ts now
		ts += 10 - r
	}
	g.last = ts
	g.mu.Unlock()
	return gocql.TimeUUIDWith(ts, g.clock, g.node[:])
}

// ParseMessageID parses a message id from a URL or header. It returns an
// error wrapping ErrInvalid unless s is a version-1 (time-based) UUID.
func ParseMessageID(s string) (gocql.UUID, error) {
	id, err := gocql.ParseUUID(s)
	if err != nil || id.Version() != 1 {
		return gocql.UUID{}, fmt.Errorf("store: message id %q: %w", s, ErrInvalid)
	}
	return id, nil
}

// IDFloor returns a timestamp, in the 100 ns ticks of a timeuuid, that
// every message id this store makes from now on reaches or exceeds. Live
// streams use it to split what they replay from what they wait for.
func (s *Store) IDFloor() int64 { return s.ids.floor(s.Now()) }

// MadeHere reports whether this process made the message id (ids from other
// instances carry another node part).
func (s *Store) MadeHere(id gocql.UUID) bool {
	s.ids.init()
	return [6]byte(id[10:16]) == s.ids.node
}

// TimeOfTicks is the time of a timeuuid timestamp.
func TimeOfTicks(ticks int64) time.Time {
	return time.Unix(uuidEpoch.Unix()+ticks/10_000_000, (ticks%10_000_000)*100).UTC()
}

func (g *idGenerator) floor(now time.Time) int64 {
	g.init()
	ts := ticksOf(now)
	g.mu.Lock()
	defer g.mu.Unlock()
	if ts > g.last {
		g.last = ts
	}
	return g.last + 1
}

// TicksOf is t in the 100 ns ticks of a timeuuid's timestamp.
func TicksOf(t time.Time) int64 { return ticksOf(t) }

// ticksOf is t in timeuuid ticks; from seconds, not a Duration, which would
// overflow since 1582.
func ticksOf(t time.Time) int64 {
	t = t.UTC()
	return (t.Unix()-uuidEpoch.Unix())*10_000_000 + int64(t.Nanosecond()/100)
}

// Later orders message ids: by time, then by their other bytes, so two ids
// of the same tick still have one order.
func Later(a, b gocql.UUID) bool {
	if ta, tb := a.Timestamp(), b.Timestamp(); ta != tb {
		return ta > tb
	}
	return bytes.Compare(a[8:], b[8:]) > 0
}

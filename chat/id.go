// This file owns the id of messages and changes: a version-1 timeuuid, its
// time, its order and its text form, the generator that makes ids unique and
// increasing within a process, and the day bucket of an id.

package chat

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ID is a message or change id: a version-1 (time-based) UUID, as Cassandra
// stores it in a timeuuid column. Its zero value is "no id".
type ID [16]byte

// uuidEpoch is the start of the timeuuid clock, 1582-10-15 UTC.
var uuidEpoch = time.Date(1582, time.October, 15, 0, 0, 0, 0, time.UTC)

// errBadID is what ParseID wraps when its input is not a UUID.
var errBadID = errors.New("not a UUID")

// TicksOf is t in the 100 ns ticks of a timeuuid's timestamp; from seconds,
// not a Duration, which would overflow since 1582.
func TicksOf(t time.Time) int64 {
	t = t.UTC()
	return (t.Unix()-uuidEpoch.Unix())*10_000_000 + int64(t.Nanosecond()/100)
}

// TimeOfTicks is the time of a timeuuid timestamp.
func TimeOfTicks(ticks int64) time.Time {
	return time.Unix(uuidEpoch.Unix()+ticks/10_000_000, (ticks%10_000_000)*100).UTC()
}

// NewID is the version-1 id of the timestamp ticks (100 ns since 1582), the
// clock sequence clock (14 bits kept) and the node (6 bytes).
func NewID(ticks int64, clock uint16, node [6]byte) ID {
	var id ID
	id[0], id[1], id[2], id[3] = byte(ticks>>24), byte(ticks>>16), byte(ticks>>8), byte(ticks)
	id[4], id[5] = byte(ticks>>40), byte(ticks>>32)
	id[6], id[7] = 0x10|byte(ticks>>56)&0x0f, byte(ticks>>48) // version 1
	id[8], id[9] = 0x80|byte(clock>>8)&0x3f, byte(clock)      // RFC 4122 variant
	copy(id[10:], node[:])
	return id
}

// The clock and node bytes of the smallest and the largest timeuuid of a
// tick as Cassandra compares them (byte by byte, signed): its minTimeuuid and
// maxTimeuuid.
var (
	minNode = [6]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80}
	maxNode = [6]byte{0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f}
)

const (
	minClock = 0x8080
	maxClock = 0x7f7f
)

// MinIDAt is the smallest timeuuid of t's tick, as Cassandra orders them: a
// bound that every id made at t or later reaches.
func MinIDAt(t time.Time) ID { return NewID(TicksOf(t), minClock, minNode) }

// MaxIDAt is the largest timeuuid of t's tick, as Cassandra orders them: a
// bound that every id made at t or earlier stays under.
func MaxIDAt(t time.Time) ID { return NewID(TicksOf(t), maxClock, maxNode) }

// IsZero reports whether id is the zero id, "no id".
func (id ID) IsZero() bool { return id == ID{} }

// Version is the UUID version of id (1 for a timeuuid).
func (id ID) Version() int { return int(id[6] >> 4) }

// Timestamp is the time of id in 100 ns ticks since 1582-10-15, or 0 unless
// id is a version-1 UUID.
func (id ID) Timestamp() int64 {
	if id.Version() != 1 {
		return 0
	}
	return int64(id[6]&0x0f)<<56 | int64(id[7])<<48 | int64(id[4])<<40 | int64(id[5])<<32 |
		int64(id[0])<<24 | int64(id[1])<<16 | int64(id[2])<<8 | int64(id[3])
}

// Time is the time id was made, in UTC, or the zero time unless id is a
// version-1 UUID.
func (id ID) Time() time.Time {
	if id.Version() != 1 {
		return time.Time{}
	}
	return TimeOfTicks(id.Timestamp())
}

// Node is the node part of id: the instance that made it.
func (id ID) Node() [6]byte { return [6]byte(id[10:16]) }

// Compare orders ids by time, then by their other bytes, so two ids of the
// same tick still have one order: -1 if id comes before o, +1 if after, 0 if
// they are equal.
func (id ID) Compare(o ID) int {
	if a, b := id.Timestamp(), o.Timestamp(); a != b {
		if a < b {
			return -1
		}
		return 1
	}
	return bytes.Compare(id[8:], o[8:])
}

// Before reports whether id comes before o (see Compare).
func (id ID) Before(o ID) bool { return id.Compare(o) < 0 }

// After reports whether id comes after o (see Compare).
func (id ID) After(o ID) bool { return id.Compare(o) > 0 }

// String is the canonical text form of id, 36 lower-case characters:
// xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func (id ID) String() string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, b := range id {
		switch i {
		case 4, 6, 8, 10:
			out = append(out, '-')
		}
		out = append(out, hex[b>>4], hex[b&0x0f])
	}
	return string(out)
}

// ParseID reads a UUID of any version: 32 hex digits of either case, where a
// dash may stand before any byte. It returns an error unless s is one.
func ParseID(s string) (ID, error) {
	var id ID
	n := 0 // hex digits read
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' && n%2 == 0 {
			continue
		}
		v, ok := hexValue(c)
		if !ok || n == 32 {
			return ID{}, fmt.Errorf("chat: id %q: %w", s, errBadID)
		}
		id[n/2] |= v << (4 * (1 - n%2))
		n++
	}
	if n != 32 {
		return ID{}, fmt.Errorf("chat: id %q: %w", s, errBadID)
	}
	return id, nil
}

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// ParseMessageID parses a message id from a URL or header. It returns an
// error wrapping ErrInvalid unless s is a version-1 (time-based) UUID.
func ParseMessageID(s string) (ID, error) {
	id, err := ParseID(s)
	if err != nil || id.Version() != 1 {
		return ID{}, fmt.Errorf("store: message id %q: %w", s, ErrInvalid)
	}
	return id, nil
}

// MarshalText is id's String, so that JSON and other text encodings carry
// the canonical form.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads what ParseID accepts.
func (id *ID) UnmarshalText(text []byte) error {
	parsed, err := ParseID(string(text))
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// TimeBucket is the UTC day of t as yyyyMMdd, the time_bucket of a message
// partition. Writer and reader both call it, so they can never disagree.
func TimeBucket(t time.Time) int {
	y, m, d := t.UTC().Date()
	return y*10000 + int(m)*100 + d
}

// BucketOf is the day bucket (yyyyMMdd, UTC) of a message id.
func BucketOf(id ID) int { return TimeBucket(id.Time()) }

// IDGenerator makes version-1 timeuuids that are unique and strictly
// increasing within the process, even for ids made in the same 100 ns tick:
// a tick already used is bumped by one. The node part is random per process
// (not the MAC address) so that two instances on one host never collide.
// Its zero value is ready to use.
type IDGenerator struct {
	once  sync.Once
	mu    sync.Mutex
	last  int64
	node  [6]byte
	clock uint16
}

func (g *IDGenerator) init() {
	g.once.Do(func() {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("store: no randomness for timeuuid node: %v", err))
		}
		copy(g.node[:], b[:6])
		g.node[0] |= 0x01 // multicast bit: marks a random node id (RFC 4122 4.5)
		g.clock = uint16(b[6])<<8 | uint16(b[7])
	})
}

// Next is a new id at now, or just after the last id made if that was at
// now or later.
func (g *IDGenerator) Next(now time.Time) ID { return g.take(now, false) }

// NextMicro is Next, in a microsecond that no earlier id of this process
// has: USING TIMESTAMP is in microseconds, so two changes of one cell
// (a reaction added and taken back from two tabs at once) written at
// their ids' times are ordered by their ids, never tied (a tie lets the
// delete win, whichever came last).
func (g *IDGenerator) NextMicro(now time.Time) ID { return g.take(now, true) }

func (g *IDGenerator) take(now time.Time, micro bool) ID {
	g.init()
	ts := TicksOf(now)
	g.mu.Lock()
	if ts <= g.last {
		ts = g.last + 1
	}
	if r := ts % 10; micro && r != 0 { // the epoch lies on a microsecond, so does ts now
		ts += 10 - r
	}
	g.last = ts
	g.mu.Unlock()
	return NewID(ts, g.clock, g.node)
}

// Floor returns a timestamp, in the 100 ns ticks of a timeuuid, that every
// id this generator makes from now on reaches or exceeds.
func (g *IDGenerator) Floor(now time.Time) int64 {
	g.init()
	ts := TicksOf(now)
	g.mu.Lock()
	defer g.mu.Unlock()
	if ts > g.last {
		g.last = ts
	}
	return g.last + 1
}

// MadeHere reports whether this generator made id (ids from other
// instances carry another node part).
func (g *IDGenerator) MadeHere(id ID) bool {
	g.init()
	return id.Node() == g.node
}

// IDAt is a new id of t's tick with a random clock sequence and node: for
// ids made outside an IDGenerator, as tests and imports make them. Two calls
// with one t give two ids (but not in a known order).
func IDAt(t time.Time) ID {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("chat: no randomness for an id: %v", err))
	}
	return NewID(TicksOf(t), uint16(b[6])<<8|uint16(b[7]), [6]byte(b[:6]))
}

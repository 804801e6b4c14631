// This file checks that chat.ID reads and writes timeuuids exactly as the
// driver's UUID does: the store converts between them at every statement.

package store

import (
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/chat"
)

func TestIDsAgreeWithTheDriver(t *testing.T) {
	for _, at := range []time.Time{time.Now(), time.Unix(0, 0), time.Date(2030, 6, 1, 12, 0, 0, 900, time.UTC)} {
		if chat.MinIDAt(at) != chat.ID(gocql.MinTimeUUID(at)) || chat.MaxIDAt(at) != chat.ID(gocql.MaxTimeUUID(at)) {
			t.Errorf("%v: the bounds of a tick differ from the driver's", at)
		}
		u := gocql.UUIDFromTime(at)
		id := chat.ID(u)
		if id.String() != u.String() || id.Timestamp() != u.Timestamp() || !id.Time().Equal(u.Time()) {
			t.Errorf("%v: %s, %d, %v; driver %s, %d, %v", at, id, id.Timestamp(), id.Time(), u, u.Timestamp(), u.Time())
		}
		if back, err := chat.ParseID(u.String()); err != nil || back != id {
			t.Errorf("ParseID(%s) = %s, %v", u, back, err)
		}
		var g chat.IDGenerator
		made := g.Next(at)
		if gocql.UUID(made).Version() != 1 || !gocql.UUID(made).Time().Equal(made.Time()) {
			t.Errorf("the driver reads %s as %v", made, gocql.UUID(made).Time())
		}
	}
	for _, s := range []string{"6ba7b810-9dad-11d1-80b4-00c04fd430c8", "6ba-7b8109dad11d180b400c04fd430c8", "", "x", "6b-a7b8109dad11d180b400c04fd430c8"} {
		want, werr := gocql.ParseUUID(s)
		got, gerr := chat.ParseID(s)
		if (werr == nil) != (gerr == nil) || got != chat.ID(want) {
			t.Errorf("ParseID(%q) = %s, %v; driver %s, %v", s, got, gerr, want, werr)
		}
	}
}

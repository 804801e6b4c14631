// This file tests the id: its text form, its time, its order, the bounds
// of a tick and the generator.

package chat_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

func TestParseID(t *testing.T) {
	const canonical = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"OK", canonical, true},
		{"UpperCase", "6BA7B810-9DAD-11D1-80B4-00C04FD430C8", true},
		{"NoDashes", "6ba7b8109dad11d180b400c04fd430c8", true},
		{"DashBetweenBytes", "6b-a7b8109dad11d180b400c04fd430c8", true},
		{"DashInsideAByte", "6ba-7b8109dad11d180b400c04fd430c8", false},
		{"Short", "6ba7b810-9dad-11d1-80b4-00c04fd430c", false},
		{"Long", canonical + "0", false},
		{"NotHex", "6ba7b810-9dad-11d1-80b4-00c04fd430cg", false},
		{"Empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := chat.ParseID(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseID(%q) = %v, %v", tc.in, id, err)
			}
			if tc.ok && id.String() != canonical {
				t.Errorf("ParseID(%q).String() = %q, want %q", tc.in, id, canonical)
			}
		})
	}
}

func TestParseMessageID(t *testing.T) {
	if _, err := chat.ParseMessageID("0f8fad5b-d9cb-469f-a165-70867728950e"); !errors.Is(err, chat.ErrInvalid) {
		t.Errorf("a version-4 UUID: err = %v, want ErrInvalid", err)
	}
	id := chat.IDAt(time.Now())
	if got, err := chat.ParseMessageID(id.String()); err != nil || got != id {
		t.Errorf("ParseMessageID(%s) = %s, %v", id, got, err)
	}
}

func TestIDTime(t *testing.T) {
	at := time.Date(2024, 2, 29, 23, 59, 59, 123456700, time.FixedZone("x", 3600))
	id := chat.IDAt(at)
	if !id.Time().Equal(at) || id.Time().Location() != time.UTC {
		t.Errorf("Time() = %v, want %v in UTC", id.Time(), at)
	}
	if id.Version() != 1 || id[8]&0xc0 != 0x80 {
		t.Errorf("version %d, variant byte %#x", id.Version(), id[8])
	}
	if got := chat.BucketOf(id); got != 20240229 {
		t.Errorf("BucketOf = %d, want 20240229 (the UTC day)", got)
	}
	if (chat.ID{}).Timestamp() != 0 || !(chat.ID{}).Time().IsZero() || !(chat.ID{}).IsZero() || id.IsZero() {
		t.Error("the zero id has no time and is zero; a made one is not")
	}
}

func TestTimeBucket(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   time.Time
		want int
	}{
		{"UTC", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), 20250102},
		{"EastOfUTC", time.Date(2025, 1, 2, 0, 30, 0, 0, time.FixedZone("+2", 7200)), 20250101},
		{"LastNanosecond", time.Date(2025, 12, 31, 23, 59, 59, 999999999, time.UTC), 20251231},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := chat.TimeBucket(tc.at); got != tc.want {
				t.Errorf("TimeBucket(%v) = %d, want %d", tc.at, got, tc.want)
			}
		})
	}
}

func TestIDOrder(t *testing.T) {
	at := time.Now()
	lo, hi := chat.MinIDAt(at), chat.MaxIDAt(at)
	id := chat.IDAt(at)
	if lo.Timestamp() != id.Timestamp() || hi.Timestamp() != id.Timestamp() {
		t.Fatal("the bounds of a tick are in that tick")
	}
	later := chat.IDAt(at.Add(time.Microsecond))
	if !id.Before(later) || !later.After(id) || id.Compare(id) != 0 || later.Compare(id) != 1 {
		t.Error("ids order by time")
	}
	a, b := id, id
	b[15]++
	if a.Compare(b) != -1 {
		t.Error("ids of one tick order by their other bytes")
	}
	if chat.TimeOfTicks(chat.TicksOf(at)) != at.UTC().Truncate(100*time.Nanosecond) {
		t.Error("TimeOfTicks undoes TicksOf to the tick")
	}
}

func TestIDGenerator(t *testing.T) {
	var g, other chat.IDGenerator
	now := time.Now()
	prev := g.Next(now)
	for range 1000 {
		id := g.Next(now)
		if !id.After(prev) || !g.MadeHere(id) || other.MadeHere(id) {
			t.Fatalf("%s after %s: increasing, and made here only", id, prev)
		}
		prev = id
	}
	m := g.NextMicro(now)
	if m.Timestamp()%10 != 0 || !m.After(prev) {
		t.Errorf("NextMicro %s: on a microsecond, after %s", m, prev)
	}
	if floor := g.Floor(now); g.Next(now).Timestamp() < floor {
		t.Error("ids made after Floor reach it")
	}
}

func TestIDText(t *testing.T) {
	type envelope struct {
		ID chat.ID `json:"id"`
	}
	id := chat.IDAt(time.Now())
	b, err := json.Marshal(envelope{id})
	if err != nil || string(b) != `{"id":"`+id.String()+`"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var back envelope
	if err := json.Unmarshal(b, &back); err != nil || back.ID != id {
		t.Errorf("Unmarshal = %v, %v", back.ID, err)
	}
	if err := json.Unmarshal([]byte(`{"id":"nope"}`), &back); err == nil {
		t.Error("a bad id is an error")
	}
}

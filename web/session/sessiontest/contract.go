// This file owns the contract of session.Sessions: what the session store
// relies on of any storage, checked the same way against every
// implementation.

package sessiontest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/web"
	"github.com/killrchat/killrchat/web/session"
)

// Setup gives one test a Sessions and a way to let time pass for it: a
// real sleep on a database, a clock moved forward in memory. The
// Sessions may be shared with other tests; the suite's ids are random.
type Setup func(t *testing.T) (s session.Sessions, elapse func(time.Duration))

// expiry is how long after its TTL a row is surely gone: Cassandra counts
// TTLs in whole seconds from the second of the write.
const expiry = 1500 * time.Millisecond

// Run checks the contract of Sessions against what setup gives. Its
// subtests run in parallel.
func Run(t *testing.T, setup Setup) {
	t.Run("Missing", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustBeGone(t, s, newID(t))
	})
	t.Run("SaveAndRead", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		id, row := newID(t), chat.SessionRow{Login: "ada", Data: []byte(`{"login":"ada"}`)}
		mustSave(t, s, id, row, time.Hour)
		mustRead(t, s, id, row)
	})
	t.Run("Anonymous", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		id, row := newID(t), chat.SessionRow{Data: []byte(`{}`)}
		mustSave(t, s, id, row, time.Hour)
		mustRead(t, s, id, row)
		if err := s.DeleteSession(context.Background(), "", id); err != nil {
			t.Fatalf("delete a session nobody logged into: %v", err)
		}
		mustBeGone(t, s, id)
	})
	t.Run("NoData", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		id := newID(t)
		mustSave(t, s, id, chat.SessionRow{Login: "ada"}, time.Hour)
		mustRead(t, s, id, chat.SessionRow{Login: "ada"})
	})
	t.Run("Rewrite", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		id := newID(t)
		mustSave(t, s, id, chat.SessionRow{Login: "ada", Data: []byte("first")}, time.Hour)
		second := chat.SessionRow{Login: "ada", Data: []byte("second")}
		mustSave(t, s, id, second, time.Hour)
		mustRead(t, s, id, second)
	})
	t.Run("Copied", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		id, data := newID(t), []byte("values")
		mustSave(t, s, id, chat.SessionRow{Login: "ada", Data: data}, time.Hour)
		data[0] = 'X' // the caller's buffer is not the stored row
		got := mustRead(t, s, id, chat.SessionRow{Login: "ada", Data: []byte("values")})
		got.Data[0] = 'Y' // nor is what a read returned
		mustRead(t, s, id, chat.SessionRow{Login: "ada", Data: []byte("values")})
	})
	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mine, other := newID(t), newID(t)
		row := chat.SessionRow{Login: "ada", Data: []byte("x")}
		mustSave(t, s, mine, row, time.Hour)
		mustSave(t, s, other, row, time.Hour)
		if err := s.DeleteSession(context.Background(), "ada", mine); err != nil {
			t.Fatalf("delete: %v", err)
		}
		mustBeGone(t, s, mine)
		mustRead(t, s, other, row) // another session of the same login stays
		if err := s.DeleteSession(context.Background(), "ada", mine); err != nil {
			t.Fatalf("delete again: %v; a missing row is no error", err)
		}
		if err := s.DeleteSession(context.Background(), "nobody", newID(t)); err != nil {
			t.Fatalf("delete a session that never was: %v", err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		for _, age := range []time.Duration{0, -time.Second, 999 * time.Millisecond} {
			id := newID(t)
			err := s.SaveSession(context.Background(), id, chat.SessionRow{Login: "ada"}, age)
			if !errors.Is(err, chat.ErrInvalid) {
				t.Errorf("save with max age %v: %v, want chat.ErrInvalid", age, err)
			}
			mustBeGone(t, s, id)
		}
	})
	t.Run("Expires", func(t *testing.T) {
		t.Parallel()
		s, elapse := setup(t)
		id := newID(t)
		mustSave(t, s, id, chat.SessionRow{Login: "ada"}, time.Second)
		elapse(expiry)
		mustBeGone(t, s, id)
	})
	t.Run("LivesItsAge", func(t *testing.T) {
		t.Parallel()
		s, elapse := setup(t)
		id, row := newID(t), chat.SessionRow{Login: "ada", Data: []byte("x")}
		mustSave(t, s, id, row, 10*time.Second)
		elapse(expiry)
		mustRead(t, s, id, row)
	})
	t.Run("RewriteExtends", func(t *testing.T) {
		t.Parallel()
		s, elapse := setup(t)
		id, row := newID(t), chat.SessionRow{Login: "ada", Data: []byte("x")}
		mustSave(t, s, id, row, time.Second)
		mustSave(t, s, id, row, time.Hour)
		elapse(expiry)
		mustRead(t, s, id, row)
	})
}

func newID(t *testing.T) string {
	t.Helper()
	id, err := web.RandomToken(32)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustSave(t *testing.T, s session.Sessions, id string, row chat.SessionRow, maxAge time.Duration) {
	t.Helper()
	if err := s.SaveSession(context.Background(), id, row, maxAge); err != nil {
		t.Fatalf("save session: %v", err)
	}
}

// mustRead reads id and checks it holds want (no data and empty data are
// the same).
func mustRead(t *testing.T, s session.Sessions, id string, want chat.SessionRow) chat.SessionRow {
	t.Helper()
	got, err := s.Session(context.Background(), id)
	if err != nil {
		t.Fatalf("read session: %v", err)
	}
	if got.Login != want.Login || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("read session = {%q %q}, want {%q %q}", got.Login, got.Data, want.Login, want.Data)
	}
	return got
}

func mustBeGone(t *testing.T, s session.Sessions, id string) {
	t.Helper()
	if _, err := s.Session(context.Background(), id); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("read session: %v, want chat.ErrNotFound", err)
	}
}

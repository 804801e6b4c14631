package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// TestPendingEmailKeepsAttempts: a message recorded into a row that a
// failed try moved there keeps the row's count of attempts (its
// back-off); the messages add up; of two racing claims one applies, and
// only its owner finishes the row.
func TestPendingEmailKeepsAttempts(t *testing.T) {
	ctx := context.Background()
	due := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	login, conv := unique("bob"), "room-"+unique("r")
	first, second := chat.IDAt(time.Now()), chat.IDAt(time.Now().Add(time.Millisecond))
	if err := db.AddPendingEmail(ctx, due, login, conv, []chat.ID{first}, 3); err != nil {
		t.Fatal(err)
	}
	if err := db.AddPendingEmail(ctx, due, login, conv, []chat.ID{second}, 0); err != nil {
		t.Fatal(err)
	}
	row := pendingRow(t, due, login)
	if row.Attempts != 3 || len(row.Messages) != 2 {
		t.Fatalf("row %+v: want 3 attempts and both messages", row)
	}
	dues, err := db.EmailDues(ctx, due.Format("20060102"), due.Add(-time.Millisecond), due)
	if err != nil || len(dues) != 1 || !dues[0].Equal(due) {
		t.Fatalf("due times listed: %v %v, want %v", dues, err, due)
	}

	var (
		wg   sync.WaitGroup
		won  = make([]bool, 2)
		errs = make([]error, 2)
	)
	for i, owner := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won[i], errs[i] = db.ClaimPendingEmail(ctx, row, owner, time.Now().Add(time.Minute))
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || won[0] == won[1] {
		t.Fatalf("claims: %v %v, errors %v %v; want exactly one", won[0], won[1], errs[0], errs[1])
	}
	winner, loser := "a", "b"
	if won[1] {
		winner, loser = "b", "a"
	}
	if ok, err := db.FinishPendingEmail(ctx, row, loser, chat.EmailSent); err != nil || ok {
		t.Fatalf("the loser finished the row: %v %v", ok, err)
	}
	if ok, err := db.FinishPendingEmail(ctx, row, winner, chat.EmailSent); err != nil || !ok {
		t.Fatalf("the owner did not finish the row: %v %v", ok, err)
	}
	if row := pendingRow(t, due, login); row.State != chat.EmailSent || row.Owner != winner || row.Attempts != 3 {
		t.Fatalf("row after: %+v", row)
	}
}

func pendingRow(t *testing.T, due time.Time, login string) chat.PendingEmail {
	t.Helper()
	rows, err := db.PendingEmails(context.Background(), due)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Login == login {
			return r
		}
	}
	t.Fatalf("no row of %s due %v", login, due)
	return chat.PendingEmail{}
}

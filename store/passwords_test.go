package store

import (
	"context"
	"errors"
	"github.com/killrchat/killrchat/chat"
	"testing"
	"time"
)

// TestBcryptQueues: with every bcrypt slot taken, a password check waits
// its turn (here until its deadline) instead of adding to the CPU load.
func TestBcryptQueues(t *testing.T) {
	for i := 0; i < cap(bcryptSlots); i++ {
		bcryptSlots <- struct{}{}
	}
	released := false
	release := func() {
		if !released {
			for i := 0; i < cap(bcryptSlots); i++ {
				<-bcryptSlots
			}
			released = true
		}
	}
	defer release()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := hashPassword(ctx, "password1"); !errors.Is(err, chat.ErrUnavailable) {
		t.Fatalf("hash with no free slot: %v, want chat.ErrUnavailable after the deadline", err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := passwordMatches(context.Background(), "", "password1")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a password check ran with every slot taken (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("queued check: %v", err)
	}
}

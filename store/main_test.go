package store_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
)

var db *storetest.DB

func TestMain(m *testing.M) {
	// Store tests create many users; the handler tests keep the real cost.
	store.PasswordCost = 4
	os.Exit(storetest.Main(m, "store", &db))
}

var seq atomic.Int64

// unique returns a fresh name with prefix, valid as a login or room name.
func unique(prefix string) string { return fmt.Sprintf("%s%d", prefix, seq.Add(1)) }

// newUser signs a user up.
func newUser(t testing.TB, login string) chat.User {
	t.Helper()
	u, err := db.CreateUser(context.Background(), chat.SignUp{
		Login: login, Password: "password1", PasswordConfirm: "password1", Firstname: "First" + login, Lastname: "Last",
	})
	if err != nil {
		t.Fatalf("create user %s: %v", login, err)
	}
	return u
}

// joinAndRead joins user to room and reads the room with every
// participant's standing (a room read for one person holds theirs only),
// for a test that posts as several people.
func joinAndRead(ctx context.Context, st *store.Store, user chat.UserRef, room string) (chat.RoomWithAll, error) {
	if _, err := st.JoinRoom(ctx, user, room); err != nil {
		return chat.RoomWithAll{}, err
	}
	return st.RoomWithAll(ctx, room)
}

// newUsers signs n users up, their logins starting with prefix.
func newUsers(t testing.TB, prefix string, n int) []chat.User {
	t.Helper()
	out := make([]chat.User, n)
	for i := range out {
		out[i] = newUser(t, unique(prefix))
	}
	return out
}

// roundsOf is full rounds of a race, or short ones with -short.
func roundsOf(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// Tests that share nothing with others call t.Parallel. Those that start
// db.Recorder, move db's clock, sweep or list the whole keyspace, or take
// the bcrypt slots stay serial: Go runs every serial test of the package
// before the parallel ones, so the two never overlap.

// raceWorkers is how many rounds of a race test run at once. Each round
// has a room of its own, and each worker its own users where rounds share
// them, so rounds stay as independent as when they ran one after another;
// the time goes to waiting on Cassandra, which serves several at once.
const raceWorkers = 4

// inRounds runs round(worker, i) for every i in [0, rounds) over
// raceWorkers goroutines; worker (0 to raceWorkers-1) picks what the
// worker's rounds share. A round's error stops the handing out of rounds
// and fails the test, naming the round, once the rounds under way have
// ended: t.Fatal belongs to the test's own goroutine.
func inRounds(t *testing.T, rounds int, round func(worker, i int) error) {
	t.Helper()
	var (
		next   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
	)
	errs := make([]error, raceWorkers)
	for w := range raceWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= rounds {
					return
				}
				if err := round(w, i); err != nil {
					errs[w] = fmt.Errorf("round %d: %w", i, err)
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

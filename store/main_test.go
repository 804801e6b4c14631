package store_test

import (
	"context"
	"fmt"
	"os"
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
func joinAndRead(ctx context.Context, st *store.Store, user chat.UserRef, room string) (chat.Room, error) {
	if _, err := st.JoinRoom(ctx, user, room); err != nil {
		return chat.Room{}, err
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

package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

func TestCreateRoomRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := unique("race")
	const n = 50
	users := make([]chat.User, n)
	for i := range users {
		users[i] = newUser(t, unique("creator"))
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
	)
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := db.CreateRoom(ctx, u.Ref(), chat.NewRoom{Name: name, Banner: "by " + u.Login})
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, u.Login)
				mu.Unlock()
			case !errors.Is(err, chat.ErrRoomExists):
				t.Errorf("create by %s: %v", u.Login, err)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d creates applied (%v), want exactly 1", len(winners), winners)
	}
	r, err := db.RoomWithAll(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if r.CreatorLogin != winners[0] || r.Creator.Login != winners[0] || r.Banner != "by "+winners[0] {
		t.Errorf("room creator %q/%q banner %q, winner %q", r.CreatorLogin, r.Creator.Login, r.Banner, winners[0])
	}
	if len(r.Participants) != 1 || !r.Has(winners[0]) {
		t.Errorf("participants = %v", r.Participants)
	}
}

// raceDelete runs the creator's delete against other users' action
// (join or leave) at once, many times, and checks what the original
// KillrChat design promises: no zombie row, no dangling "my rooms" entry
// after repair on read, and every join either failed (404) or was undone.
func raceDelete(t *testing.T, action string, rounds int) {
	ctx := context.Background()
	creators := newUsers(t, "owner", raceWorkers)
	racers := make([][]chat.User, raceWorkers)
	for w := range racers {
		racers[w] = newUsers(t, "racer", 3)
	}
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var mu sync.Mutex
	joinsApplied, joinsRefused := 0, 0
	inRounds(t, rounds, func(w, round int) error {
		creator, others := creators[w], racers[w]
		name := fmt.Sprintf("%s%d", action, round)
		name = unique(name[:min(len(name), 20)])
		if _, err := db.CreateRoom(ctx, creator.Ref(), chat.NewRoom{Name: name}); err != nil {
			return err
		}
		if action == "leave" {
			for _, o := range others {
				if _, err := db.JoinRoom(ctx, o.Ref(), name); err != nil {
					return err
				}
			}
		}
		var wg sync.WaitGroup
		results := make([]error, len(others))
		start := make(chan struct{})
		for i, o := range others {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if rand.IntN(2) == 0 {
					// vary the interleaving
					for range rand.IntN(3) {
						_ = ctx.Err()
					}
				}
				if action == "join" {
					_, results[i] = db.JoinRoom(ctx, o.Ref(), name)
				} else {
					results[i] = db.LeaveRoom(ctx, o.Ref(), name)
				}
			}()
		}
		var delErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, delErr = db.DeleteRoom(ctx, creator.Login, name)
		}()
		close(start)
		wg.Wait()
		if delErr != nil {
			return fmt.Errorf("delete: %v", delErr)
		}
		applied, refused := 0, 0
		for i, err := range results {
			switch {
			case err == nil:
				applied++
			case errors.Is(err, chat.ErrNotFound):
				refused++
			default:
				return fmt.Errorf("%s by %s: %v", action, others[i].Login, err)
			}
		}
		mu.Lock()
		joinsApplied, joinsRefused = joinsApplied+applied, joinsRefused+refused
		mu.Unlock()
		// No zombie: the row is gone entirely, not left without a creator.
		var count int
		if err := sess.Query(`SELECT COUNT(*) FROM rooms WHERE room_name = ?`, name).Scan(&count); err != nil {
			return err
		}
		if count != 0 {
			return fmt.Errorf("room %s still has a row after delete (zombie)", name)
		}
		// Repair on read, then nobody lists the room.
		for _, u := range append([]chat.User{creator}, others...) {
			if _, err := db.MyRooms(ctx, u.Login); err != nil {
				return err
			}
			got, err := db.User(ctx, u.Login)
			if err != nil {
				return err
			}
			for _, r := range got.ChatRooms {
				if r == name {
					return fmt.Errorf("%s still lists deleted room %s", u.Login, name)
				}
			}
		}
		return nil
	})
	t.Logf("%d rounds: %s applied %d times, refused (404) %d times", rounds, action, joinsApplied, joinsRefused)
}

// TestJoinRacingDelete: 1,000 rounds (issue 21's acceptance), 200 with -short.
func TestJoinRacingDelete(t *testing.T) {
	t.Parallel()
	rounds := 1000
	if testing.Short() {
		rounds = 200
	}
	raceDelete(t, "join", rounds)
}

func TestLeaveRacingDelete(t *testing.T) {
	t.Parallel()
	raceDelete(t, "leave", 200)
}

func TestDeleteRoom(t *testing.T) {
	ctx := context.Background()
	creator, other := newUser(t, unique("own")), newUser(t, unique("oth"))
	name := unique("del")
	if _, err := db.CreateRoom(ctx, creator.Ref(), chat.NewRoom{Name: name}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.JoinRoom(ctx, other.Ref(), name); err != nil {
		t.Fatal(err)
	}
	r, _ := db.RoomWithAll(ctx, name)
	if _, err := db.PostMessage(ctx, r, other.Ref(), "hello"); err != nil {
		t.Fatal(err)
	}
	t.Run("ErrNotCreator", func(t *testing.T) {
		if _, err := db.DeleteRoom(ctx, other.Login, name); !errors.Is(err, chat.ErrNotCreator) {
			t.Fatalf("err = %v", err)
		}
		if _, err := db.RoomWithAll(ctx, name); err != nil {
			t.Fatalf("room gone after refused delete: %v", err)
		}
	})
	t.Run("OK", func(t *testing.T) {
		if _, err := db.DeleteRoom(ctx, creator.Login, name); err != nil {
			t.Fatal(err)
		}
		if _, err := db.RoomWithAll(ctx, name); !errors.Is(err, chat.ErrNotFound) {
			t.Fatalf("room still there: %v", err)
		}
		for _, login := range []string{creator.Login, other.Login} {
			u, _ := db.User(ctx, login)
			if len(u.ChatRooms) != 0 {
				t.Errorf("%s still lists %v", login, u.ChatRooms)
			}
		}
		sess, err := db.Session()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		var n int
		if err := sess.Query(`SELECT COUNT(*) FROM messages_bucket WHERE room_name = ?`, name).Scan(&n); err != nil || n != 0 {
			t.Errorf("buckets left: %d %v", n, err)
		}
		if err := sess.Query(`SELECT COUNT(*) FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? ALLOW FILTERING`,
			name, r.CreatedAt.UTC().Year()*10000+int(r.CreatedAt.UTC().Month())*100+r.CreatedAt.UTC().Day()).Scan(&n); err != nil || n != 0 {
			t.Errorf("messages left: %d %v", n, err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := db.DeleteRoom(ctx, creator.Login, name); !errors.Is(err, chat.ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
		if _, err := db.JoinRoom(ctx, other.Ref(), name); !errors.Is(err, chat.ErrNotFound) {
			t.Fatalf("join deleted room: %v", err)
		}
	})
}

// roomsWrite matches statements that write the rooms table.
var roomsWrite = regexp.MustCompile(`(?is)^\s*(insert\s+into\s+rooms\b|update\s+rooms\b|delete\b.*\bfrom\s+rooms\b)`)

// deadRoomRows is the one plain write to rooms: the range delete of a
// deleted room's rows, by its incarnation, which no LWT reads again.
var deadRoomRows = regexp.MustCompile(`(?is)^\s*delete\s+from\s+rooms\s+where\s+room_name\s*=\s*\?\s+and\s+since\s*=\s*\?\s*$`)

// TestRoomsWritesAreConditional watches every statement the store
// sends through a room's life and fails on any write to rooms that is not
// a lightweight transaction (or in a conditional batch), but for the range
// delete of the deleted room's own rows.
func TestRoomsWritesAreConditional(t *testing.T) {
	ctx := context.Background()
	a, b := newUser(t, unique("lwta")), newUser(t, unique("lwtb"))
	name := unique("lwt")
	db.Recorder.Start()
	r, err := db.CreateRoom(ctx, a.Ref(), chat.NewRoom{Name: name})
	if err == nil {
		_, err = db.JoinRoom(ctx, b.Ref(), name)
	}
	if err == nil {
		_, err = db.PostMessage(ctx, r, a.Ref(), "hi")
	}
	if err == nil {
		err = db.LeaveRoom(ctx, b.Ref(), name)
	}
	if err == nil {
		_, err = db.JoinRoom(ctx, b.Ref(), name)
	}
	if err == nil {
		_, err = db.DeleteRoom(ctx, a.Login, name)
	}
	got := db.Recorder.Stop()
	if err != nil {
		t.Fatal(err)
	}
	// A batch is conditional when any of its statements is.
	conditional := regexp.MustCompile(`(?i)\bIF\b`)
	batchIf := map[time.Time]bool{}
	for _, q := range got {
		if q.Batch && conditional.MatchString(q.Statement) {
			batchIf[q.Start] = true
		}
	}
	writes, plain := 0, 0
	for _, q := range got {
		if !roomsWrite.MatchString(q.Statement) {
			continue
		}
		writes++
		switch {
		case conditional.MatchString(q.Statement), q.Batch && batchIf[q.Start]:
		case deadRoomRows.MatchString(q.Statement):
			plain++
		default:
			t.Errorf("non-conditional write to rooms: %s", strings.Join(strings.Fields(q.Statement), " "))
		}
	}
	if writes < 6 || plain != 1 {
		t.Fatalf("observed %d writes to rooms, %d of a deleted room's rows; want at least 6 and 1: the observer is not seeing them", writes, plain)
	}
	// The check itself must be able to fail.
	if !roomsWrite.MatchString("UPDATE rooms SET banner = 'x' WHERE room_name = 'y'") || roomsWrite.MatchString("UPDATE users SET chat_rooms = {} WHERE login = 'y'") ||
		deadRoomRows.MatchString("DELETE FROM rooms WHERE room_name = ?") {
		t.Fatal("the matchers do not tell the writes apart")
	}
}

func TestRoomsPaging(t *testing.T) {
	ctx := context.Background()
	owner := newUser(t, unique("pager"))
	want := map[string]bool{}
	before, err := allRooms(ctx, 17)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 120; i++ {
		name := unique("page")
		want[name] = true
		if _, err := db.CreateRoom(ctx, owner.Ref(), chat.NewRoom{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	seen, err := allRooms(ctx, 17)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("room %s seen %d times", name, n)
		}
	}
	for name := range want {
		if seen[name] != 1 {
			t.Errorf("room %s not seen", name)
		}
	}
	if len(seen) != len(before)+120 {
		t.Errorf("saw %d rooms, want %d", len(seen), len(before)+120)
	}
	t.Run("ErrInvalid", func(t *testing.T) {
		if _, err := db.Rooms(ctx, []byte("garbage-state"), 10); !errors.Is(err, chat.ErrInvalid) {
			t.Errorf("bad paging state: %v", err)
		}
	})
}

func allRooms(ctx context.Context, pageSize int) (map[string]int, error) {
	seen := map[string]int{}
	var state []byte
	for {
		page, err := db.Rooms(ctx, state, pageSize)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Rooms {
			seen[r.Name]++
		}
		if len(page.Next) == 0 {
			return seen, nil
		}
		state = page.Next
	}
}

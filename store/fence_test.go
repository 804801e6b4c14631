package store_test

import (
	"context"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// TestLateDeleteIsFenced: a delete whose outcome was unknown and settled
// as not applied (its room still there) can never apply afterwards, as a
// frozen coordinator would run it (e2e/chaos saw one answered "not found"
// apply seconds later); a delete made afterwards works.
func TestLateDeleteIsFenced(t *testing.T) {
	ctx := context.Background()
	creator := newUser(t, unique("fdc"))
	r, err := db.CreateRoom(ctx, creator.Ref(), chat.NewRoom{Name: unique("fdr")})
	if err != nil {
		t.Fatal(err)
	}
	asRead, _ := db.RoomWithAll(ctx, r.Name)
	applied, err := db.SettleDelete(ctx, r.Name, asRead.Guard)
	if err != nil || applied {
		t.Fatalf("settled a delete that did not apply as applied %v (%v)", applied, err)
	}
	if applied, err := db.LateDelete(ctx, asRead.Room); err != nil || applied {
		t.Fatalf("the late delete applied: %v %v", applied, err)
	}
	if _, err := db.RoomWithAll(ctx, r.Name); err != nil {
		t.Fatalf("room gone: %v", err)
	}
	if _, err := db.DeleteRoom(ctx, creator.Login, r.Name); err != nil {
		t.Fatalf("a delete after the fence: %v", err)
	}
	// Settling once it applied says so.
	if applied, err := db.SettleDelete(ctx, r.Name, asRead.Guard); err != nil || !applied {
		t.Fatalf("settled an applied delete as %v (%v)", applied, err)
	}
}

// TestLateJoinIsFenced: the same for a join, which would leave a
// participant whose list lacks the room; and a join that did apply is
// settled as applied, without a fence.
func TestLateJoinIsFenced(t *testing.T) {
	ctx := context.Background()
	creator, joiner := newUser(t, unique("fjc")), newUser(t, unique("fjj"))
	r, err := db.CreateRoom(ctx, creator.Ref(), chat.NewRoom{Name: unique("fjr")})
	if err != nil {
		t.Fatal(err)
	}
	asRead, _ := db.RoomWithAll(ctx, r.Name)
	if applied, err := db.SettleJoin(ctx, asRead.Room, joiner.Login); err != nil || applied {
		t.Fatalf("settled a join that did not apply as applied %v (%v)", applied, err)
	}
	if applied, err := db.LateJoin(ctx, asRead.Room, joiner.Ref()); err != nil || applied {
		t.Fatalf("the late join applied: %v %v", applied, err)
	}
	if now, _ := db.RoomWithAll(ctx, r.Name); now.Has(joiner.Login) {
		t.Fatal("the late join made a participant")
	}
	// A join now reads the moved guard and applies.
	if _, err := db.JoinRoom(ctx, joiner.Ref(), r.Name); err != nil {
		t.Fatalf("a join after the fence: %v", err)
	}
	now, _ := db.RoomWithAll(ctx, r.Name)
	if !now.Has(joiner.Login) {
		t.Fatal("the join after the fence made no participant")
	}
	if applied, err := db.SettleJoin(ctx, now.Room, joiner.Login); err != nil || !applied {
		t.Fatalf("settled an applied join as %v (%v)", applied, err)
	}
	if again, _ := db.RoomWithAll(ctx, r.Name); again.Guard != now.Guard {
		t.Fatal("settling an applied join moved the guard")
	}
}

// TestListFollowsParticipants: a list entry for a room its owner does not
// take part in (a join whose outcome stayed unknown and did not apply) is
// dropped when the list is read; a participant's entry stays.
func TestListFollowsParticipants(t *testing.T) {
	ctx := context.Background()
	creator, other := newUser(t, unique("lfc")), newUser(t, unique("lfo"))
	r, err := db.CreateRoom(ctx, creator.Ref(), chat.NewRoom{Name: unique("lfr")})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.ListRoom(ctx, other.Login, r.Room); err != nil {
		t.Fatal(err)
	}
	rooms, err := db.MyRooms(ctx, other.Login)
	if err != nil || len(rooms) != 0 {
		t.Fatalf("my rooms of a non-participant: %v (%v)", rooms, err)
	}
	if u, _ := db.User(ctx, other.Login); len(u.ChatRooms) != 0 {
		t.Fatalf("the entry stayed: %v", u.ChatRooms)
	}
	if rooms, err := db.MyRooms(ctx, creator.Login); err != nil || len(rooms) != 1 {
		t.Fatalf("the creator's rooms: %v (%v)", rooms, err)
	}
}

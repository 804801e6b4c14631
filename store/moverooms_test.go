package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
)

// TestMoveRooms (issue 21): a room of chat_rooms, its participants in one
// map cell, is moved to rooms once, with its participants as rows and its
// header as it was; a room whose name rooms has already is left; the move
// runs once (data_moves), and a moved room works as any other.
func TestMoveRooms(t *testing.T) {
	ctx := context.Background()
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	a, b, c := newUser(t, unique("mva")), newUser(t, unique("mvb")), newUser(t, unique("mvc"))
	old, taken := unique("mvold"), unique("mvtaken")
	created := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	insert := `INSERT INTO chat_rooms (room_name, display_name, creation_date, banner, creator, creator_login, participants, kind, admins)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	people := map[string]chat.UserRef{a.Login: a.Ref(), b.Login: b.Ref(), c.Login: c.Ref()}
	if err := sess.Query(insert, old, "Old-"+old, created, "a banner", a.Ref(), a.Login, people, chat.KindClosed, []string{b.Login}).Exec(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Query(insert, taken, taken, created, "", c.Ref(), c.Login, people, nil, nil).Exec(); err != nil {
		t.Fatal(err)
	}
	mine, err := db.CreateRoom(ctx, a.Ref(), chat.NewRoom{Name: taken})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Query(`DELETE FROM data_moves WHERE name = '016_room_members'`).Exec(); err != nil {
		t.Fatal(err)
	}
	if err := db.MoveRooms(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := db.RoomWithAll(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if r.DisplayName != "Old-"+old || !r.CreatedAt.Equal(created) || r.Banner != "a banner" || r.CreatorLogin != a.Login ||
		r.Kind != chat.KindClosed || len(r.Admins) != 1 || r.Admins[0] != b.Login || len(r.Participants) != 3 || r.Participants[c.Login] != c.Ref() {
		t.Fatalf("moved room: %+v", r)
	}
	if got, err := db.RoomWithAll(ctx, taken); err != nil || got.CreatorLogin != a.Login || len(got.Participants) != 1 || !got.CreatedAt.Equal(mine.CreatedAt) {
		t.Fatalf("a room already in rooms was moved over: %+v (%v)", got, err)
	}
	// Once: a room of chat_rooms after the move is not moved.
	late := unique("mvlate")
	if err := sess.Query(insert, late, late, created, "", a.Ref(), a.Login, people, nil, nil).Exec(); err != nil {
		t.Fatal(err)
	}
	if err := db.MoveRooms(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RoomWithAll(ctx, late); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("the move ran twice: %v", err)
	}
	// The moved room works: a member leaves, the creator deletes it.
	if err := db.LeaveRoom(ctx, c.Ref(), old); err != nil {
		t.Fatal(err)
	}
	if r, _ := db.RoomWithAll(ctx, old); r.Has(c.Login) || len(r.Participants) != 2 {
		t.Fatalf("after a leave: %v", r.Participants)
	}
	if _, err := db.DeleteRoom(ctx, a.Login, old); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RoomWithAll(ctx, old); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("after the delete: %v", err)
	}
}

// TestDeleteTakesEveryStaticColumn: the delete of a room deletes the
// static columns it names; one it missed would outlive the room (a row
// in rooms with no room, found by TestJoinRacingDelete once).
func TestDeleteTakesEveryStaticColumn(t *testing.T) {
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	iter := sess.Query(`SELECT column_name, kind FROM system_schema.columns WHERE keyspace_name = ? AND table_name = 'rooms'`, db.Keyspace).Iter()
	var name, kind string
	deleted := map[string]bool{}
	for _, c := range strings.Split(store.RoomStatics, ",") {
		deleted[strings.TrimSpace(c)] = true
	}
	statics := 0
	for iter.Scan(&name, &kind) {
		if kind == "static" {
			statics++
			if !deleted[name] {
				t.Errorf("the static column %s is not deleted with its room", name)
			}
		}
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if statics != len(deleted) {
		t.Fatalf("%d static columns, %d deleted", statics, len(deleted))
	}
}

// This file owns the reads of the fault run's checks: what a room and
// its people hold, read as stored, with no cache and no rule of the
// application in between.

package inspect

import (
	"context"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/chat"
)

const (
	// A day's partition may hold its writers' marks (a static column) and
	// no message: such a row has no message_id and is skipped.
	selectBucketContents = `SELECT message_id, content FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`
	selectContent        = `SELECT content FROM chat_room_messages WHERE room_name = ? AND time_bucket = ? AND message_id = ?`
	selectBucketMessages = `SELECT message_id, author, system_message FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`
	selectRoomList       = `SELECT chat_rooms FROM users WHERE login = ?`
	selectCreated        = `SELECT creation_date FROM rooms WHERE room_name = ? LIMIT 1`
	selectCreator        = `SELECT creator_login FROM rooms WHERE room_name = ? LIMIT 1`
	selectMemberRows     = `SELECT creation_date, since, login, member FROM rooms WHERE room_name = ?`
	selectMarker         = `SELECT marker FROM read_markers WHERE login = ? AND conversation = ?`
)

// Contents are the contents of room's messages in the day bucket.
func (db *DB) Contents(ctx context.Context, room string, bucket int) ([]string, error) {
	iter := db.s.Query(selectBucketContents, room, bucket).WithContext(ctx).Iter()
	var (
		out     []string
		id      gocql.UUID
		content string
	)
	for iter.Scan(&id, &content) {
		if id != (gocql.UUID{}) {
			out = append(out, content)
		}
		id = gocql.UUID{}
	}
	return out, iter.Close()
}

// Content is the content of room's message id; chat.ErrNotFound if there
// is none.
func (db *DB) Content(ctx context.Context, room string, id chat.ID) (string, error) {
	var content string
	err := db.s.Query(selectContent, room, chat.BucketOf(id), gocql.UUID(id)).WithContext(ctx).Scan(&content)
	return content, notFound(err)
}

// Stored is a message as the unread check needs it.
type Stored struct {
	ID     chat.ID
	Author chat.UserRef
	System bool
}

// Messages are room's messages in the day bucket.
func (db *DB) Messages(ctx context.Context, room string, bucket int) ([]Stored, error) {
	iter := db.s.Query(selectBucketMessages, room, bucket).WithContext(ctx).Iter()
	var (
		out []Stored
		m   Stored
	)
	for iter.Scan((*gocql.UUID)(&m.ID), &m.Author, &m.System) {
		if m.ID != (chat.ID{}) { // not a partition's marks alone
			out = append(out, m)
		}
		m = Stored{}
	}
	return out, iter.Close()
}

// RoomList is the rooms login's row lists (users.chat_rooms).
func (db *DB) RoomList(ctx context.Context, login string) ([]string, error) {
	var list []string
	err := db.s.Query(selectRoomList, login).WithContext(ctx).Scan(&list)
	return list, notFound(err)
}

// Created is the creation date of the room named name.
func (db *DB) Created(ctx context.Context, name string) (time.Time, error) {
	var created time.Time
	err := db.s.Query(selectCreated, name).WithContext(ctx).Scan(&created)
	return created, notFound(err)
}

// Creator is the creator of the room named name; chat.ErrNotFound if
// there is no such room (schema/016_room_members.cql: a deleted room's
// header is null).
func (db *DB) Creator(ctx context.Context, name string) (string, error) {
	var creator string
	err := db.s.Query(selectCreator, name).WithContext(ctx).Scan(&creator)
	if err == nil && creator == "" {
		return "", chat.ErrNotFound
	}
	return creator, notFound(err)
}

// Participants are the logins of the room's members (the rows of its
// incarnation); chat.ErrNotFound if there is no such room.
func (db *DB) Participants(ctx context.Context, name string) (map[string]bool, error) {
	iter := db.s.Query(selectMemberRows, name).WithContext(ctx).Iter()
	var (
		created, since time.Time
		login          string
		member         *chat.UserRef
		out            = map[string]bool{}
		found          bool
	)
	for iter.Scan(&created, &since, &login, &member) {
		if created.IsZero() {
			continue
		}
		found = true
		if login != "" && member != nil && since.Equal(created) {
			out[login] = true
		}
		member = nil
	}
	if err := iter.Close(); err != nil {
		return nil, err
	}
	if !found {
		return nil, chat.ErrNotFound
	}
	return out, nil
}

// Marker is login's read marker in conversation; zero if none.
func (db *DB) Marker(ctx context.Context, login, conversation string) (chat.ID, error) {
	var marker chat.ID
	err := db.s.Query(selectMarker, login, conversation).WithContext(ctx).Scan((*gocql.UUID)(&marker))
	if err == gocql.ErrNotFound {
		return chat.ID{}, nil
	}
	return marker, err
}

// This file owns the list of room names by prefix: "All rooms" filtered by
// the start of a name reads one small partition of room_names (rooms by
// their first character, sorted), never the whole rooms table.

package store

import (
	"context"
	"github.com/killrchat/killrchat/chat"
	"strings"
	"unicode/utf8"
)

const (
	// Written USING TIMESTAMP = the room's creation, and deleted with the
	// same timestamp: a delete that runs late, after a room of the same
	// name was created again, removes the old row and never the new one.
	insertRoomName       = `INSERT INTO room_names (initial, room_name, display_name) VALUES (?, ?, ?) USING TIMESTAMP ?`
	deleteRoomName       = `DELETE FROM room_names USING TIMESTAMP ? WHERE initial = ? AND room_name = ?`
	selectRoomNamesFrom  = `SELECT room_name FROM room_names WHERE initial = ? AND room_name >= ? AND room_name < ? LIMIT ?`
	selectRoomNamesAfter = `SELECT room_name FROM room_names WHERE initial = ? AND room_name > ? AND room_name < ? LIMIT ?`
)

// initialOf is a room key's partition in room_names: its first character.
func initialOf(key string) string {
	_, size := utf8.DecodeRuneInString(key)
	return key[:size]
}

// recordRoomName lists r under its initial.
func (s *Store) recordRoomName(ctx context.Context, r chat.Room) error {
	return s.exec(ctx, "list room name "+r.Name, insertRoomName, initialOf(r.Name), r.Name, r.DisplayName, r.CreatedAt.UnixMicro())
}

// RecordRoomName lists an existing room by name (the backfill calls it
// for rooms created before room_names existed). It is idempotent.
func (s *Store) RecordRoomName(ctx context.Context, r chat.Room) error {
	return s.recordRoomName(ctx, r)
}

// RoomNamesWithPrefix returns up to n room keys that start with prefix
// (in any case), in order, after the key after ("" for the first page),
// and whether more follow. An empty prefix, or one no room name can
// start with, finds nothing.
func (s *Store) RoomNamesWithPrefix(ctx context.Context, prefix, after string, n int) ([]string, bool, error) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if prefix == "" || !validNamePrefix(prefix) {
		return nil, false, nil
	}
	stmt, start := selectRoomNamesFrom, prefix
	if after >= prefix {
		stmt, start = selectRoomNamesAfter, after
	}
	q, err := s.query(ctx, stmt, initialOf(prefix), start, prefix+"\U0010FFFF", n+1)
	if err != nil {
		return nil, false, err
	}
	iter := q.PageSize(0).Iter()
	var out []string
	var name string
	for iter.Scan(&name) {
		out = append(out, name)
	}
	if err := iter.Close(); err != nil {
		return nil, false, s.fail("list room names", err)
	}
	if len(out) > n {
		return out[:n], true, nil
	}
	return out, false, nil
}

// validNamePrefix reports whether some valid room name starts with p.
func validNamePrefix(p string) bool {
	return chat.ValidName(p + strings.Repeat("x", max(0, 3-len(p))))
}

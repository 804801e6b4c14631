// This file owns the one move of the rooms from chat_rooms, where a room's
// participants were one map cell, to rooms (schema/016_room_members.cql),
// where each is a row. It runs when an instance connects, until one run
// has finished (data_moves), and is safe to run while other instances of
// this version serve, and twice at once: a room already in rooms (moved,
// or made again under its name since) is left as it is; a room's rows are
// written before its header, and its header only IF no room has the name,
// so a half-moved room is no room, and a move that lost the name to a new
// room deletes the rows it wrote (their incarnation is not the new room's).

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	selectOldRooms = `SELECT room_name, display_name, creation_date, banner, creator, creator_login, participants,
		kind, admins, invite_uses, guard FROM chat_rooms`
	selectMoved    = `SELECT creator_login FROM rooms WHERE room_name = ? LIMIT 1`
	selectMove     = `SELECT done_at FROM data_moves WHERE name = ?`
	insertMove     = `INSERT INTO data_moves (name, done_at) VALUES (?, ?)`
	moveRoomHeader = `UPDATE rooms SET display_name = ?, creation_date = ?, banner = ?, creator = ?, creator_login = ?,
		kind = ?, admins = ?, invite_uses = ?, guard = ?, version = ?, members = ? WHERE room_name = ? IF creator_login = null`
	// roomsMove names the move in data_moves.
	roomsMove = "016_room_members"
)

// moveRooms copies every room of chat_rooms into rooms, once (see the
// file's comment).
func (s *Store) moveRooms(ctx context.Context, sess *gocql.Session) error {
	var done time.Time
	err := sess.Query(selectMove, roomsMove).WithContext(ctx).Scan(&done)
	if err == nil {
		return nil
	}
	if !errors.Is(err, gocql.ErrNotFound) {
		return fmt.Errorf("store: move rooms: %w", err)
	}
	start, moved := time.Now(), 0
	iter := sess.Query(selectOldRooms).WithContext(ctx).PageSize(100).Iter()
	var (
		r            chat.Room
		participants map[string]chat.UserRef
	)
	for iter.Scan(&r.Name, &r.DisplayName, &r.CreatedAt, &r.Banner, &r.Creator, &r.CreatorLogin, &participants,
		&r.Kind, &r.Admins, &r.InviteUses, (*gocql.UUID)(&r.Guard)) {
		if r.CreatorLogin != "" {
			ok, err := s.moveRoom(ctx, sess, r, participants)
			if err != nil {
				iter.Close()
				return fmt.Errorf("store: move room %q: %w", r.Name, err)
			}
			if ok {
				moved++
			}
		}
		r, participants = chat.Room{}, nil
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("store: move rooms: %w", err)
	}
	if err := sess.Query(insertMove, roomsMove, time.Now()).WithContext(ctx).Exec(); err != nil {
		return fmt.Errorf("store: move rooms: %w", err)
	}
	s.log.Info("store: rooms moved to one row per member", "moved", moved, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// moveRoom moves one room, unless rooms has one of its name; it tells
// whether it did.
func (s *Store) moveRoom(ctx context.Context, sess *gocql.Session, r chat.Room, participants map[string]chat.UserRef) (bool, error) {
	var there string
	err := sess.Query(selectMoved, r.Name).WithContext(ctx).Scan(&there)
	if err == nil && there != "" {
		return false, nil
	}
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return false, err
	}
	// The rows first, in batches of one partition: no LWT reads them
	// until the header below names their incarnation.
	b := sess.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
	flush := func() error {
		if len(b.Entries) == 0 {
			return nil
		}
		err := sess.ExecuteBatch(b)
		b = sess.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
		return err
	}
	for login, ref := range participants {
		b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: setMember, Args: []any{ref, r.Name, r.CreatedAt, login}, Idempotent: true})
		if len(b.Entries) == maxBatch {
			if err := flush(); err != nil {
				return false, err
			}
		}
	}
	if err := flush(); err != nil {
		return false, err
	}
	var admins, uses any = r.Admins, r.InviteUses
	if len(r.Admins) == 0 {
		admins = nil
	}
	if len(r.InviteUses) == 0 {
		uses = nil
	}
	applied, err := sess.Query(moveRoomHeader, r.DisplayName, r.CreatedAt, r.Banner, r.Creator, r.CreatorLogin,
		r.Kind, admins, uses, guardValue(r.Guard), gocql.TimeUUID(), len(participants), r.Name).WithContext(ctx).
		SerialConsistency(s.cfg.SerialConsistency).RetryPolicy(nil).MapScanCAS(map[string]any{})
	if err != nil || applied {
		return applied, err
	}
	// A room was made under the name meanwhile: the rows written are
	// another incarnation's.
	return false, sess.Query(deleteRoomMembers, r.Name, r.CreatedAt).WithContext(ctx).Exec()
}

// This file owns the handlers' reads through the row caches (package
// service/cache): a room with who asks' standing, its first
// participants, a person's row, a DM, and the home page's list of rooms.

package handlers

import (
	"context"
	"errors"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/views"
)

// Room reads the header of the room named name (in any case) through the
// cache, with whether it came from the cache; no one's standing is in it
// (see RoomFor).
func (s *Server) Room(ctx context.Context, name string) (chat.Room, bool, error) {
	return s.rows.RoomCached(ctx, name)
}

// RoomFor reads the room named name with login's standing, both through
// the caches; a cached "not a participant" is read again before anyone is
// refused (cache.Store.RoomFor).
func (s *Server) RoomFor(ctx context.Context, name, login string) (chat.RoomFor, error) {
	return s.rows.RoomFor(ctx, name, login)
}

// FirstPeople are r's first participants by login (at most
// views.ShownParticipants), through the cache.
func (s *Server) FirstPeople(ctx context.Context, r chat.Room) ([]chat.UserRef, error) {
	return s.rows.RoomMembers(ctx, r, "", views.ShownParticipants)
}

// user reads login's row through the cache.
func (s *Server) user(ctx context.Context, login string) (chat.User, error) {
	return s.rows.User(ctx, login)
}

// dm reads the DM at address through the cache (by its canonical address).
func (s *Server) dm(ctx context.Context, address string) (chat.DM, error) {
	return s.rows.DM(ctx, address)
}

// MyRooms is the rooms login takes part in, in the order of their list,
// each with login's standing: the list from the user cache, each header
// from the room cache (the rooms not cached read in one query), each
// standing from its cache (or one read of one row). A listed room that no
// longer exists (its delete raced a join), or that login does not take
// part in, is removed from the list on the way.
func (s *Server) MyRooms(ctx context.Context, login string) ([]chat.RoomFor, error) {
	u, err := s.user(ctx, login)
	if err != nil {
		return nil, err
	}
	known, err := s.rows.RoomsNamed(ctx, u.ChatRooms)
	if err != nil {
		return nil, err
	}
	list := make([]chat.Room, 0, len(known))
	for _, r := range known {
		list = append(list, r)
	}
	withMine, err := s.rows.Standings(ctx, list, login, func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	mine := make(map[string]chat.RoomFor, len(withMine))
	for _, r := range withMine {
		mine[r.Name] = r
	}
	rooms := make([]chat.RoomFor, 0, len(u.ChatRooms))
	for _, name := range u.ChatRooms {
		r, ok := mine[name]
		if !ok || !r.IsMember() {
			// Gone, or login is not in it (a cached standing may be
			// older than a join: ForgetRoom reads at SERIAL before it
			// drops).
			forgot, err := s.app.DropListedRoom(ctx, login, name, ok)
			if err != nil && !errors.Is(err, chat.ErrNotFound) {
				return nil, err
			}
			if forgot || !ok {
				continue
			}
			if r, err = s.db.RoomFor(ctx, name, login); err != nil || !r.IsMember() {
				continue
			}
		}
		rooms = append(rooms, r)
	}
	return rooms, nil
}

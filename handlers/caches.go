// This file owns the room and user caches of each instance (issue 13): a
// room's row (header, creator, participants) by name, a DM by address, and
// a person's row (their list of rooms, for the sidebar and the home page)
// by login, so that a post, a room page or the home page does not read
// them from Cassandra each time. The rules (DESIGN.md):
//   - an entry is dropped on every instance when its row changes, through
//     the hub (see invalidate.go), and the whole cache when the broker
//     reconnects, since invalidations may have been missed meanwhile;
//   - an entry lives at most the TTL (--cache-ttl, default 10 s), which
//     bounds what a partition with no event at all can leave stale;
//   - a cache never decides an LWT: joins, leaves, creations and deletes
//     read at SERIAL from Cassandra, as before;
//   - a cached "not a participant" is checked again in Cassandra before a
//     request is refused, so a join on another instance is seen at once.
package handlers

import (
	"context"
	"errors"
	"time"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/web"
)

// Defaults of the room and user caches (see Config).
const (
	defaultCacheTTL  = 10 * time.Second
	defaultCacheSize = 100_000
)

// caches are the server's room, DM and user caches.
type caches struct {
	rooms *web.RowCache[store.Room]
	dms   *web.RowCache[store.DM]
	users *web.RowCache[store.User]
}

func newCaches(ttl time.Duration, max int) *caches {
	return &caches{rooms: web.NewRowCache[store.Room](ttl, max), dms: web.NewRowCache[store.DM](ttl, max), users: web.NewRowCache[store.User](ttl, max)}
}

// apply drops what inv names. A DM's members never change (they are its
// address), so DMs are only dropped by a reset or their TTL.
func (cs *caches) apply(inv live.Invalidation) {
	if len(inv.Rooms) > 0 {
		cs.rooms.Forget(inv.Rooms...)
	}
	if len(inv.Users) > 0 {
		cs.users.Forget(inv.Users...)
	}
}

func (cs *caches) reset() {
	cs.rooms.Reset()
	cs.dms.Reset()
	cs.users.Reset()
}

// Room reads the room named name (in any case) through the cache, with
// whether it came from the cache.
func (s *Server) Room(ctx context.Context, name string) (store.Room, bool, error) {
	if !store.ValidName(name) {
		r, err := s.db.Room(ctx, name) // its ErrNotFound, without a cache entry
		return r, false, err
	}
	return s.caches.rooms.Load(store.NameKey(name), func() (store.Room, error) { return s.db.Room(ctx, name) })
}

// RoomFor reads the room named name for login through the cache; if the
// cached row says login is not a participant, it reads Cassandra again
// before anyone is refused: a join on another instance may be newer than
// the entry (its invalidation still on the way).
func (s *Server) RoomFor(ctx context.Context, name, login string) (store.Room, error) {
	r, cached, err := s.Room(ctx, name)
	if err != nil || !cached || r.HasParticipant(login) {
		return r, err
	}
	s.caches.rooms.Forget(store.NameKey(name))
	r, _, err = s.Room(ctx, name)
	return r, err
}

// user reads login's row through the cache.
func (s *Server) user(ctx context.Context, login string) (store.User, error) {
	u, _, err := s.caches.users.Load(login, func() (store.User, error) { return s.db.User(ctx, login) })
	return u, err
}

// dm reads the DM at address through the cache (by its canonical address).
func (s *Server) dm(ctx context.Context, address string) (store.DM, error) {
	canonical, _, err := store.ParseDMAddress(address)
	if err != nil {
		return s.db.DM(ctx, address) // its ErrNotFound
	}
	d, _, err := s.caches.dms.Load(canonical, func() (store.DM, error) { return s.db.DM(ctx, canonical) })
	return d, err
}

// MyRooms is the rooms login takes part in, in the order of their list:
// the list from the user cache, each room from the room cache, and the
// rooms not cached read in one query. A listed room that no longer exists
// (its delete raced a join) is removed from the list on the way.
func (s *Server) MyRooms(ctx context.Context, login string) ([]store.Room, error) {
	u, err := s.user(ctx, login)
	if err != nil {
		return nil, err
	}
	known := make(map[string]store.Room, len(u.ChatRooms))
	var missing []string
	for _, name := range u.ChatRooms {
		if r, ok := s.caches.rooms.Peek(name); ok {
			known[name] = r
		} else {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		version := s.caches.rooms.Snapshot()
		found, err := s.db.RoomsNamed(ctx, missing)
		if err != nil {
			return nil, err
		}
		for name, r := range found {
			known[name] = r
			s.caches.rooms.Put(name, r, version)
		}
	}
	rooms := make([]store.Room, 0, len(u.ChatRooms))
	for _, name := range u.ChatRooms {
		r, ok := known[name]
		if !ok || !r.HasParticipant(login) {
			// Gone, or login is not in it (a cached row may be older
			// than a join: ForgetRoom reads at SERIAL before it drops).
			forgot, err := s.db.ForgetRoom(ctx, login, name)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			if forgot || !ok {
				s.Invalidate(ctx, live.Invalidation{Users: []string{login}})
				continue
			}
		}
		rooms = append(rooms, r)
	}
	return rooms, nil
}

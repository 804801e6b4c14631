// This file owns the room and user caches of each instance (issue 13): a
// room's header by name, a person's standing in it by room and login, its
// first participants by name (issue 21: never all its members), a DM by
// address, and
// a person's row (their list of rooms, for the sidebar and the home page)
// by login, so that a post, a room page or the home page does not read
// them from Cassandra each time. The rules (docs/data-model.md, rule 12):
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

	"golang.org/x/sync/errgroup"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
)

// Defaults of the room and user caches (see Config).
const (
	defaultCacheTTL  = 10 * time.Second
	defaultCacheSize = 100_000
)

// caches are the server's room, DM and user caches. A room's header and a
// person's standing in it are cached apart (a room of 10,000 members is
// never read whole for a request): a standing is keyed by room and login
// and holds the version of the room's members it was read under, so any
// change of the members (a new version, its header dropped through the
// hub) makes every standing of the room read again.
type caches struct {
	rooms    *web.RowCache[chat.Room]
	standing *web.RowCache[underVersion[*chat.UserRef]]
	people   *web.RowCache[underVersion[[]chat.UserRef]]
	dms      *web.RowCache[chat.DM]
	users    *web.RowCache[chat.User]
}

// underVersion is what was read of a room's members (a person's entry,
// nil if not a participant; the first participants) under the members'
// version and the room's incarnation: read again under any other.
type underVersion[T any] struct {
	version chat.ID
	since   time.Time
	value   T
}

func newCaches(ttl time.Duration, max int) *caches {
	return &caches{rooms: web.NewRowCache[chat.Room](ttl, max),
		standing: web.NewRowCache[underVersion[*chat.UserRef]](ttl, max), people: web.NewRowCache[underVersion[[]chat.UserRef]](ttl, max),
		dms: web.NewRowCache[chat.DM](ttl, max), users: web.NewRowCache[chat.User](ttl, max)}
}

// apply drops what inv names. A DM's members never change (they are its
// address), so DMs are only dropped by a reset or their TTL.
func (cs *caches) apply(inv live.Invalidation) {
	if len(inv.Rooms) > 0 {
		cs.rooms.Forget(inv.Rooms...)
		cs.people.Forget(inv.Rooms...)
	}
	if len(inv.Users) > 0 {
		cs.users.Forget(inv.Users...)
	}
}

func (cs *caches) reset() {
	cs.rooms.Reset()
	cs.standing.Reset()
	cs.people.Reset()
	cs.dms.Reset()
	cs.users.Reset()
}

// Room reads the header of the room named name (in any case) through the
// cache, with whether it came from the cache; no one's standing is in it
// (see RoomFor).
func (s *Server) Room(ctx context.Context, name string) (chat.Room, bool, error) {
	if !chat.ValidName(name) {
		r, err := s.db.Room(ctx, name) // its ErrNotFound, without a cache entry
		return r, false, err
	}
	return s.caches.rooms.Load(chat.NameKey(name), func() (chat.Room, error) { return s.db.Room(ctx, name) })
}

// RoomFor reads the room named name with login's standing, both through
// the caches; if the cached standing says login is not a participant, it
// reads Cassandra again before anyone is refused: a join on another
// instance may be newer than the entry (its invalidation still on the
// way).
func (s *Server) RoomFor(ctx context.Context, name, login string) (chat.Room, error) {
	r, cached, err := s.Room(ctx, name)
	if err != nil {
		return r, err
	}
	entry, stCached, err := s.standingIn(ctx, r, login)
	if err != nil {
		return chat.Room{}, err
	}
	if entry != nil || (!cached && !stCached) {
		return r.WithStanding(login, entry), nil
	}
	s.caches.rooms.Forget(r.Name)
	s.caches.standing.Forget(standingKey(r.Name, login))
	if r, _, err = s.Room(ctx, name); err != nil {
		return r, err
	}
	if entry, _, err = s.standingIn(ctx, r, login); err != nil {
		return chat.Room{}, err
	}
	return r.WithStanding(login, entry), nil
}

// standingIn is login's entry in r (nil if not a participant) through the
// cache, with whether it came from the cache.
func (s *Server) standingIn(ctx context.Context, r chat.Room, login string) (*chat.UserRef, bool, error) {
	return loadUnder(s.caches.standing, standingKey(r.Name, login), r, func() (*chat.UserRef, error) {
		return s.db.Standing(ctx, r, login)
	})
}

func standingKey(room, login string) string { return room + "\x00" + login }

// FirstPeople are r's first participants by login (at most
// views.ShownParticipants), through the cache.
func (s *Server) FirstPeople(ctx context.Context, r chat.Room) ([]chat.UserRef, error) {
	first, _, err := loadUnder(s.caches.people, r.Name, r, func() ([]chat.UserRef, error) {
		return s.db.RoomMembers(ctx, r, "", views.ShownParticipants)
	})
	return first, err
}

// loadUnder reads key's value of r's members through cache: an entry read
// under another version of r's members, or another room of its name, is
// read again.
func loadUnder[T any](cache *web.RowCache[underVersion[T]], key string, r chat.Room, read func() (T, error)) (T, bool, error) {
	load := func() (underVersion[T], error) {
		v, err := read()
		return underVersion[T]{version: r.Version, since: r.CreatedAt, value: v}, err
	}
	got, cached, err := cache.Load(key, load)
	if err == nil && cached && (got.version != r.Version || !got.since.Equal(r.CreatedAt)) {
		cache.Forget(key)
		got, cached, err = cache.Load(key, load)
	}
	return got.value, cached, err
}

// standings is rooms, each with login's standing through the cache (read
// at most 8 at once), where mine says login's list names the room: every
// participant is listed (the list is written before the LWT that makes
// one, see store.JoinRoom), so the others need no read.
func (s *Server) standings(ctx context.Context, rooms []chat.Room, login string, mine func(string) bool) ([]chat.Room, error) {
	out := make([]chat.Room, len(rooms))
	var g errgroup.Group
	g.SetLimit(8)
	for i, r := range rooms {
		if !mine(r.Name) {
			out[i] = r.WithStanding(login, nil)
			continue
		}
		g.Go(func() error {
			entry, _, err := s.standingIn(ctx, r, login)
			out[i] = r.WithStanding(login, entry)
			return err
		})
	}
	return out, g.Wait()
}

// user reads login's row through the cache.
func (s *Server) user(ctx context.Context, login string) (chat.User, error) {
	u, _, err := s.caches.users.Load(login, func() (chat.User, error) { return s.db.User(ctx, login) })
	return u, err
}

// dm reads the DM at address through the cache (by its canonical address).
func (s *Server) dm(ctx context.Context, address string) (chat.DM, error) {
	canonical, _, err := chat.ParseDMAddress(address)
	if err != nil {
		return s.db.DM(ctx, address) // its ErrNotFound
	}
	d, _, err := s.caches.dms.Load(canonical, func() (chat.DM, error) { return s.db.DM(ctx, canonical) })
	return d, err
}

// MyRooms is the rooms login takes part in, in the order of their list,
// each with login's standing: the list from the user cache, each header
// from the room cache (the rooms not cached read in one query), each
// standing from its cache (or one read of one row). A listed room that no
// longer exists (its delete raced a join), or that login does not take
// part in, is removed from the list on the way.
func (s *Server) MyRooms(ctx context.Context, login string) ([]chat.Room, error) {
	u, err := s.user(ctx, login)
	if err != nil {
		return nil, err
	}
	known := make(map[string]chat.Room, len(u.ChatRooms))
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
	list := make([]chat.Room, 0, len(known))
	for _, r := range known {
		list = append(list, r)
	}
	withMine, err := s.standings(ctx, list, login, func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	for _, r := range withMine {
		known[r.Name] = r
	}
	rooms := make([]chat.Room, 0, len(u.ChatRooms))
	for _, name := range u.ChatRooms {
		r, ok := known[name]
		if !ok || !r.HasParticipant(login) {
			// Gone, or login is not in it (a cached standing may be
			// older than a join: ForgetRoom reads at SERIAL before it
			// drops).
			forgot, err := s.db.ForgetRoom(ctx, login, name)
			if err != nil && !errors.Is(err, chat.ErrNotFound) {
				return nil, err
			}
			if forgot || !ok {
				s.Invalidate(ctx, live.Invalidation{Users: []string{login}})
				continue
			}
			if r, err = s.db.RoomFor(ctx, name, login); err != nil || !r.HasParticipant(login) {
				continue
			}
		}
		rooms = append(rooms, r)
	}
	return rooms, nil
}

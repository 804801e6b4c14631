// This file owns the room and user caches of each instance (issue 13): a
// room's header by name, a person's standing in it by room and login, its
// first participants by name (issue 21: never all its members), a DM by
// address, and
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
	"sync"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/store"
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
	rooms    *web.RowCache[store.Room]
	standing *web.RowCache[standing]
	people   *web.RowCache[people]
	dms      *web.RowCache[store.DM]
	users    *web.RowCache[store.User]
}

// standing is a person's standing in a room as read: their entry (nil if
// not a participant) under the members' version and incarnation.
type standing struct {
	version gocql.UUID
	since   time.Time
	entry   *store.UserRef
}

// people are a room's first participants (the header's list) as read,
// under the members' version and incarnation.
type people struct {
	version gocql.UUID
	since   time.Time
	first   []store.UserRef
}

func newCaches(ttl time.Duration, max int) *caches {
	return &caches{rooms: web.NewRowCache[store.Room](ttl, max), standing: web.NewRowCache[standing](ttl, max),
		people: web.NewRowCache[people](ttl, max),
		dms:    web.NewRowCache[store.DM](ttl, max), users: web.NewRowCache[store.User](ttl, max)}
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
func (s *Server) Room(ctx context.Context, name string) (store.Room, bool, error) {
	if !store.ValidName(name) {
		r, err := s.db.Room(ctx, name) // its ErrNotFound, without a cache entry
		return r, false, err
	}
	return s.caches.rooms.Load(store.NameKey(name), func() (store.Room, error) { return s.db.Room(ctx, name) })
}

// RoomFor reads the room named name with login's standing, both through
// the caches; if the cached standing says login is not a participant, it
// reads Cassandra again before anyone is refused: a join on another
// instance may be newer than the entry (its invalidation still on the
// way).
func (s *Server) RoomFor(ctx context.Context, name, login string) (store.Room, error) {
	r, cached, err := s.Room(ctx, name)
	if err != nil {
		return r, err
	}
	st, stCached, err := s.standingIn(ctx, r, login)
	if err != nil {
		return store.Room{}, err
	}
	if st.entry != nil || (!cached && !stCached) {
		return r.WithStanding(login, st.entry), nil
	}
	s.caches.rooms.Forget(r.Name)
	s.caches.standing.Forget(standingKey(r.Name, login))
	if r, _, err = s.Room(ctx, name); err != nil {
		return r, err
	}
	if st, _, err = s.standingIn(ctx, r, login); err != nil {
		return store.Room{}, err
	}
	return r.WithStanding(login, st.entry), nil
}

// standingIn is login's standing in r through the cache: an entry read
// under another version of r's members, or another room of its name, is
// read again.
func (s *Server) standingIn(ctx context.Context, r store.Room, login string) (standing, bool, error) {
	key := standingKey(r.Name, login)
	read := func() (standing, error) {
		entry, err := s.db.Standing(ctx, r, login)
		return standing{version: r.Version, since: r.CreatedAt, entry: entry}, err
	}
	st, cached, err := s.caches.standing.Load(key, read)
	if err == nil && cached && (st.version != r.Version || !st.since.Equal(r.CreatedAt)) {
		s.caches.standing.Forget(key)
		st, cached, err = s.caches.standing.Load(key, read)
	}
	return st, cached, err
}

func standingKey(room, login string) string { return room + "\x00" + login }

// FirstPeople are r's first participants by login (at most
// views.ShownParticipants), through the cache: read again under another
// version of r's members.
func (s *Server) FirstPeople(ctx context.Context, r store.Room) ([]store.UserRef, error) {
	read := func() (people, error) {
		first, err := s.db.RoomMembers(ctx, r, "", views.ShownParticipants)
		return people{version: r.Version, since: r.CreatedAt, first: first}, err
	}
	p, cached, err := s.caches.people.Load(r.Name, read)
	if err == nil && cached && (p.version != r.Version || !p.since.Equal(r.CreatedAt)) {
		s.caches.people.Forget(r.Name)
		p, _, err = s.caches.people.Load(r.Name, read)
	}
	return p.first, err
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

// MyRooms is the rooms login takes part in, in the order of their list,
// each with login's standing: the list from the user cache, each header
// from the room cache (the rooms not cached read in one query), each
// standing from its cache (or one read of one row). A listed room that no
// longer exists (its delete raced a join), or that login does not take
// part in, is removed from the list on the way.
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
	var (
		g      errgroup.Group
		mu     sync.Mutex
		joined = make(map[string]store.Room, len(known))
	)
	g.SetLimit(8)
	for name, r := range known {
		g.Go(func() error {
			st, _, err := s.standingIn(ctx, r, login)
			mu.Lock()
			joined[name] = r.WithStanding(login, st.entry)
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	known = joined
	rooms := make([]store.Room, 0, len(u.ChatRooms))
	for _, name := range u.ChatRooms {
		r, ok := known[name]
		if !ok || !r.HasParticipant(login) {
			// Gone, or login is not in it (a cached standing may be
			// older than a join: ForgetRoom reads at SERIAL before it
			// drops).
			forgot, err := s.db.ForgetRoom(ctx, login, name)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
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

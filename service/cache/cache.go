// This file owns the decorator: what is cached, how it is read, and what
// drops it.

package cache

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/web"
)

// Defaults of the caches (see New).
const (
	DefaultTTL  = 10 * time.Second
	DefaultSize = 100_000
)

// Hub is where invalidations and broker reconnections are heard (live.Hub).
type Hub interface {
	Watch(onEnd func(live.StreamEnd), onReset func())
	WatchInvalidations(f func(live.Invalidation))
	// WatchEvents brings every conversation's events, which change
	// people's sidebars (see Sidebars).
	WatchEvents(heard func(live.Event), gap func(missing bool))
}

// Source is what the caches read from: the service's storage and the
// reads of a sidebar (store.Store).
type Source interface {
	service.Storage
	SidebarStorage
}

// Store is service.Storage with its room, DM and user reads cached. A
// room's header and a person's standing in it are cached apart (a room of
// 10,000 members is never read whole for a request): a standing is keyed
// by room and login and holds the version of the room's members it was
// read under, so any change of the members (a new version, its header
// dropped through the hub) makes every standing of the room read again.
type Store struct {
	service.Storage
	// first is how many participants a room's header shows: the one
	// page of RoomMembers that is cached.
	first    int
	rooms    *web.RowCache[chat.Room]
	standing *web.RowCache[underVersion[chat.Standing]]
	people   *web.RowCache[underVersion[[]chat.UserRef]]
	dms      *web.RowCache[chat.DM]
	users    *web.RowCache[chat.User]
	sidebars *Sidebars
}

// underVersion is what was read of a room's members (a person's
// standing; the first participants) under the members'
// version and the room's incarnation: read again under any other.
type underVersion[T any] struct {
	version chat.ID
	since   time.Time
	value   T
}

// New decorates src with caches of at most max entries each, trusted for
// ttl (negative: no cache), kept coherent through hub. first is the size
// of the first page of a room's participants that is cached.
func New(src Source, hub Hub, ttl time.Duration, max, first int) *Store {
	cs := &Store{Storage: src, first: first, rooms: web.NewRowCache[chat.Room](ttl, max),
		standing: web.NewRowCache[underVersion[chat.Standing]](ttl, max), people: web.NewRowCache[underVersion[[]chat.UserRef]](ttl, max),
		dms: web.NewRowCache[chat.DM](ttl, max), users: web.NewRowCache[chat.User](ttl, max),
		sidebars: NewSidebars(src, hub, ttl, min(max, DefaultSidebars))}
	hub.Watch(func(live.StreamEnd) {}, cs.reset)
	hub.WatchInvalidations(cs.apply)
	return cs
}

// Sidebar is login's sidebar state for a page of open (see
// Sidebars.State); rooms are their rooms, from their row.
func (cs *Store) Sidebar(ctx context.Context, login string, rooms []string, open string) (SidebarState, error) {
	return cs.sidebars.State(ctx, login, rooms, open)
}

// FreshSidebar is Sidebar read from storage whatever is kept (see
// Sidebars.Fresh).
func (cs *Store) FreshSidebar(ctx context.Context, login string, rooms []string, open string) (SidebarState, error) {
	return cs.sidebars.Fresh(ctx, login, rooms, open)
}

// Sidebars are the people's sidebar states kept.
func (cs *Store) Sidebars() *Sidebars { return cs.sidebars }

// ConversationChanged and PersonChanged drop the sidebar states a change
// of a conversation, or of a person's own rows, makes stale, here and
// now; the use cases call them before they answer (see Sidebars.Changed).
func (cs *Store) ConversationChanged(conversation string) { cs.sidebars.Changed(conversation) }

func (cs *Store) PersonChanged(login string) { cs.sidebars.PersonChanged(login) }

// apply drops what inv names. A DM's members never change (they are its
// address), so DMs are only dropped by a reset or their TTL.
func (cs *Store) apply(inv live.Invalidation) {
	if len(inv.Rooms) > 0 {
		cs.rooms.Forget(inv.Rooms...)
		cs.people.Forget(inv.Rooms...)
	}
	if len(inv.Users) > 0 {
		cs.users.Forget(inv.Users...)
	}
}

func (cs *Store) reset() {
	cs.rooms.Reset()
	cs.standing.Reset()
	cs.people.Reset()
	cs.dms.Reset()
	cs.users.Reset()
}

// Room reads the header of the room named name (in any case) through the
// cache; no one's standing is in it (see RoomFor).
func (cs *Store) Room(ctx context.Context, name string) (chat.Room, error) {
	r, _, err := cs.RoomCached(ctx, name)
	return r, err
}

// RoomCached is Room, with whether it came from the cache.
func (cs *Store) RoomCached(ctx context.Context, name string) (chat.Room, bool, error) {
	if !chat.ValidName(name) {
		r, err := cs.Storage.Room(ctx, name) // its ErrNotFound, without a cache entry
		return r, false, err
	}
	return cs.rooms.Load(chat.NameKey(name), func() (chat.Room, error) { return cs.Storage.Room(ctx, name) })
}

// RoomFor reads the room named name with login's standing, both through
// the caches; if the cached standing says login is not a participant, it
// reads Cassandra again before anyone is refused: a join on another
// instance may be newer than the entry (its invalidation still on the
// way).
func (cs *Store) RoomFor(ctx context.Context, name, login string) (chat.RoomFor, error) {
	r, cached, err := cs.RoomCached(ctx, name)
	if err != nil {
		return chat.RoomFor{}, err
	}
	st, stCached, err := cs.standingIn(ctx, r, login)
	if err != nil {
		return chat.RoomFor{}, err
	}
	if st.Member || (!cached && !stCached) {
		return r.For(st), nil
	}
	cs.rooms.Forget(r.Name)
	cs.standing.Forget(standingKey(r.Name, login))
	if r, _, err = cs.RoomCached(ctx, name); err != nil {
		return chat.RoomFor{}, err
	}
	if st, _, err = cs.standingIn(ctx, r, login); err != nil {
		return chat.RoomFor{}, err
	}
	return r.For(st), nil
}

// Standing is login's standing in r through the cache.
func (cs *Store) Standing(ctx context.Context, r chat.Room, login string) (chat.Standing, error) {
	st, _, err := cs.standingIn(ctx, r, login)
	return st, err
}

// standingIn is Standing, with whether it came from the cache.
func (cs *Store) standingIn(ctx context.Context, r chat.Room, login string) (chat.Standing, bool, error) {
	return loadUnder(cs.standing, standingKey(r.Name, login), r, func() (chat.Standing, error) {
		return cs.Storage.Standing(ctx, r, login)
	})
}

func standingKey(room, login string) string { return room + "\x00" + login }

// RoomMembers are r's participants by login after after, at most n: the
// first page of the header's size through the cache, the others from the
// storage.
func (cs *Store) RoomMembers(ctx context.Context, r chat.Room, after string, n int) ([]chat.UserRef, error) {
	if after != "" || n != cs.first {
		return cs.Storage.RoomMembers(ctx, r, after, n)
	}
	first, _, err := loadUnder(cs.people, r.Name, r, func() ([]chat.UserRef, error) {
		return cs.Storage.RoomMembers(ctx, r, "", n)
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

// Standings is rooms, each with login's standing through the cache (read
// at most 8 at once), where mine says login's list names the room: every
// participant is listed (the list is written before the LWT that makes
// one, see store.JoinRoom), so the others need no read.
func (cs *Store) Standings(ctx context.Context, rooms []chat.Room, login string, mine func(string) bool) ([]chat.RoomFor, error) {
	out := make([]chat.RoomFor, len(rooms))
	var g errgroup.Group
	g.SetLimit(8)
	for i, r := range rooms {
		if !mine(r.Name) {
			out[i] = r.For(chat.StandingOf(login, nil))
			continue
		}
		g.Go(func() error {
			st, _, err := cs.standingIn(ctx, r, login)
			out[i] = r.For(st)
			return err
		})
	}
	return out, g.Wait()
}

// User reads login's row through the cache.
func (cs *Store) User(ctx context.Context, login string) (chat.User, error) {
	u, _, err := cs.users.Load(login, func() (chat.User, error) { return cs.Storage.User(ctx, login) })
	return u, err
}

// DM reads the DM at address through the cache (by its canonical address).
func (cs *Store) DM(ctx context.Context, address string) (chat.DM, error) {
	canonical, _, err := chat.ParseDMAddress(address)
	if err != nil {
		return cs.Storage.DM(ctx, address) // its ErrNotFound
	}
	d, _, err := cs.dms.Load(canonical, func() (chat.DM, error) { return cs.Storage.DM(ctx, canonical) })
	return d, err
}

// RoomsNamed reads the rooms of names (their keys), those not cached in
// one query of the storage, and caches them; a name with no room is
// missing from the map.
func (cs *Store) RoomsNamed(ctx context.Context, names []string) (map[string]chat.Room, error) {
	known := make(map[string]chat.Room, len(names))
	var missing []string
	for _, name := range names {
		if r, ok := cs.rooms.Peek(name); ok {
			known[name] = r
		} else {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return known, nil
	}
	version := cs.rooms.Snapshot()
	found, err := cs.Storage.RoomsNamed(ctx, missing)
	if err != nil {
		return nil, err
	}
	for name, r := range found {
		known[name] = r
		cs.rooms.Put(name, r, version)
	}
	return known, nil
}

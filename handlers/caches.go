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
	"container/list"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/killrchat/killrchat/store"
)

// Defaults of the room and user caches (see Config).
const (
	defaultCacheTTL  = 10 * time.Second
	defaultCacheSize = 100_000
)

// rowCache is a bounded, least recently used map of rows read from
// Cassandra, each trusted for at most ttl. A read that was in flight when
// an invalidation came is not cached (version), so an invalidation can
// never be undone by the read it raced.
type rowCache[V any] struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	byKey   map[string]*list.Element
	lru     *list.List // front: most recently used
	version uint64     // bumped by every forget and reset
	now     func() time.Time
}

type cachedRow[V any] struct {
	key     string
	value   V
	expires time.Time
}

func newRowCache[V any](ttl time.Duration, max int) *rowCache[V] {
	return &rowCache[V]{ttl: ttl, max: max, byKey: map[string]*list.Element{}, lru: list.New(), now: time.Now}
}

func (c *rowCache[V]) enabled() bool { return c.ttl > 0 && c.max > 0 }

// load returns key's row from the cache, or reads it and caches it. Errors
// are not cached.
func (c *rowCache[V]) load(key string, read func() (V, error)) (v V, cached bool, err error) {
	if !c.enabled() {
		v, err = read()
		return v, false, err
	}
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		e := el.Value.(*cachedRow[V])
		if c.now().Before(e.expires) {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			return e.value, true, nil
		}
		c.removeLocked(el)
	}
	version := c.version
	c.mu.Unlock()
	if v, err = read(); err != nil {
		return v, false, err
	}
	c.put(key, v, version)
	return v, false, nil
}

// put caches v under key, unless an invalidation came since version was
// taken.
func (c *rowCache[V]) put(key string, v V, version uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		return
	}
	if el, ok := c.byKey[key]; ok {
		c.removeLocked(el)
	}
	c.byKey[key] = c.lru.PushFront(&cachedRow[V]{key: key, value: v, expires: c.now().Add(c.ttl)})
	for c.lru.Len() > c.max {
		c.removeLocked(c.lru.Back())
	}
}

// peek returns key's row if it is cached and fresh, without reading.
func (c *rowCache[V]) peek(key string) (V, bool) {
	var zero V
	if !c.enabled() {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*cachedRow[V])
	if !c.now().Before(e.expires) {
		c.removeLocked(el)
		return zero, false
	}
	c.lru.MoveToFront(el)
	return e.value, true
}

// snapshot is the cache's version, for a caller that reads several rows
// itself and puts them afterwards (see Server.myRooms).
func (c *rowCache[V]) snapshot() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// forget drops keys' entries.
func (c *rowCache[V]) forget(keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	for _, k := range keys {
		if el, ok := c.byKey[k]; ok {
			c.removeLocked(el)
		}
	}
}

// reset drops every entry.
func (c *rowCache[V]) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	c.byKey = map[string]*list.Element{}
	c.lru.Init()
}

func (c *rowCache[V]) removeLocked(el *list.Element) {
	delete(c.byKey, el.Value.(*cachedRow[V]).key)
	c.lru.Remove(el)
}

// caches are the server's room, DM and user caches.
type caches struct {
	rooms *rowCache[store.Room]
	dms   *rowCache[store.DM]
	users *rowCache[store.User]
}

func newCaches(ttl time.Duration, max int) *caches {
	return &caches{rooms: newRowCache[store.Room](ttl, max), dms: newRowCache[store.DM](ttl, max), users: newRowCache[store.User](ttl, max)}
}

// apply drops what inv names. A DM's members never change (they are its
// address), so DMs are only dropped by a reset or their TTL.
func (cs *caches) apply(inv Invalidation) {
	if len(inv.Rooms) > 0 {
		cs.rooms.forget(inv.Rooms...)
	}
	if len(inv.Users) > 0 {
		cs.users.forget(inv.Users...)
	}
}

func (cs *caches) reset() {
	cs.rooms.reset()
	cs.dms.reset()
	cs.users.reset()
}

// room reads the room named name (in any case) through the cache, with
// whether it came from the cache.
func (s *Server) room(ctx context.Context, name string) (store.Room, bool, error) {
	if !store.ValidName(name) {
		r, err := s.db.Room(ctx, name) // its ErrNotFound, without a cache entry
		return r, false, err
	}
	return s.caches.rooms.load(store.NameKey(name), func() (store.Room, error) { return s.db.Room(ctx, name) })
}

// roomFor reads the room named name for login through the cache; if the
// cached row says login is not a participant, it reads Cassandra again
// before anyone is refused: a join on another instance may be newer than
// the entry (its invalidation still on the way).
func (s *Server) roomFor(ctx context.Context, name, login string) (store.Room, error) {
	r, cached, err := s.room(ctx, name)
	if err != nil || !cached || r.HasParticipant(login) {
		return r, err
	}
	s.caches.rooms.forget(store.NameKey(name))
	r, _, err = s.room(ctx, name)
	return r, err
}

// user reads login's row through the cache.
func (s *Server) user(ctx context.Context, login string) (store.User, error) {
	u, _, err := s.caches.users.load(login, func() (store.User, error) { return s.db.User(ctx, login) })
	return u, err
}

// dm reads the DM at address through the cache (by its canonical address).
func (s *Server) dm(ctx context.Context, address string) (store.DM, error) {
	canonical, _, err := store.ParseDMAddress(address)
	if err != nil {
		return s.db.DM(ctx, address) // its ErrNotFound
	}
	d, _, err := s.caches.dms.load(canonical, func() (store.DM, error) { return s.db.DM(ctx, canonical) })
	return d, err
}

// myRooms is the rooms login takes part in, in the order of their list:
// the list from the user cache, each room from the room cache, and the
// rooms not cached read in one query. A listed room that no longer exists
// (its delete raced a join) is removed from the list on the way.
func (s *Server) myRooms(ctx context.Context, login string) ([]store.Room, error) {
	u, err := s.user(ctx, login)
	if err != nil {
		return nil, err
	}
	known := make(map[string]store.Room, len(u.ChatRooms))
	var missing []string
	for _, name := range u.ChatRooms {
		if r, ok := s.caches.rooms.peek(name); ok {
			known[name] = r
		} else {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		version := s.caches.rooms.snapshot()
		found, err := s.db.RoomsNamed(ctx, missing)
		if err != nil {
			return nil, err
		}
		for name, r := range found {
			known[name] = r
			s.caches.rooms.put(name, r, version)
		}
	}
	rooms := make([]store.Room, 0, len(u.ChatRooms))
	for _, name := range u.ChatRooms {
		r, ok := known[name]
		if !ok {
			if err := s.db.ForgetRoom(ctx, login, name); err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			s.invalidate(ctx, Invalidation{Users: []string{login}})
			continue
		}
		rooms = append(rooms, r)
	}
	return rooms, nil
}

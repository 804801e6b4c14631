// This file owns the row cache that the session store and the handlers'
// room, DM and user caches are made of: bounded, least recently used,
// each entry trusted for at most a TTL, and never undone by a read that
// raced an invalidation.

package web

import (
	"container/list"
	"sync"
	"time"
)

// RowCache is a bounded, least recently used map of rows read from
// Cassandra, each trusted for at most ttl. A read that was in flight when
// an invalidation came is not cached (version), so an invalidation can
// never be undone by the read it raced.
type RowCache[V any] struct {
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

func NewRowCache[V any](ttl time.Duration, max int) *RowCache[V] {
	return &RowCache[V]{ttl: ttl, max: max, byKey: map[string]*list.Element{}, lru: list.New(), now: time.Now}
}

func (c *RowCache[V]) enabled() bool { return c.ttl > 0 && c.max > 0 }

// load returns key's row from the cache, or reads it and caches it. Errors
// are not cached.
func (c *RowCache[V]) Load(key string, read func() (V, error)) (v V, cached bool, err error) {
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
	c.Put(key, v, version)
	return v, false, nil
}

// put caches v under key, unless an invalidation came since version was
// taken.
func (c *RowCache[V]) Put(key string, v V, version uint64) {
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
func (c *RowCache[V]) Peek(key string) (V, bool) {
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
func (c *RowCache[V]) Snapshot() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// forget drops keys' entries.
func (c *RowCache[V]) Forget(keys ...string) {
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
func (c *RowCache[V]) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	c.byKey = map[string]*list.Element{}
	c.lru.Init()
}

func (c *RowCache[V]) removeLocked(el *list.Element) {
	delete(c.byKey, el.Value.(*cachedRow[V]).key)
	c.lru.Remove(el)
}

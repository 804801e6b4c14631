// This file owns the in-process session cache: a verified session id's
// values, so a request does not read the sessions table. An entry is
// trusted for at most its TTL; logout, password changes and revocations
// remove it on every instance through the hub (the same stream-end event
// that closes the session's live streams), and the whole cache is dropped
// when the broker reconnects, since events may have been missed meanwhile.

package session

import (
	"container/list"
	"sync"
	"time"
)

// Defaults of the session cache.
const (
	DefaultCacheTTL  = 10 * time.Second
	DefaultCacheSize = 100_000
)

// sessionCache maps a session's digest (Digest of its id, as the hub
// events name sessions) to its values, least recently used first out.
type sessionCache struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	byKey   map[string]*list.Element
	lru     *list.List // front: most recently used
	now     func() time.Time
	enabled bool
}

type cachedSession struct {
	digest  string
	values  sessionValues
	expires time.Time
}

func newSessionCache(ttl time.Duration, max int) *sessionCache {
	return &sessionCache{ttl: ttl, max: max, byKey: map[string]*list.Element{}, lru: list.New(),
		now: time.Now, enabled: ttl > 0 && max > 0}
}

// get returns the values cached for digest, if fresh.
func (c *sessionCache) get(digest string) (sessionValues, bool) {
	if !c.enabled {
		return sessionValues{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[digest]
	if !ok {
		return sessionValues{}, false
	}
	e := el.Value.(*cachedSession)
	if !c.now().Before(e.expires) {
		c.removeLocked(el)
		return sessionValues{}, false
	}
	c.lru.MoveToFront(el)
	return e.values, true
}

// put caches values for digest for the cache's TTL.
func (c *sessionCache) put(digest string, v sessionValues) {
	if !c.enabled {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[digest]; ok {
		c.removeLocked(el)
	}
	c.byKey[digest] = c.lru.PushFront(&cachedSession{digest: digest, values: v, expires: c.now().Add(c.ttl)})
	for c.lru.Len() > c.max {
		c.removeLocked(c.lru.Back())
	}
}

// forget removes the sessions a stream end names: the listed digests, or
// every session of login but except when digests is nil. The room does not
// matter: leaving a room ends no session.
func (c *sessionCache) forget(login, room string, digests []string, except string) {
	if !c.enabled || room != "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if digests != nil {
		for _, d := range digests {
			if el, ok := c.byKey[d]; ok {
				c.removeLocked(el)
			}
		}
		return
	}
	// Every session of a login: rare (logout everywhere), so a scan.
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*cachedSession); e.values.Login == login && e.digest != except {
			c.removeLocked(el)
		}
		el = next
	}
}

// reset drops every entry.
func (c *sessionCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byKey = map[string]*list.Element{}
	c.lru.Init()
}

func (c *sessionCache) removeLocked(el *list.Element) {
	delete(c.byKey, el.Value.(*cachedSession).digest)
	c.lru.Remove(el)
}

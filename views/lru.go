// This file owns the least-recently-used cache by bytes that the kept
// parts of pages (shared.go, keptlist.go) are held in.

package views

import (
	"container/list"
	"sync"
)

// byteLRU keeps values by key up to max() bytes (as each was sized when
// put), the least recently used out first; a value over an eighth of the
// bound is not kept.
type byteLRU[K comparable, V any] struct {
	max   func() int64
	mu    sync.Mutex
	size  int64
	items map[K]*list.Element
	lru   list.List
}

type lruItem[K comparable, V any] struct {
	key  K
	val  V
	size int64
}

func newByteLRU[K comparable, V any](max func() int64) *byteLRU[K, V] {
	return &byteLRU[K, V]{max: max, items: map[K]*list.Element{}}
}

func (c *byteLRU[K, V]) get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*lruItem[K, V]).val, true
}

func (c *byteLRU[K, V]) put(key K, val V, size int64) {
	max := c.max()
	if size > max/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.size -= el.Value.(*lruItem[K, V]).size
		c.lru.Remove(el)
	}
	c.items[key] = c.lru.PushFront(&lruItem[K, V]{key: key, val: val, size: size})
	c.size += size
	for c.size > max {
		el := c.lru.Back()
		old := el.Value.(*lruItem[K, V])
		c.lru.Remove(el)
		delete(c.items, old.key)
		c.size -= old.size
	}
}

// stats is what the cache holds (for tests and figures).
func (c *byteLRU[K, V]) stats() (n int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.size
}

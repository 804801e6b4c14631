package web

import "time"

// SetClock makes c read time from now.
func SetClock[V any](c *RowCache[V], now func() time.Time) { c.now = now }

// Len is how many rows c holds.
func Len[V any](c *RowCache[V]) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

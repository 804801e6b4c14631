package session

import "time"

// SetCacheClock makes the session cache of s read time from now.
func SetCacheClock(s *Store, now func() time.Time) { s.cache.now = now }

// Cached reports whether the session of digest is in s's cache.
func Cached(s *Store, digest string) bool {
	_, ok := s.cache.get(digest)
	return ok
}

package limit

import "time"

// SetClock makes l read time from now, and start its sweeps there.
func SetClock(l *Keyed, now func() time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now, l.swept = now, now()
}

// Buckets is how many keys l holds a bucket for.
func Buckets(l *Keyed) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

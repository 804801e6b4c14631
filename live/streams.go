// This file owns the limits on live streams: how many one user and one
// client IP may hold open on this instance, how many replays run at once,
// and ending streams whose reader may no longer read them (left the room,
// logged out, lost the session).

package live

import (
	"context"
	"sync"
	"time"
)

// Defaults of the stream limits (see Config).
const (
	DefaultMaxStreamsPerUser = 20
	DefaultMaxStreamsPerIP   = 200
	DefaultMaxReplays        = 32
	DefaultReplayWait        = 2 * time.Second
	DefaultResumeWindow      = 5 * time.Second
)

// streamCounts counts the open streams of each user and each client IP.
// Over a limit the new stream is refused: the ones already open, the
// oldest first, are never the ones to go.
type streamCounts struct {
	mu      sync.Mutex
	perUser int
	perIP   int
	users   map[string]int
	ips     map[string]int
	// onChange, when set, hears a person's first stream open and their
	// last one close (presence.go); it is called outside the lock.
	onChange func(login string, online bool)
}

// logins are the people with an open stream.
func (c *streamCounts) logins() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.users))
	for l := range c.users {
		out = append(out, l)
	}
	return out
}

// has says whether login has an open stream.
func (c *streamCounts) has(login string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.users[login] > 0
}

func newStreamCounts(perUser, perIP int) *streamCounts {
	return &streamCounts{perUser: perUser, perIP: perIP, users: map[string]int{}, ips: map[string]int{}}
}

// open counts a new stream of login from ip and returns the function that
// uncounts it, or ok=false (nothing counted) when either is at its limit;
// byUser says which limit it was. A stream that replaces one being closed
// (the same browser's personal stream) is counted whatever the limits:
// the one it replaces is uncounted a moment later.
func (c *streamCounts) open(login, ip string, replacing bool) (closeStream func(), byUser, ok bool) {
	c.mu.Lock()
	if !replacing && c.users[login] >= c.perUser {
		c.mu.Unlock()
		return nil, true, false
	}
	if !replacing && c.ips[ip] >= c.perIP {
		c.mu.Unlock()
		return nil, false, false
	}
	c.users[login]++
	c.ips[ip]++
	first := c.users[login] == 1
	c.mu.Unlock()
	if first && c.onChange != nil {
		c.onChange(login, true)
	}
	var once sync.Once
	return func() { once.Do(func() { c.release(login, ip) }) }, false, true
}

func (c *streamCounts) release(login, ip string) {
	c.mu.Lock()
	// Delete at zero, so the maps hold only people and addresses with an
	// open stream.
	last := false
	if c.users[login]--; c.users[login] <= 0 {
		delete(c.users, login)
		last = true
	}
	if c.ips[ip]--; c.ips[ip] <= 0 {
		delete(c.ips, ip)
	}
	c.mu.Unlock()
	if last && c.onChange != nil {
		c.onChange(login, false)
	}
}

// replaySlots bounds how many replays run at once: each holds at most a
// page of messages, so this bounds the memory of all of them.
type replaySlots struct {
	slots chan struct{}
	wait  time.Duration
}

func newReplaySlots(n int, wait time.Duration) *replaySlots {
	return &replaySlots{slots: make(chan struct{}, n), wait: wait}
}

// take waits up to the slots' wait for a free one; it returns false if
// none came free or ctx ended first.
func (r *replaySlots) take(ctx context.Context) bool {
	select {
	case r.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(r.wait)
	defer t.Stop()
	select {
	case r.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (r *replaySlots) give() { <-r.slots }

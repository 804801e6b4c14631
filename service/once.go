// This file owns making a post idempotent per composer: a repeated send
// returns the first one's message.

package service

import (
	"context"
	"sync"
	"time"

	"github.com/killrchat/killrchat/chat"
)

var timeNow = time.Now

// postKey names one message a person meant to send: the composer's
// client_id, by this author, in this conversation (room is its id).
type postKey struct {
	author, room, clientID string
}

const (
	// recentPostTTL is how long a repeated send returns the first message.
	recentPostTTL = 10 * time.Minute
	// recentPostsMax bounds the memory of recent sends (~100 bytes each).
	recentPostsMax = 100_000
)

// recentPosts makes posting idempotent: a send that repeats an
// (author, room, client_id) seen in the last recentPostTTL returns the
// message the first one stored instead of storing another, and a repeat
// that arrives while the first is still being stored waits for it.
//
// It is per instance and in memory, bounded to max keys (the oldest go
// first): a retry that reaches another instance, or comes after a restart,
// stores the message again. The composer retries on the page it was sent
// from, which in practice talks to the same instance.
type recentPosts struct {
	mu    sync.Mutex
	byKey map[postKey]*recentPost
	order []*recentPost // oldest first, for expiry and the bound
	max   int
	ttl   time.Duration
	now   func() time.Time
}

type recentPost struct {
	key  postKey
	at   time.Time
	done chan struct{} // closed once msg and err are set
	msg  chat.Message
	err  error
}

func newRecentPosts(max int, ttl time.Duration, now func() time.Time) *recentPosts {
	return &recentPosts{byKey: map[postKey]*recentPost{}, max: max, ttl: ttl, now: now}
}

// post runs save once per key within the TTL and returns its message to
// every caller with that key. A failed save is forgotten, so a retry
// tries again. An empty client_id is never remembered.
func (rp *recentPosts) post(ctx context.Context, k postKey, save func(context.Context) (chat.Message, error)) (chat.Message, error) {
	if k.clientID == "" {
		return save(ctx)
	}
	for {
		rp.mu.Lock()
		now := rp.now()
		rp.expireLocked(now)
		e, ok := rp.byKey[k]
		if !ok {
			e = &recentPost{key: k, at: now, done: make(chan struct{})}
			rp.byKey[k] = e
			rp.order = append(rp.order, e)
			rp.mu.Unlock()
			e.msg, e.err = save(ctx)
			if e.err != nil {
				rp.forget(e)
			}
			close(e.done)
			return e.msg, e.err
		}
		rp.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return chat.Message{}, ctx.Err()
		}
		if e.err == nil {
			return e.msg, nil
		}
		// The first try failed and was forgotten: this one is a real retry.
	}
}

func (rp *recentPosts) forget(e *recentPost) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.byKey[e.key] == e {
		delete(rp.byKey, e.key)
	}
}

// expireLocked drops entries older than the TTL, and the oldest ones
// beyond the bound.
func (rp *recentPosts) expireLocked(now time.Time) {
	drop := 0
	for ; drop < len(rp.order); drop++ {
		e := rp.order[drop]
		if now.Sub(e.at) < rp.ttl && len(rp.order)-drop < rp.max {
			break
		}
		if rp.byKey[e.key] == e {
			delete(rp.byKey, e.key)
		}
	}
	if drop > 0 {
		rp.order = append([]*recentPost(nil), rp.order[drop:]...)
	}
}

// This file owns the cache of each conversation's notification levels,
// which Web Push reads for every turn of its workers (a busy room's posts
// read them once per turn, not once each; kept, not at all).

package cache

import (
	"context"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/web"
)

// Levels keeps conversations' levels, by login (the people who set one),
// as read calls them: trusted for at most a TTL, dropped on every
// instance through the hub when anyone's level in the conversation
// changes (live.Invalidation.Levels) or the room is dropped
// (Invalidation.Rooms: a deleted room's levels go with it), and all of
// them when the instance missed what the broker carried. A read that
// raced an invalidation is not kept (web.RowCache). The maps it returns
// are shared: callers only read them.
type Levels struct {
	read func(ctx context.Context, conversation string) (map[string]chat.Level, error)
	rows *web.RowCache[map[string]chat.Level]
}

// NewLevels caches read's answers, at most max conversations for ttl each
// (negative: no cache), kept coherent through hub.
func NewLevels(read func(ctx context.Context, conversation string) (map[string]chat.Level, error), hub Hub, ttl time.Duration, max int) *Levels {
	l := &Levels{read: read, rows: web.NewRowCache[map[string]chat.Level](ttl, max)}
	hub.Watch(func(live.StreamEnd) {}, l.rows.Reset)
	hub.WatchInvalidations(func(inv live.Invalidation) {
		if len(inv.Levels) > 0 {
			l.rows.Forget(inv.Levels...)
		}
		if len(inv.Rooms) > 0 {
			l.rows.Forget(inv.Rooms...)
		}
	})
	return l
}

// ConversationLevels are the levels people set in conversation, by login,
// through the cache.
func (l *Levels) ConversationLevels(ctx context.Context, conversation string) (map[string]chat.Level, error) {
	lv, _, err := l.rows.Load(conversation, func() (map[string]chat.Level, error) { return l.read(ctx, conversation) })
	return lv, err
}

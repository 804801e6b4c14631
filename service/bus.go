// This file owns what the use cases hand to the bus: live events rendered
// once, cache invalidations, fences and ends of streams. Each logs, not
// returns, a failure: the write it follows is stored, pages catch up by
// replay, and cache entries expire with their TTL.

package service

import (
	"context"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/live/fence"
)

// Publish hands ev to the hub, rendering it first if it is a message or a
// participant list without HTML.
func (s *Service) Publish(ctx context.Context, ev live.Event) {
	if ev.HTML == nil {
		html, err := s.Renderer.Event(ctx, ev)
		if err != nil {
			s.Log.Error("render room event", "room", ev.Conversation, "kind", ev.Kind, "err", err)
			return
		}
		ev.HTML = html
	}
	if err := s.Bus.Publish(ctx, ev); err != nil {
		s.Log.Warn("publish room event", "room", ev.Conversation, "kind", ev.Kind, "err", err)
	}
}

// EndStreams ends, on every instance, the open streams that end matches
// (see live.StreamEnd; its Sessions and Except are session ids here).
// Leave, removal, logout and revoking sessions call it after their write
// succeeded, so a stream opened meanwhile is refused by its own check
// instead. A stream on an instance that was not reached is refused when
// it reconnects.
func (s *Service) EndStreams(ctx context.Context, end live.StreamEnd) {
	if end.Login == "" || (end.Sessions != nil && len(end.Sessions) == 0) {
		return // nobody's streams, or none of the sessions
	}
	if end.Sessions != nil {
		digests := make([]string, len(end.Sessions))
		for i, id := range end.Sessions {
			digests[i] = s.SessionDigest(id)
		}
		end.Sessions = digests
	}
	end.Except = s.SessionDigest(end.Except)
	if err := s.Bus.EndStreams(ctx, end); err != nil {
		s.Log.Warn("end streams on other instances", "login", end.Login, "room", end.Room, "err", err)
	}
}

// Invalidate tells every instance's caches that inv's rows changed.
func (s *Service) Invalidate(ctx context.Context, inv live.Invalidation) {
	if err := s.Bus.Invalidate(ctx, inv); err != nil {
		s.Log.Warn("invalidate caches", "rooms", inv.Rooms, "users", inv.Users, "err", err)
	}
}

// fence drops inv's rows from every instance's caches, as Invalidate,
// and returns once no post of room that checked the room before can still
// be writing (live/fence): a change that takes the right to post away (a
// removal, a leave, a delete) calls it after its LWT and before it is
// acknowledged, so no message is stored after that while posts write
// with no read. An instance that did not answer has its posts check with
// a read.
func (s *Service) fence(ctx context.Context, room string, inv live.Invalidation) {
	if err := s.Bus.Fence(ctx, chat.NameKey(room), inv); err != nil {
		s.CountFenceTimeout()
		s.Log.Warn("fence", "room", room, "err", err)
	}
}

// EnterRoom is a pass on room's gate: a text post takes it before its
// check of the room and holds it to the end of its writes, so it writes
// with no read (live/fence). The caller leaves it.
func (s *Service) EnterRoom(room string) *fence.Pass {
	return s.Bus.Enter(chat.NameKey(room))
}

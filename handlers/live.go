// This file owns what the handlers hand to the live engine (package
// live): publishing a conversation's events rendered once, ending
// streams on every instance, and invalidating caches through the hub.

package handlers

import (
	"context"
	"encoding/json"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
)

// publish hands ev to the hub, logging (not returning) a failure: the
// write it reports is already stored, and pages catch up by replay.
func (s *Server) publish(ctx context.Context, ev live.Event) {
	var err error
	switch {
	case ev.HTML != nil:
	case ev.Kind == live.KindMessage:
		ev.HTML, err = s.RenderString(ctx, views.MessageItem(*ev.Message))
	case ev.Kind == live.KindParticipants:
		ev.HTML, err = s.RenderString(ctx, views.Participants(ev.Conversation, ev.Participants, max(ev.Total, len(ev.Participants)), true))
	}
	if err != nil {
		s.log.Error("render room event", "room", ev.Conversation, "kind", ev.Kind, "err", err)
		return
	}
	if err := s.hub.Publish(ctx, ev); err != nil {
		s.log.Warn("publish room event", "room", ev.Conversation, "kind", ev.Kind, "err", err)
	}
}

// EndStreams ends, on every instance, the open streams that end matches
// (see StreamEnd; its Sessions and Except are session ids here). Leave,
// logout and revoking sessions call it after their write succeeded, so a
// stream opened meanwhile is refused by its own check instead. A failure
// to reach the other instances is logged: the write it follows stands, and
// a stream there that keeps running is refused when it reconnects.
func (s *Server) EndStreams(ctx context.Context, end live.StreamEnd) {
	if end.Login == "" || (end.Sessions != nil && len(end.Sessions) == 0) {
		return // nobody's streams, or none of the sessions
	}
	if end.Sessions != nil {
		digests := make([]string, len(end.Sessions))
		for i, id := range end.Sessions {
			digests[i] = web.SessionDigest(id)
		}
		end.Sessions = digests
	}
	end.Except = web.SessionDigest(end.Except)
	if err := s.hub.EndStreams(ctx, end); err != nil {
		s.log.Warn("end streams on other instances", "login", end.Login, "room", end.Room, "err", err)
	}
}

// Invalidate tells every instance's caches that inv's rows changed,
// logging (not returning) a failure: the write is done, and the other
// instances' entries expire with their TTL.
func (s *Server) Invalidate(ctx context.Context, inv live.Invalidation) {
	if err := s.hub.Invalidate(ctx, inv); err != nil {
		s.log.Warn("invalidate caches", "rooms", inv.Rooms, "users", inv.Users, "err", err)
	}
}

// Fence drops inv's rows from every instance's caches, as Invalidate,
// and returns once no post of room that checked the room before can still
// be writing (live/fence): a change that takes the right to post away
// (a removal, a leave, a delete) calls it after its LWT and before it is
// acknowledged, so no message is stored after that, while posts write
// with no read. A failure is logged: an instance that did not answer has
// its posts check with a read.
func (s *Server) Fence(ctx context.Context, room string, inv live.Invalidation) {
	if err := s.hub.Fence(ctx, chat.NameKey(room), inv); err != nil {
		s.metrics.FenceTimeouts.Inc()
		s.log.Warn("fence", "room", room, "err", err)
	}
}

// reactionEvent is a reaction's live event, for app.js: who added (or
// took back) which reaction to which message, with the change's id, so
// that the page keeps the newest action of each person.
type reactionEvent struct {
	Message string `json:"message"`
	Emoji   string `json:"emoji"`
	Login   string `json:"login"`
	Name    string `json:"name"`
	Added   bool   `json:"added"`
	Change  string `json:"change"`
}

// ReactionJSON is ch as its live event's data.
func ReactionJSON(ch chat.Change) ([]byte, error) {
	name := ch.Reactor.Name()
	if name == "" {
		name = ch.Reactor.Login
	}
	return json.Marshal(reactionEvent{Message: ch.Message.String(), Emoji: ch.Emoji, Login: ch.Reactor.Login,
		Name: name, Added: ch.Added, Change: ch.ID.String()})
}

// renderChange renders a change of in as its live event carried it, for
// a replay.
func (s *Server) renderChange(ctx context.Context, in chat.Place, ch chat.Change) ([]byte, error) {
	switch ch.Kind {
	case chat.ChangeEdit:
		m := chat.Message{ID: ch.Message, Room: in.Conversation().ID, Content: ch.Content, Edited: ch.ID}
		return s.RenderString(s.Mentioning(ctx, in, m), views.EditedBody(m))
	case chat.ChangeDelete:
		return []byte(views.MessageID(chat.Message{ID: ch.Message})), nil
	}
	return ReactionJSON(ch)
}

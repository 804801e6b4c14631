// This file owns what the handlers hand to the live engine (package
// live): publishing a conversation's events rendered once, ending
// streams on every instance, and invalidating caches through the hub.

package handlers

import (
	"context"
	"encoding/json"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/push"
	"github.com/killrchat/killrchat/views"
)

// publish hands ev to the hub (see service.Publish).
func (s *Server) publish(ctx context.Context, ev live.Event) { s.app.Publish(ctx, ev) }

// EndStreams ends, on every instance, the open streams that end matches
// (see service.EndStreams).
func (s *Server) EndStreams(ctx context.Context, end live.StreamEnd) { s.app.EndStreams(ctx, end) }

// liveRenderer renders the service's live events with the components
// pages use (service.Renderer).
type liveRenderer struct{ s *Server }

// Message is m as the live streams show it, its mentions of conv's
// members marked.
func (r liveRenderer) Message(ctx context.Context, conv chat.Conversation, m chat.Message) ([]byte, error) {
	return r.s.RenderString(views.WithMembers(ctx, conv.Members), views.MessageItem(m))
}

// Event is the HTML of a message or participant list event with none.
func (r liveRenderer) Event(ctx context.Context, ev live.Event) ([]byte, error) {
	switch ev.Kind {
	case live.KindMessage:
		return r.s.RenderString(ctx, views.MessageItem(*ev.Message))
	case live.KindParticipants:
		if ev.Banner != nil {
			return r.s.RenderString(ctx, views.ParticipantsAndBanner(ev.Conversation, ev.Participants, max(ev.Total, len(ev.Participants)), *ev.Banner))
		}
		return r.s.RenderString(ctx, views.Participants(ev.Conversation, ev.Participants, max(ev.Total, len(ev.Participants)), true))
	}
	return nil, nil
}

// Edited is m's new body, its mentions of conv's members marked.
func (r liveRenderer) Edited(ctx context.Context, conv chat.Conversation, m chat.Message) ([]byte, error) {
	return r.s.RenderString(views.WithMembers(ctx, conv.Members), views.EditedBody(m))
}

// Deleted is the data of m's delete event: its element's id.
func (liveRenderer) Deleted(m chat.Message) []byte { return []byte(views.MessageID(m)) }

// Reaction is the data of ch's event.
func (liveRenderer) Reaction(ch chat.Change) ([]byte, error) { return ReactionJSON(ch) }

// pushPosted hands a posted message to the missed-message emails and to
// the Web Push sender, once it is set up (service.Pusher).
type pushPosted struct{ s *Server }

// Posted hands m, posted in in, to the sender.
func (p pushPosted) Posted(in chat.Place, conv chat.Conversation, m chat.Message) {
	p.s.mailPosted(conv, m)
	sender := p.s.Push()
	if sender == nil {
		return
	}
	name := m.Author.Name()
	if name == "" {
		name = m.Author.Login
	}
	pm := push.Message{Conversation: conv.ID, Author: m.Author.Login, AuthorName: name, ID: m.ID.String(),
		Text: live.NoticeText(&m), Mentioned: chat.Mentioned(m.Content, conv.Members), Members: conv.Members}
	if r, ok := chat.RoomOf(in); ok {
		pm.Title, pm.Path = "#"+r.DisplayName, RoomURL(r.Name)
	} else if d, ok := in.(chat.DM); ok {
		pm.Path = DMURL(d.Address)
		if len(conv.Members) > 2 {
			pm.Title = "a direct message"
		}
	}
	sender.Posted(pm)
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

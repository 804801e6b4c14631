// This file owns a reader's marker: how far they have read a
// conversation. It moves forward only (the store writes it with the id's
// own time), so two tabs never move it backwards.

package service

import (
	"context"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// MarkRead moves login's marker in conv up to id. It returns
// chat.ErrNotParticipant for anyone not in conv.
func (s *Service) MarkRead(ctx context.Context, login string, conv chat.Conversation, id chat.ID) error {
	if !conv.Has(login) {
		return chat.ErrNotParticipant
	}
	if err := s.Storage.MarkRead(ctx, login, conv.ID, id); err != nil {
		return err
	}
	s.readElsewhere(ctx, login)
	return nil
}

// readElsewhere tells login's other pages (other tabs, other browsers)
// that their marker (or level) moved: their sidebars, badges and titles
// read anew (issue 39: the new-messages pill in one tab left the others'
// badges), and so do the sidebar states every instance keeps of them.
func (s *Service) readElsewhere(ctx context.Context, login string) {
	s.personChanged(login)
	s.Publish(ctx, live.Event{Kind: live.KindUnread, Conversation: live.PersonalKey(login)})
}

// Levels keep a person's notification level of a conversation
// (store.Store).
type Levels interface {
	// SetLevel sets login's level in conversation; a chat.ValidationError
	// for a level that is none of chat.Levels.
	SetLevel(ctx context.Context, login, conversation string, level chat.Level) error
}

// SetLevel sets login's level in conversation, whose member the caller
// checked login is, and tells their pages and the sidebar caches.
func (s *Service) SetLevel(ctx context.Context, login, conversation string, level chat.Level) error {
	if err := s.Storage.SetLevel(ctx, login, conversation, level); err != nil {
		return err
	}
	// Push reads a conversation's levels through a cache on every instance.
	s.Invalidate(ctx, live.Invalidation{Levels: []string{conversation}})
	s.readElsewhere(ctx, login)
	return nil
}

// SidebarChanges are the caches of each person's sidebar state
// (service/cache's Store, given as Rows), told of a change by the use
// case that made it before it answers. The hub tells every instance too,
// but a message's event may leave after its post is acknowledged (the
// sequencer publishes a conversation's events in order), and a person's
// next page on this instance must show their own change.
type SidebarChanges interface {
	// ConversationChanged: its messages, heads or mentions changed.
	ConversationChanged(conversation string)
	// PersonChanged: login's markers, levels or DM list changed.
	PersonChanged(login string)
}

// conversationChanged and personChanged tell the sidebar caches, if Rows
// is one.
func (s *Service) conversationChanged(conversation string) {
	if c, ok := s.Rows.(SidebarChanges); ok {
		c.ConversationChanged(conversation)
	}
}

func (s *Service) personChanged(login string) {
	if c, ok := s.Rows.(SidebarChanges); ok {
		c.PersonChanged(login)
	}
}

// MarkShown marks conv read up to the newest of msgs, the messages a
// full page shows login, unless marker (their marker as it was) is there
// already. A failure only logs: the page is worth more than its marker.
func (s *Service) MarkShown(ctx context.Context, login string, conv chat.Conversation, msgs []chat.Message, marker chat.ID) {
	if len(msgs) == 0 {
		return
	}
	if newest := msgs[len(msgs)-1].ID; newest.After(marker) {
		if err := s.Storage.MarkRead(ctx, login, conv.ID, newest); err != nil {
			s.Log.Warn("mark read", "conversation", conv.ID, "err", err)
			return
		}
		s.readElsewhere(ctx, login)
	}
}

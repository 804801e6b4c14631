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
// that their marker moved: their sidebars, badges and titles read anew
// (issue 39: the new-messages pill in one tab left the others' badges).
func (s *Service) readElsewhere(ctx context.Context, login string) {
	s.Publish(ctx, live.Event{Kind: live.KindUnread, Conversation: live.PersonalKey(login)})
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

// This file owns catching up: marking one conversation, or every one a
// person takes part in, read up to its newest message (issue 39). The
// markers only move forward (written with the message's own time), so a
// tab that marks an older message meanwhile changes nothing.

package service

import (
	"context"
	"errors"

	"github.com/killrchat/killrchat/chat"
)

// CatchUp are the reads catching up needs besides Reads: the heads of
// conversations and a person's markers with their DM list (store.Store).
type CatchUp interface {
	// Heads are the newest message ids of those conversations that have
	// one.
	Heads(ctx context.Context, conversations []string) (map[string]chat.ID, error)
	// PersonalState is login's markers and DM list, newest first.
	PersonalState(ctx context.Context, login string) (chat.Markers, []chat.DMEntry, error)
}

// MarkConversationRead moves login's marker in conversation to its newest
// message. The caller has checked that login takes part in it; one with
// no message yet is left as it is.
func (s *Service) MarkConversationRead(ctx context.Context, login, conversation string) error {
	heads, err := s.Storage.Heads(ctx, []string{conversation})
	if err != nil {
		return err
	}
	head, ok := heads[conversation]
	if !ok {
		return nil
	}
	if err := s.Storage.MarkRead(ctx, login, conversation, head); err != nil {
		return err
	}
	s.readElsewhere(ctx, login)
	return nil
}

// MarkAllRead moves login's marker in each of their rooms and DMs to its
// newest message, writing only the markers that are behind. It returns
// how many it moved.
func (s *Service) MarkAllRead(ctx context.Context, login string) (int, error) {
	u, err := s.Rows.User(ctx, login)
	if err != nil {
		return 0, err
	}
	markers, dms, err := s.Storage.PersonalState(ctx, login)
	if err != nil {
		return 0, err
	}
	heads, err := s.Storage.Heads(ctx, u.ChatRooms)
	if err != nil {
		return 0, err
	}
	if heads == nil {
		heads = map[string]chat.ID{}
	}
	// A DM's head is its list entry's last message (as the sidebar
	// counts it).
	for _, e := range dms {
		heads[e.DM.Conversation().ID] = e.LastID
	}
	moved := 0
	var errs []error
	for conv, head := range heads {
		if head == (chat.ID{}) || !head.After(markers.Read[conv]) {
			continue
		}
		if err := s.Storage.MarkRead(ctx, login, conv, head); err != nil {
			errs = append(errs, err)
			continue
		}
		moved++
	}
	if moved > 0 || len(errs) > 0 {
		s.readElsewhere(ctx, login)
	}
	return moved, errors.Join(errs...)
}

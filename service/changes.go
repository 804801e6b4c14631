// This file owns the changes of a posted message: editing it, deleting
// it, reacting to it. Each takes the change's id from the sequencer, so
// that the change is published in id order with the conversation's
// messages on this instance, writes it, renders its event once, and
// publishes it; the search index follows off the request's path.

package service

import (
	"context"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// Moderates says whether login moderates in: an admin of a room (a DM has
// no moderator), read with login's standing (or every participant's); a
// room read with someone else's standing, or no one's, says no.
func Moderates(in chat.Place, login string) bool {
	switch r := in.(type) {
	case chat.RoomFor:
		return r.Login() == login && r.IsAdmin()
	case chat.RoomWithAll:
		return r.For(login).IsAdmin()
	}
	return false
}

// EditMessage replaces the text of m, editor's own message in in, and
// returns it as edited. It returns chat.ErrForbidden's error of
// chat.CanEdit for anyone but the author, a chat.ValidationError
// (ErrInvalid) for a text the domain refuses; nothing is published then.
func (s *Service) EditMessage(ctx context.Context, in chat.Place, m chat.Message, editor, content string) (chat.Message, error) {
	if err := chat.CanEdit(m, editor); err != nil {
		return chat.Message{}, err
	}
	var (
		edited chat.Message
		conv   chat.Conversation
	)
	err := s.change(ctx, in, live.KindEdit, m.ID, func(id chat.ID) ([]byte, error) {
		var err error
		if edited, err = s.Storage.EditMessage(ctx, in, m, content, id); err != nil {
			return nil, err
		}
		// Before the event, as for a post: a mention's badge is there
		// when the page that shows it asks. The members either text
		// mentions are looked up (a room's are not all read).
		if conv, err = s.Storage.Mentionable(ctx, in, m.Content, edited.Content); err != nil {
			s.Log.Warn("mentioned members", "conversation", in.Conversation().ID, "err", err)
		}
		if err := s.Storage.UpdateMentions(ctx, conv, m, edited); err != nil {
			s.Log.Warn("update mentions", "conversation", conv.ID, "err", err)
		}
		return s.Renderer.Edited(ctx, conv, edited)
	})
	if err != nil {
		return chat.Message{}, err
	}
	// The search index follows: the old text's terms out, the new one's
	// in (searches check the stored text anyway).
	s.Indexer.Reindex(conv, &m, &edited)
	return edited, nil
}

// DeleteMessage deletes m in in: by its author, or by a moderator of the
// room (Moderates). It returns the error of chat.CanDelete for anyone
// else.
func (s *Service) DeleteMessage(ctx context.Context, in chat.Place, m chat.Message, by string) error {
	if err := chat.CanDelete(m, by, Moderates(in, by)); err != nil {
		return err
	}
	err := s.change(ctx, in, live.KindDelete, m.ID, func(id chat.ID) ([]byte, error) {
		if err := s.Storage.DeleteMessage(ctx, in, m, id); err != nil {
			return nil, err
		}
		return s.Renderer.Deleted(m), nil
	})
	if err != nil {
		return err
	}
	if err := s.Storage.ForgetMessage(ctx, in, m); err != nil {
		s.Log.Warn("clean up a deleted message", "conversation", in.Conversation().ID, "err", err)
	}
	// Its mentions are gone after its event left: the badges and the
	// sidebar states of those it may have mentioned are read again.
	for _, login := range chat.MentionCandidates([]string{m.Content}) {
		if login != m.Author.Login {
			s.readElsewhere(ctx, login)
		}
	}
	s.Indexer.Reindex(in.Conversation(), &m, nil)
	return nil
}

// React adds who's reaction emoji to the message id of in, or takes it
// back (add false). It returns chat.ErrNotFound for an id outside the
// conversation's time (before it began, or more than an hour ahead) and,
// when adding, for an id that names no message; a chat.ValidationError
// for a reaction the domain refuses or beyond chat.MaxReactions. Taking
// back reads nothing.
func (s *Service) React(ctx context.Context, in chat.Place, id chat.ID, who chat.UserRef, emoji string, add bool) error {
	if conv := in.Conversation(); id.Time().Before(conv.Since) || id.Time().After(timeNow().Add(time.Hour)) {
		return chat.ErrNotFound
	}
	return s.change(ctx, in, live.KindReaction, id, func(change chat.ID) ([]byte, error) {
		ch, err := s.Storage.React(ctx, in, id, who, emoji, add, change)
		if err != nil {
			return nil, err
		}
		return s.Renderer.Reaction(ch)
	})
}

// change makes a change (kind) of the message target in in: it takes the
// change's id from the sequencer, runs apply with that id (which writes
// the change and returns its event's data), and publishes it. An error
// of apply is returned, and nothing is published.
func (s *Service) change(ctx context.Context, in chat.Place, kind string, target chat.ID, apply func(id chat.ID) ([]byte, error)) error {
	conv := in.Conversation().ID
	sl, err := s.Sequencer.Reserve(conv, func() (chat.Message, error) {
		return chat.Message{ID: s.Storage.NewChangeID(), Room: conv}, nil
	})
	if err != nil {
		return err
	}
	sl.Kind, sl.Target = kind, target
	html, err := apply(sl.Msg.ID)
	if err != nil {
		s.Sequencer.Finish(sl, false)
		return err
	}
	sl.HTML = html
	if kind != live.KindReaction {
		// Its event may leave later: the sidebars kept here hear of it
		// now (a reaction moves no head, count or mention).
		s.conversationChanged(conv)
	}
	s.Sequencer.Finish(sl, true)
	return nil
}

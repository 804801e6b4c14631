// This file owns posting: a person's text message, a system message about
// a join or a leave (Announce, Welcome), and the sequence every post goes
// through (draft in order, store, mentions and the DM list, render once,
// publish, index, push).

package service

import (
	"context"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/fence"
)

// TextPost is a message a person sends in a conversation.
type TextPost struct {
	In      chat.Place
	Author  chat.UserRef
	Content string
	// ClientID is the composer's one-time id: a repeat of it within a
	// while returns the first post's message (see PostOnce); "" for none.
	ClientID string
	// Pass, in a room, is the pass on its gate taken before the room was
	// checked (EnterRoom): the post then writes with no read. Nil for
	// none.
	Pass *fence.Pass
}

// PostText posts p once per client id, and returns its message with its
// HTML as the live streams got it (nil when this call did not store it,
// or rendering failed). A content the domain refuses is ErrInvalid's.
func (s *Service) PostText(ctx context.Context, p TextPost) (chat.Message, []byte, error) {
	// Inside the pass on a room's gate: a deactivation's fence waits
	// for this check and what follows (service/admin.go).
	if err := s.mayPost(ctx, p.In, p.Author.Login); err != nil {
		return chat.Message{}, nil, err
	}
	var html []byte
	m, err := s.PostOnce(ctx, p.Author.Login, p.In.Conversation().ID, p.ClientID, func(ctx context.Context) (chat.Message, error) {
		m, h, err := s.post(ctx, p.In, p.Pass, func() (chat.Message, error) { return s.Storage.DraftMessage(p.In, p.Author, p.Content) })
		html = h
		return m, err
	})
	return m, html, err
}

// PostOnce posts at most once per (author, conversation, client id)
// within a while, returning the first post's message to a repeat (see
// recentPosts); save posts.
func (s *Service) PostOnce(ctx context.Context, author, conv, clientID string, save func(context.Context) (chat.Message, error)) (chat.Message, error) {
	return s.recent.post(ctx, postKey{author: author, room: conv, clientID: clientID}, save)
}

// Post drafts a message (giving it its id, in order), stores it, and
// publishes it once every message drafted before it in the conversation
// is settled. It renders the message outside the sequencer's lock, once
// for all the live streams. The draft's error is returned as it is.
func (s *Service) Post(ctx context.Context, in chat.Place, draft func() (chat.Message, error)) (chat.Message, error) {
	m, _, err := s.post(ctx, in, nil, draft)
	return m, err
}

// post is Post, also returning the message rendered for the live
// streams (nil if rendering failed), which the poster's own answer
// reuses. A room post with a pass writes with no read.
func (s *Service) post(ctx context.Context, in chat.Place, pass *fence.Pass, draft func() (chat.Message, error)) (chat.Message, []byte, error) {
	sl, err := s.Sequencer.Reserve(in.Conversation().ID, draft)
	if err != nil {
		return chat.Message{}, nil, err
	}
	if err := s.save(ctx, in, pass, sl.Msg); err != nil {
		s.Sequencer.Finish(sl, false)
		return chat.Message{}, nil, err
	}
	// What other people's sidebars read when this message's event reaches
	// them is written before it is published: a DM's entry in its members'
	// lists (a first message makes the entry) and the mentions. A failure
	// there is logged, not returned: the message is stored, and the next
	// one sets the list right.
	conv, err := s.Storage.Mentionable(ctx, in, sl.Msg.Content)
	if err != nil {
		s.Log.Warn("mentioned members", "conversation", conv.ID, "err", err)
	}
	if d, ok := in.(chat.DM); ok {
		if err := s.Storage.RecordDMMessage(ctx, d, sl.Msg); err != nil {
			s.Log.Warn("dm list", "dm", conv.ID, "err", err)
		}
	}
	s.recordMentions(ctx, conv, sl.Msg)
	// Its event may leave later (after an earlier post's): the sidebars
	// kept here hear of it now.
	s.conversationChanged(in.Conversation().ID)
	sl.HTML, _ = s.Renderer.Message(ctx, conv, sl.Msg) // publish renders again (and logs) if this failed
	html := sl.HTML
	s.Sequencer.Finish(sl, true)
	// The index follows the post, off its path (see store.Indexer), and
	// so do the pushes to people away; only this instance, which stored
	// the message, hands it to push.
	s.Indexer.Index(conv, sl.Msg)
	if s.Push != nil && !sl.Msg.System {
		s.Push.Posted(in, conv, sl.Msg)
	}
	// A bot mentioned (or a DM's bot) gets the message at its outgoing
	// webhook: queued durably before the post answers.
	if s.Outgoing != nil && !sl.Msg.System {
		s.Outgoing.Posted(ctx, in, conv, sl.Msg, html)
	}
	return sl.Msg, html, nil
}

// recordMentions records m under every member it mentions. Only a
// person's message mentions anyone.
func (s *Service) recordMentions(ctx context.Context, conv chat.Conversation, m chat.Message) {
	// conv holds the members m mentions (see store.Mentionable).
	if m.System || len(chat.Mentioned(m.Content, conv.Members)) == 0 {
		return
	}
	if err := s.Storage.RecordMentions(ctx, conv, m); err != nil {
		s.Log.Warn("record mentions", "conversation", conv.ID, "err", err)
	}
}

// save stores m. In a room, with a pass: with no read if the pass is
// held when it leaves (every fence found it, live/fence), and else read
// again after the write, as without one (store.ConfirmPost).
func (s *Service) save(ctx context.Context, in chat.Place, pass *fence.Pass, m chat.Message) error {
	r, isRoom := chat.RoomOf(in)
	if !isRoom || pass == nil {
		if isRoom {
			s.CountRoomPost("read")
		}
		return s.Storage.SaveMessage(ctx, in, m)
	}
	err := s.Storage.SaveFencedMessage(ctx, in, m)
	held := pass.Leave()
	if err != nil || held {
		if err == nil {
			s.CountRoomPost("fenced")
		}
		return err
	}
	s.CountRoomPost("read")
	return s.Storage.ConfirmPost(ctx, r, m)
}

// Welcome announces a new member (joined, added, or in by a link); they
// start with everything before their arrival read, as in every chat:
// history is there to scroll, not to count.
func (s *Service) Welcome(ctx context.Context, r chat.RoomFor, who chat.UserRef, text string) {
	if m, ok := s.Announce(ctx, r, who, text); ok {
		if err := s.Storage.MarkRead(ctx, who.Login, r.Name, m.ID); err != nil {
			s.Log.Warn("mark read on arrival", "room", r.Name, "err", err)
			return
		}
		// After the message's event: a sidebar read in between is not
		// kept with the room unread.
		s.readElsewhere(ctx, who.Login)
	}
}

// Announce posts a system message about a join or leave in the room in
// (its header, or with someone's standing) and tells open pages the new
// participants; it returns the message, if stored. A failure here does
// not undo the join or leave, so it is logged, not returned.
func (s *Service) Announce(ctx context.Context, in chat.Place, about chat.UserRef, text string) (chat.Message, bool) {
	r, _ := chat.RoomOf(in)
	m, err := s.Post(ctx, in, func() (chat.Message, error) { return s.Storage.DraftSystemMessage(in, about, text), nil })
	if err != nil {
		s.Log.Warn("system message", "room", r.Name, "err", err)
	}
	s.publishParticipants(ctx, r)
	return m, err == nil
}

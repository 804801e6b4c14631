// This file owns Memory, the in-memory service.Messages of the fast tier:
// what store.Store keeps in Cassandra (messages, reactions, markers),
// kept in maps under one lock.

package storagetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// Memory keeps messages, their reactions and readers' markers in memory.
// It holds no rooms: SaveMessage stores a room's message without
// checking the room again (store.Store's read after the write), so a use
// case over Memory is tested for what it decides itself. Its zero value
// is not ready: use NewMemory.
type Memory struct {
	ids chat.IDGenerator
	now func() time.Time

	mu        sync.Mutex
	messages  map[string]map[chat.ID]chat.Message        // conversation -> id -> message
	reactions map[chat.ID]map[string]map[string]struct{} // message -> emoji -> logins
	markers   map[[2]string]chat.ID                      // (login, conversation) -> marker
	indexed   map[chat.ID]bool                           // messages in the search index
	searches  map[string][]string                        // login -> searches, oldest first
	dmLists   map[string]map[string]chat.DMEntry         // login -> DM address -> entry
	files     map[chat.ID]storedFile                     // attachments and their bytes
}

// NewMemory returns an empty Memory on the real clock.
func NewMemory() *Memory {
	return &Memory{now: time.Now, messages: map[string]map[chat.ID]chat.Message{},
		reactions: map[chat.ID]map[string]map[string]struct{}{}, markers: map[[2]string]chat.ID{},
		indexed: map[chat.ID]bool{}, searches: map[string][]string{}, dmLists: map[string]map[string]chat.DMEntry{},
		files: map[chat.ID]storedFile{}}
}

// DraftMessage checks content and gives the message its id.
func (s *Memory) DraftMessage(in chat.Place, author chat.UserRef, content string) (chat.Message, error) {
	conv := in.Conversation()
	if !conv.Has(author.Login) {
		return chat.Message{}, fmt.Errorf("memory: post in %q by %q: %w", conv.ID, author.Login, chat.ErrNotParticipant)
	}
	content, err := chat.CheckContent(content)
	if err != nil {
		return chat.Message{}, err
	}
	return chat.Message{ID: s.ids.Next(s.now()), Room: conv.ID, Author: author, Content: content}, nil
}

// DraftSystemMessage is a message of the server about someone.
func (s *Memory) DraftSystemMessage(in chat.Place, about chat.UserRef, text string) chat.Message {
	return chat.Message{ID: s.ids.Next(s.now()), Room: in.Conversation().ID, Author: about, Content: text, System: true}
}

// SaveMessage stores m (no room to check: see Memory).
func (s *Memory) SaveMessage(ctx context.Context, in chat.Place, m chat.Message) error {
	return s.SaveFencedMessage(ctx, in, m)
}

// SaveFencedMessage stores m.
func (s *Memory) SaveFencedMessage(_ context.Context, in chat.Place, m chat.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	conv := in.Conversation().ID
	if s.messages[conv] == nil {
		s.messages[conv] = map[chat.ID]chat.Message{}
	}
	m.Reactions = nil
	s.messages[conv][m.ID] = m
	return nil
}

// NewChangeID is the id of a change made now.
func (s *Memory) NewChangeID() chat.ID { return s.ids.NextMicro(s.now()) }

// Message is the message id of in; chat.ErrNotFound if there is none, or
// it is older than in.
func (s *Memory) Message(_ context.Context, in chat.Place, id chat.ID) (chat.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.message(in.Conversation(), id)
}

func (s *Memory) message(conv chat.Conversation, id chat.ID) (chat.Message, error) {
	m, ok := s.messages[conv.ID][id]
	if !ok || !id.After(chat.MinIDAt(conv.Since.Add(-time.Millisecond))) {
		return chat.Message{}, fmt.Errorf("memory: message %s of %q: %w", id, conv.ID, chat.ErrNotFound)
	}
	return m, nil
}

// EditMessage replaces m's content as the change change.
func (s *Memory) EditMessage(_ context.Context, in chat.Place, m chat.Message, content string, change chat.ID) (chat.Message, error) {
	content, err := chat.CheckContent(content)
	if err != nil && !(m.Attachment != nil && strings.TrimSpace(content) == "") {
		return chat.Message{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	conv := in.Conversation().ID
	stored, ok := s.messages[conv][m.ID]
	if ok && !stored.Edited.After(change) {
		// As USING TIMESTAMP does: of two edits, the later change wins.
		stored.Content, stored.Edited = content, change
		s.messages[conv][m.ID] = stored
	}
	m.Content, m.Edited = content, change
	return m, nil
}

// DeleteMessage deletes m and its reactions.
func (s *Memory) DeleteMessage(_ context.Context, in chat.Place, m chat.Message, _ chat.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.messages[in.Conversation().ID], m.ID)
	delete(s.reactions, m.ID)
	return nil
}

// React adds or takes back who's reaction emoji to the message id.
func (s *Memory) React(_ context.Context, in chat.Place, id chat.ID, who chat.UserRef, emoji string, add bool, change chat.ID) (chat.Change, error) {
	emoji, err := chat.CheckReaction(emoji)
	if err != nil {
		return chat.Change{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	groups := s.reactions[id]
	if add {
		if _, err := s.message(in.Conversation(), id); err != nil {
			return chat.Change{}, err
		}
		if _, ok := groups[emoji]; !ok && len(groups) >= chat.MaxReactions {
			return chat.Change{}, chat.ValidationError{"emoji": fmt.Sprintf("A message has at most %d different reactions.", chat.MaxReactions)}
		}
		if groups == nil {
			groups = map[string]map[string]struct{}{}
			s.reactions[id] = groups
		}
		if groups[emoji] == nil {
			groups[emoji] = map[string]struct{}{}
		}
		groups[emoji][who.Login] = struct{}{}
	} else if people := groups[emoji]; people != nil {
		delete(people, who.Login)
		if len(people) == 0 {
			delete(groups, emoji)
		}
	}
	return chat.Change{ID: change, Message: id, Kind: chat.ChangeReaction, Emoji: emoji, Reactor: who, Added: add}, nil
}

// MarkRead moves login's marker in conversation up to upTo; an older
// upTo changes nothing.
func (s *Memory) MarkRead(_ context.Context, login, conversation string, upTo chat.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{login, conversation}
	if upTo.Time().UnixMicro() >= s.markers[k].Time().UnixMicro() {
		s.markers[k] = upTo
	}
	return nil
}

// Marker is login's marker in conversation, zero if none.
func (s *Memory) Marker(_ context.Context, login, conversation string) (chat.ID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.markers[[2]string{login, conversation}], nil
}

// This file owns Memory's search index, recent searches and DM lists:
// what store.Store keeps in the index tables, recent_searches and each
// person's DM entries.

package storagetest

import (
	"context"
	"slices"
	"strings"

	"github.com/killrchat/killrchat/chat"
)

// recentSearches is how many searches a person sees again (as
// store.RecentSearches).
const recentSearches = 10

// IndexMessage puts m in the search index; a system message is not
// indexed.
func (s *Memory) IndexMessage(_ context.Context, m chat.Message) error {
	if m.System {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.indexed[m.ID] = true
	return nil
}

// Search returns up to n indexed messages of convs that match q as they
// are stored now, newest first, older than before (the newest if zero),
// and whether more exist.
func (s *Memory) Search(_ context.Context, convs []chat.Conversation, q chat.SearchQuery, before chat.ID, n int) ([]chat.Message, bool, chat.SearchStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []chat.Message
	for _, conv := range convs {
		for id, m := range s.messages[conv.ID] {
			if !s.indexed[id] || (before != chat.ID{} && !before.After(id)) || !q.Matches(m) {
				continue
			}
			if _, err := s.message(conv, id); err != nil {
				continue // of an earlier conversation of the same name
			}
			m.Reactions = nil
			found = append(found, m)
		}
	}
	slices.SortFunc(found, func(a, b chat.Message) int { return b.ID.Compare(a.ID) })
	more := len(found) > n
	if more {
		found = found[:n]
	}
	return found, more, chat.SearchStats{Statements: 1, Checked: len(found)}, nil
}

// RecordSearch remembers that login searched for query.
func (s *Memory) RecordSearch(_ context.Context, login, query string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.searches[login] = append(s.searches[login], query)
	return nil
}

// RecentSearches are login's last different searches, newest first.
func (s *Memory) RecentSearches(_ context.Context, login string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	all := s.searches[login]
	for i := len(all) - 1; i >= 0 && len(out) < recentSearches; i-- {
		if !slices.Contains(out, all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// RecordDMMessage puts m as the last message of d in every member's
// list, unless a newer one is there.
func (s *Memory) RecordDMMessage(_ context.Context, d chat.DM, m chat.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, member := range d.Members {
		list := s.dmLists[member.Login]
		if list == nil {
			list = map[string]chat.DMEntry{}
			s.dmLists[member.Login] = list
		}
		if e, ok := list[d.Address]; ok && e.LastID.After(m.ID) {
			continue
		}
		list[d.Address] = chat.DMEntry{DM: d, LastID: m.ID, LastAuthor: m.Author, LastExcerpt: m.Content}
	}
	return nil
}

// DMList is login's DMs, most recent activity first.
func (s *Memory) DMList(_ context.Context, login string) ([]chat.DMEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []chat.DMEntry
	for _, e := range s.dmLists[login] {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b chat.DMEntry) int {
		if c := b.LastID.Compare(a.LastID); c != 0 {
			return c
		}
		return strings.Compare(a.DM.Address, b.DM.Address)
	})
	return out, nil
}

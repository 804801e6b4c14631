// This file owns searching: what a person may search (the rooms they
// take part in and their DMs, nothing else), the search itself, and the
// searches each person sees again.

package service

import (
	"context"
	"errors"
	"sync"

	"github.com/killrchat/killrchat/chat"
)

// Searches are the search index and the searches people made, as stored
// (store.Store): the messages of some conversations that match a query,
// a person's DMs (what they may search besides their rooms), and their
// recent searches.
type Searches interface {
	// Search is up to n messages of convs that match q, newest first,
	// older than before (the newest if zero), and whether more exist;
	// every result is the message as it is now.
	Search(ctx context.Context, convs []chat.Conversation, q chat.SearchQuery, before chat.ID, n int) ([]chat.Message, bool, chat.SearchStats, error)
	// DMList is login's DMs, newest activity first.
	DMList(ctx context.Context, login string) ([]chat.DMEntry, error)
	// RecordSearch remembers that login searched for query;
	// RecentSearches are login's last different searches, newest first.
	RecordSearch(ctx context.Context, login, query string) error
	RecentSearches(ctx context.Context, login string) ([]string, error)
}

// RoomLister lists the rooms a person takes part in now, each with their
// standing, through the caches (the HTTP core's sidebar list, which also
// drops from a person's list a room gone or left).
type RoomLister interface {
	MyRooms(ctx context.Context, login string) ([]chat.RoomFor, error)
}

// SearchRequest is one page of a person's search.
type SearchRequest struct {
	Login string
	Query chat.SearchQuery
	// Text is the query as it is remembered (what was typed, or its
	// beginning when too long).
	Text string
	// Before is the id of the last result of the page before (zero for
	// the first page); N is a page's size.
	Before chat.ID
	N      int
	// Remember records Text among the person's recent searches once the
	// search succeeded; Recent also returns those.
	Remember, Recent bool
}

// SearchHit is a message found, with the room or DM it is in.
type SearchHit struct {
	Message chat.Message
	Place   chat.Place
}

// SearchPage is a page of results.
type SearchPage struct {
	Hits []SearchHit
	// More is true when more results come after the last hit.
	More bool
	// Recent are the person's recent searches, when asked for.
	Recent []string
}

// Search runs r.Query over the conversations r.Login takes part in now
// (narrowed by its in:), and returns a page of what matches. A failure
// to remember the search, or to read the recent ones, is logged, not
// returned: the results stand.
func (s *Service) Search(ctx context.Context, r SearchRequest) (SearchPage, error) {
	convs, places, err := s.searchScope(ctx, r.Login)
	if err != nil {
		return SearchPage{}, err
	}
	found, more, stats, err := s.Storage.Search(ctx, narrowTo(convs, r.Query.In), r.Query, r.Before, r.N)
	s.CountSearchStatements(stats.Statements)
	if err != nil {
		return SearchPage{}, err
	}
	page := SearchPage{More: more}
	for _, m := range found {
		page.Hits = append(page.Hits, SearchHit{Message: m, Place: places[m.Room]})
	}
	if r.Remember {
		if err := s.Storage.RecordSearch(ctx, r.Login, r.Text); err != nil {
			s.Log.Warn("search: remember", "login", r.Login, "err", err)
		}
	}
	if r.Recent {
		page.Recent = s.RecentSearches(ctx, r.Login)
	}
	return page, nil
}

// RecentSearches are login's recent searches, newest first; nil (and
// logged) if they cannot be read.
func (s *Service) RecentSearches(ctx context.Context, login string) []string {
	recent, err := s.Storage.RecentSearches(ctx, login)
	if err != nil {
		s.Log.Warn("search: recent searches", "login", login, "err", err)
	}
	return recent
}

// searchScope is what login may search now: the rooms they take part in
// and their DMs, as conversations, with each one's place. Rooms they
// left or were never in, and DMs they are not in, are not in it, so they
// are never read, not even to count.
func (s *Service) searchScope(ctx context.Context, login string) ([]chat.Conversation, map[string]chat.Place, error) {
	var (
		rooms      []chat.RoomFor
		dms        []chat.DMEntry
		rerr, derr error
		wg         sync.WaitGroup
		convs      []chat.Conversation
		places     = map[string]chat.Place{}
	)
	wg.Add(2)
	go func() { defer wg.Done(); rooms, rerr = s.Rooms.MyRooms(ctx, login) }()
	go func() { defer wg.Done(); dms, derr = s.Storage.DMList(ctx, login) }()
	wg.Wait()
	if err := errors.Join(rerr, derr); err != nil {
		return nil, nil, err
	}
	for _, r := range rooms {
		if r.IsMember() {
			convs = append(convs, r.Conversation())
			places[r.Name] = r.Room
		}
	}
	for _, e := range dms {
		conv := e.DM.Conversation()
		if conv.Has(login) {
			convs = append(convs, conv)
			places[conv.ID] = e.DM
		}
	}
	return convs, places, nil
}

// narrowTo keeps the conversations in: names, "#room" or "@login" (every
// DM of the viewer's with that person).
func narrowTo(convs []chat.Conversation, in string) []chat.Conversation {
	if in == "" {
		return convs
	}
	var out []chat.Conversation
	for _, c := range convs {
		switch {
		case in[0] == '#' && c.ID == in[1:],
			in[0] == '@' && chat.IsDM(c.ID) && c.Has(in[1:]):
			out = append(out, c)
		}
	}
	return out
}

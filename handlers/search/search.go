package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web/limit"
)

const (
	// searchPerPage is how many results a page of search shows.
	searchPerPage = 20
)

// Index is what search reads and remembers (store.Store): the messages
// that match, a person's DMs, their recent searches.
type Index interface {
	Search(ctx context.Context, convs []chat.Conversation, q chat.SearchQuery, before chat.ID, n int) ([]chat.Message, bool, chat.SearchStats, error)
	DMList(ctx context.Context, login string) ([]chat.DMEntry, error)
	RecordSearch(ctx context.Context, login, query string) error
	RecentSearches(ctx context.Context, login string) ([]string, error)
}

// Core is what search uses of the HTTP core (handlers.Server): a
// person's rooms, the signing of cursors, the rendering of pages.
type Core interface {
	MyRooms(ctx context.Context, login string) ([]chat.RoomFor, error)
	Sign(name string, value any) (string, error)
	Unsign(name, token string, dst any) error
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
	RenderRaw(c echo.Context, status int, comp templ.Component) error
}

// Deps are what search is built from.
type Deps struct {
	Core  Core
	Index Index
	// Rate is the per-person limit on searches; Statements observes
	// each search's statements (web/metrics).
	Rate       *limit.Keyed
	Statements prometheus.Observer
	Log        *slog.Logger
}

// routes are search's routes.
type routes struct{ Deps }

// Register lists search's routes.
func Register(r handlers.Routes, d Deps) {
	s := routes{d}
	r.Auth.GET("/search", s.search)
}

// searchScope is what login may search now: the rooms they take part in
// and their DMs, as conversations, with each one's place and link. Rooms
// they left or were never in, and DMs they are not in, are not in it, so
// they are never read, not even to count.
func (s routes) searchScope(ctx context.Context, login string) ([]chat.Conversation, map[string]string, error) {
	var (
		rooms       []chat.RoomFor
		dms         []chat.DMEntry
		rerr, derr  error
		wg          sync.WaitGroup
		convs       []chat.Conversation
		placeOfConv = map[string]string{}
	)
	wg.Add(2)
	go func() { defer wg.Done(); rooms, rerr = s.Core.MyRooms(ctx, login) }()
	go func() { defer wg.Done(); dms, derr = s.Index.DMList(ctx, login) }()
	wg.Wait()
	if err := errors.Join(rerr, derr); err != nil {
		return nil, nil, err
	}
	for _, r := range rooms {
		if r.IsMember() {
			convs = append(convs, r.Conversation())
			placeOfConv[r.Name] = "#" + r.DisplayName
		}
	}
	for _, e := range dms {
		conv := e.DM.Conversation()
		if conv.Has(login) {
			convs = append(convs, conv)
			placeOfConv[conv.ID] = handlers.DMTitle(e.DM, login)
		}
	}
	return convs, placeOfConv, nil
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

// searchCursor signs the id of the last result shown: the next page's
// ?after=, opaque to the browser.
func (s routes) searchCursor(id chat.ID) (string, error) {
	return s.Core.Sign("search", id.String())
}

func (s routes) searchBefore(token string) (chat.ID, error) {
	if token == "" {
		return chat.ID{}, nil
	}
	var id string
	if err := s.Core.Unsign("search", token, &id); err != nil {
		return chat.ID{}, echo.NewHTTPError(http.StatusBadRequest, "This link to more results is broken or has expired. Search again.")
	}
	return chat.ParseMessageID(id)
}

// search answers GET /search?q=: the page with its form, the viewer's
// recent searches and the results, 20 at a time (?after= for more). With
// ?live=1 from htmx (the box as one types) it answers the results alone
// and does not remember the search. Each person has Limits.Searches (429
// beyond), and a query is bounded (chat.MaxSearchQuery,
// chat.MaxSearchTerms: the rest is ignored with a notice).
func (s routes) search(c echo.Context) error {
	me := handlers.MustUser(c)
	ctx := c.Request().Context()
	raw := strings.TrimSpace(c.QueryParam("q"))
	live := c.QueryParam("live") != "" && handlers.IsHTMX(c)
	v := views.SearchView{Query: raw}
	status := http.StatusOK
	if raw != "" {
		if ok, wait := s.Rate.Allow(me.Login); !ok {
			return limit.TooMany(c, wait, "searching")
		}
		if err := s.searchResults(c, me.Login, raw, &v); err != nil {
			var ve chat.ValidationError
			if errors.Is(err, chat.ErrMalformed) {
				return echo.NewHTTPError(http.StatusBadRequest, err.Error())
			}
			if !errors.As(err, &ve) {
				return err
			}
			v.Error, status = ve["q"], http.StatusUnprocessableEntity
		} else if !live && c.QueryParam("after") == "" {
			if err := s.Index.RecordSearch(ctx, me.Login, v.Query); err != nil {
				s.Log.Warn("search: remember", "login", me.Login, "err", err)
			}
		}
	}
	if live {
		return s.Core.RenderRaw(c, status, views.SearchResults(v))
	}
	recent, err := s.Index.RecentSearches(ctx, me.Login)
	if err != nil {
		s.Log.Warn("search: recent searches", "login", me.Login, "err", err)
	}
	v.Recent = recent
	title := "Search"
	if v.Query != "" {
		title = "Search: " + v.Query
	}
	return s.Core.Render(c, status, views.Page{Title: title}, views.SearchPage(v))
}

// searchResults fills v with a page of the results of raw for login, and
// v.Query with what was searched (raw, or its beginning when too long).
func (s routes) searchResults(c echo.Context, login, raw string, v *views.SearchView) error {
	ctx := c.Request().Context()
	q, err := chat.ParseSearch(raw)
	if err != nil {
		return err
	}
	if q.Cut {
		v.Query, _ = chat.CutSearch(raw)
	}
	v.Notice = searchNotice(q)
	before, err := s.searchBefore(c.QueryParam("after"))
	if err != nil {
		return err
	}
	convs, places, err := s.searchScope(ctx, login)
	if err != nil {
		return err
	}
	found, more, stats, err := s.Index.Search(ctx, narrowTo(convs, q.In), q, before, searchPerPage)
	s.Statements.Observe(float64(stats.Statements))
	if err != nil {
		return err
	}
	v.Searched = true
	for _, m := range found {
		text := m.Content
		if m.Attachment != nil {
			text = strings.TrimSpace(text + "\n" + m.Attachment.Name)
		}
		v.Results = append(v.Results, views.SearchResult{
			ID: m.ID, Author: m.Author, Place: places[m.Room], Link: handlers.MessageLink(m.Room, m.ID),
			Text: views.Highlight(text, q.Marks(text)),
		})
	}
	if more && len(found) > 0 {
		token, err := s.searchCursor(found[len(found)-1].ID)
		if err != nil {
			return err
		}
		v.More = "/search?q=" + url.QueryEscape(v.Query) + "&after=" + url.QueryEscape(token)
	}
	return nil
}

// searchNotice says what of a query was not searched, or "".
func searchNotice(q chat.SearchQuery) string {
	var parts []string
	if q.Cut {
		parts = append(parts, fmt.Sprintf("Only the first %d characters were read.", chat.MaxSearchQuery))
	}
	switch {
	case q.Ignored == 1:
		parts = append(parts, fmt.Sprintf("Only the first %d words were searched; 1 more was ignored.", chat.MaxSearchTerms))
	case q.Ignored > 1:
		parts = append(parts, fmt.Sprintf("Only the first %d words were searched; %d more were ignored.", chat.MaxSearchTerms, q.Ignored))
	}
	return strings.Join(parts, " ")
}

package search

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web/limit"
)

const (
	// searchPerPage is how many results a page of search shows.
	searchPerPage = 20
)

// App is the search use cases (service.Service).
type App interface {
	Search(ctx context.Context, r service.SearchRequest) (service.SearchPage, error)
	RecentSearches(ctx context.Context, login string) []string
}

// Core is what search uses of the HTTP core (handlers.Server): the
// signing of cursors, the rendering of pages.
type Core interface {
	Sign(name string, value any) (string, error)
	Unsign(name, token string, dst any) error
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
	RenderRaw(c echo.Context, status int, comp templ.Component) error
}

// Deps are what search is built from.
type Deps struct {
	Core Core
	App  App
	// Rate is the per-person limit on searches.
	Rate *limit.Keyed
}

// routes are search's routes.
type routes struct{ Deps }

// Register lists search's routes.
func Register(r handlers.Routes, d Deps) {
	s := routes{d}
	r.Auth.GET("/search", s.search)
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
	recentRead := false
	if raw != "" {
		if ok, wait := s.Rate.Allow(me.Login); !ok {
			return limit.TooMany(c, wait, "searching")
		}
		if err := s.searchResults(c, me.Login, raw, live, &v); err != nil {
			var ve chat.ValidationError
			if errors.Is(err, chat.ErrMalformed) {
				return echo.NewHTTPError(http.StatusBadRequest, err.Error())
			}
			if !errors.As(err, &ve) {
				return err
			}
			v.Error, status = ve["q"], http.StatusUnprocessableEntity
		} else {
			recentRead = !live
		}
	}
	if live {
		return s.Core.RenderRaw(c, status, views.SearchResults(v))
	}
	if !recentRead {
		v.Recent = s.App.RecentSearches(ctx, me.Login)
	}
	title := "Search"
	if v.Query != "" {
		title = "Search: " + v.Query
	}
	return s.Core.Render(c, status, views.Page{Title: title}, views.SearchPage(v))
}

// searchResults fills v with a page of the results of raw for login, and
// v.Query with what was searched (raw, or its beginning when too long);
// a search from the page, not as one types, also fills v.Recent.
func (s routes) searchResults(c echo.Context, login, raw string, live bool, v *views.SearchView) error {
	q, err := chat.ParseSearch(raw)
	if err != nil {
		return err
	}
	if q.Cut {
		v.Query, _ = chat.CutSearch(raw)
	}
	v.Notice = searchNotice(q)
	after := c.QueryParam("after")
	before, err := s.searchBefore(after)
	if err != nil {
		return err
	}
	page, err := s.App.Search(c.Request().Context(), service.SearchRequest{Login: login, Query: q, Text: v.Query,
		Before: before, N: searchPerPage, Remember: !live && after == "", Recent: !live})
	if err != nil {
		return err
	}
	v.Searched, v.Recent = true, page.Recent
	for _, h := range page.Hits {
		m := h.Message
		text := m.Content
		if m.Attachment != nil {
			text = strings.TrimSpace(text + "\n" + m.Attachment.Name)
		}
		v.Results = append(v.Results, views.SearchResult{
			ID: m.ID, Author: m.Author, Place: placeTitle(h.Place, login), Link: handlers.MessageLink(m.Room, m.ID),
			Text: views.Highlight(text, q.Marks(text)),
		})
	}
	if page.More && len(page.Hits) > 0 {
		token, err := s.searchCursor(page.Hits[len(page.Hits)-1].Message.ID)
		if err != nil {
			return err
		}
		v.More = "/search?q=" + url.QueryEscape(v.Query) + "&after=" + url.QueryEscape(token)
	}
	return nil
}

// placeTitle is how a result names its room or DM for login.
func placeTitle(p chat.Place, login string) string {
	switch p := p.(type) {
	case chat.Room:
		return "#" + p.DisplayName
	case chat.DM:
		return handlers.DMTitle(p, login)
	}
	return ""
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

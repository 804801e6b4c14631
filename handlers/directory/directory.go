package directory

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/views"
)

// perPage is how many people a page lists.
const perPage = 30

// maxQuery bounds the search, in characters.
const maxQuery = 64

// cursorName keeps the directory's signed cursors apart from others.
const cursorName = "people"

// People reads pages of the directory (service.Service).
type People interface {
	People(ctx context.Context, prefix string, after chat.PeopleCursor, n int) ([]chat.UserRef, *chat.PeopleCursor, error)
}

// Core is what the module uses of the server: rendering a page, signing
// the cursors of its links, and who is online.
type Core interface {
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
	Sign(name string, value any) (string, error)
	Unsign(name, token string, dst any) error
	Online(login string) bool
}

type routes struct {
	core   Core
	people People
}

// Register lists the directory's route.
func Register(r handlers.Routes, core Core, people People) {
	s := routes{core: core, people: people}
	r.Auth.GET("/people", s.listPeople)
}

// listPeople answers GET /people?q=&after=: a page of the directory. A
// cursor that is not one of ours is a 400.
func (s routes) listPeople(c echo.Context) error {
	q := strings.TrimSpace(c.QueryParam("q"))
	if utf8.RuneCountInString(q) > maxQuery {
		return echo.NewHTTPError(http.StatusBadRequest, "Search with a shorter name.")
	}
	var after chat.PeopleCursor
	if tok := c.QueryParam("after"); tok != "" {
		if err := s.core.Unsign(cursorName, tok, &after); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "The link to the next page is malformed or too old.")
		}
	}
	found, next, err := s.people.People(c.Request().Context(), q, after, perPage)
	if err != nil {
		return err
	}
	me := handlers.MustUser(c)
	v := views.PeopleList{Query: q}
	for _, p := range found {
		row := views.PersonRow{Person: p, Online: s.core.Online(p.Login)}
		if p.Login != me.Login {
			if addr, err := chat.DMAddress([]string{me.Login, p.Login}); err == nil {
				row.Message = handlers.DMURL(addr)
			}
		}
		v.Rows = append(v.Rows, row)
	}
	if next != nil {
		tok, err := s.core.Sign(cursorName, *next)
		if err != nil {
			return err
		}
		v.Next = "/people?" + url.Values{"q": {q}, "after": {tok}}.Encode()
	}
	return s.core.Render(c, http.StatusOK, views.Page{Title: "People"}, views.PeopleView(v))
}

package dms

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/views"
)

// maxSuggestions bounds the people suggested for a new DM.
const maxSuggestions = 10

// Starter starts a DM (service.Service).
type Starter interface {
	StartDM(ctx context.Context, me string, logins []string) (string, error)
}

// People finds whom a person may write to (handlers.Server): those they
// share a room or a DM with, and whoever has exactly the login word.
type People interface {
	Acquaintances(ctx context.Context, login, word string) (map[string]chat.UserRef, error)
}

// Pages renders a page in the layout, or a fragment alone
// (handlers.Server).
type Pages interface {
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
	RenderRaw(c echo.Context, status int, comp templ.Component) error
}

// routes are the DM routes.
type routes struct {
	pages  Pages
	people People
	app    Starter
}

// Register lists the DM routes of this package.
func Register(r handlers.Routes, pages Pages, people People, app Starter) {
	s := routes{pages, people, app}
	r.Auth.GET("/dm/new", s.newDM)
	r.Auth.POST("/dm", s.startDM)
	r.Auth.GET("/dm/new/suggestions", s.suggestPeople)
}

// newDM is the form to start a DM, suggesting people who share a room
// with the person.
func (s routes) newDM(c echo.Context) error {
	v := views.NewDM{Form: views.Form{Values: map[string]string{}, Errors: map[string]string{}}}
	var err error
	if v.Suggestions, err = s.suggestions(c, ""); err != nil {
		return err
	}
	return s.pages.Render(c, http.StatusOK, views.Page{Title: "New direct message"}, views.NewDMView(v))
}

// startDM opens the DM with the people typed in "to" (logins separated by
// spaces or commas; the person is added): 303 to its canonical address, or
// the form again with what is wrong.
func (s routes) startDM(c echo.Context) error {
	me := handlers.MustUser(c)
	to := c.FormValue("to")
	f := views.Form{Values: map[string]string{"to": to}, Errors: map[string]string{}}
	address, err := s.app.StartDM(c.Request().Context(), me.Login, splitLogins(to))
	if err != nil {
		if !errors.Is(err, chat.ErrInvalid) && !errors.Is(err, chat.ErrNotFound) {
			return err
		}
		f.Errors["to"] = problemOf(err)
		v := views.NewDM{Form: f}
		if v.Suggestions, err = s.suggestions(c, ""); err != nil {
			return err
		}
		return s.pages.Render(c, http.StatusUnprocessableEntity, views.Page{Title: "New direct message"}, views.NewDMView(v))
	}
	return handlers.Redirect(c, handlers.DMURL(address)+"#latest")
}

// problemOf is the sentence of a StartDM error, without its sentinel.
func problemOf(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[:i]
	}
	return strings.ToUpper(msg[:1]) + msg[1:] + "."
}

// splitLogins splits what was typed into logins, lower-cased.
func splitLogins(typed string) []string {
	return strings.FieldsFunc(strings.ToLower(typed), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == ';'
	})
}

// suggestPeople is the htmx fragment of suggestions for what is typed in "to".
func (s routes) suggestPeople(c echo.Context) error {
	list, err := s.suggestions(c, c.QueryParam("to"))
	if err != nil {
		return err
	}
	return s.pages.RenderRaw(c, http.StatusOK, views.Suggestions(list))
}

// suggestions are the people to suggest for what was typed: the last word
// is matched, the words before it are kept in the suggested conversation.
// Cassandra has no prefix search on logins, so the candidates are the
// people the person shares a room or a DM with (two reads: the rooms in one
// IN query, the DM list in one partition) whose login or name contains the
// word, and whoever has exactly that login (one read by key).
func (s routes) suggestions(c echo.Context, typed string) ([]views.Suggestion, error) {
	ctx := c.Request().Context()
	me := handlers.MustUser(c)
	words := splitLogins(typed)
	var word string
	if len(words) > 0 && !strings.ContainsAny(typed[len(typed)-1:], " ,;\t") {
		word, words = words[len(words)-1], words[:len(words)-1]
	}
	people, err := s.people.Acquaintances(ctx, me.Login, word)
	if err != nil {
		return nil, err
	}
	delete(people, me.Login)
	for _, w := range words {
		delete(people, w)
	}
	var out []views.Suggestion
	for _, p := range people {
		if !handlers.Matches(p, word) {
			continue
		}
		address, err := chat.DMAddress(append([]string{me.Login, p.Login}, words...))
		if err != nil {
			continue // too many people typed, or a malformed word: nothing to open
		}
		out = append(out, views.Suggestion{Person: p, URL: handlers.DMURL(address)})
	}
	slices.SortFunc(out, func(a, b views.Suggestion) int { return strings.Compare(a.Person.Login, b.Person.Login) })
	return out[:min(len(out), maxSuggestions)], nil
}

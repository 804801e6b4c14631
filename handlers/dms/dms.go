package dms

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/views"
)

// maxSuggestions bounds the people suggested for a new DM.
const maxSuggestions = 10

// routes are the DM routes, on the core's server.
type routes struct{ *handlers.Server }

// Register lists the DM routes of this package.
func Register(srv *handlers.Server, r handlers.Routes) {
	s := routes{srv}
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
	return s.Render(c, http.StatusOK, views.Page{Title: "New direct message"}, views.NewDMView(v))
}

// startDM opens the DM with the people typed in "to" (logins separated by
// spaces or commas; the person is added): 303 to its canonical address, or
// the form again with what is wrong.
func (s routes) startDM(c echo.Context) error {
	me := handlers.MustUser(c)
	to := c.FormValue("to")
	f := views.Form{Values: map[string]string{"to": to}, Errors: map[string]string{}}
	address, err := s.dmAddressOf(c, me.Login, splitLogins(to))
	if err != nil {
		if !errors.Is(err, chat.ErrInvalid) && !errors.Is(err, chat.ErrNotFound) {
			return err
		}
		f.Errors["to"] = problemOf(err)
		v := views.NewDM{Form: f}
		if v.Suggestions, err = s.suggestions(c, ""); err != nil {
			return err
		}
		return s.Render(c, http.StatusUnprocessableEntity, views.Page{Title: "New direct message"}, views.NewDMView(v))
	}
	return handlers.Redirect(c, handlers.DMURL(address)+"#latest")
}

// dmAddressOf is the canonical address of the DM between me and logins,
// all of whom have accounts: a ValidationError-like ErrInvalid for a
// malformed login or a wrong number of people, ErrNotFound naming the
// logins without an account.
func (s routes) dmAddressOf(c echo.Context, me string, logins []string) (string, error) {
	if len(logins) == 0 {
		return "", fmt.Errorf("type at least one login: %w", chat.ErrInvalid)
	}
	for _, l := range logins {
		if !chat.ValidName(l) {
			return "", fmt.Errorf("%q is not a login: %w", l, chat.ErrInvalid)
		}
	}
	address, err := chat.DMAddress(append([]string{me}, logins...))
	if err != nil {
		return "", fmt.Errorf("a conversation has %d to %d people, you included: %w", chat.MinDMMembers, chat.MaxDMMembers, chat.ErrInvalid)
	}
	members := strings.Split(address, "+")
	refs, err := s.DB().UserRefs(c.Request().Context(), members)
	if err != nil {
		return "", err
	}
	if len(refs) != len(members) {
		var missing []string
		for _, m := range members {
			if !slices.ContainsFunc(refs, func(r chat.UserRef) bool { return r.Login == m }) {
				missing = append(missing, m)
			}
		}
		return "", fmt.Errorf("no one has the login %s: %w", strings.Join(missing, ", "), chat.ErrNotFound)
	}
	return address, nil
}

// problemOf is the sentence of a dmAddressOf error, without its sentinel.
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
	return s.RenderRaw(c, http.StatusOK, views.Suggestions(list))
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
	people, err := s.Acquaintances(ctx, me.Login, word)
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

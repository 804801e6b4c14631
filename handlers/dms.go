// This file owns what is only a DM's: the list of a person's direct
// messages, starting one (by logins, with suggestions) and the sidebar's
// recent DMs. A DM's page, messages and stream are the room handlers'
// (see conversations.go).
package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/views"
)

const (
	// sidebarDMCount is how many recent DMs the sidebar lists.
	sidebarDMCount = 10
	// maxSuggestions bounds the people suggested for a new DM.
	maxSuggestions = 10
)

// listDMs is the person's direct messages, most recent activity first.
func (s *Server) listDMs(c echo.Context) error {
	me := MustUser(c)
	ctx := c.Request().Context()
	page := views.Page{Title: "Direct messages"}
	var entries []store.DMEntry
	if IsHTMX(c) {
		var err error
		if entries, err = s.db.DMList(ctx, me.Login); err != nil {
			return err
		}
	} else {
		// The sidebar's reads serve the page: its DM list is the rows,
		// its unread counts their badges. The list is read once.
		sb := s.readSidebar(ctx, me.Login, "")
		if sb.dmErr != nil {
			return sb.dmErr
		}
		entries = sb.entries
		sb.fill(&page)
		page = s.fillPage(c, page)
	}
	l := views.DMList{Now: time.Now()}
	for _, e := range entries {
		cv := dmConversation(e.DM, me.Login)
		l.Rows = append(l.Rows, views.DMRow{
			ID: cv.ID, URL: cv.URL, Title: cv.Title, Members: e.DM.Members,
			LastAuthor: e.LastAuthor, LastExcerpt: e.LastExcerpt, LastTime: e.LastID.Time(),
			Unread: page.Unread[cv.ID],
		})
	}
	return s.Render(c, http.StatusOK, page, views.DMListView(l))
}

// newDM is the form to start a DM, suggesting people who share a room
// with the person.
func (s *Server) newDM(c echo.Context) error {
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
func (s *Server) startDM(c echo.Context) error {
	me := MustUser(c)
	to := c.FormValue("to")
	f := views.Form{Values: map[string]string{"to": to}, Errors: map[string]string{}}
	address, err := s.dmAddressOf(c, me.Login, splitLogins(to))
	if err != nil {
		if !errors.Is(err, store.ErrInvalid) && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		f.Errors["to"] = problemOf(err)
		v := views.NewDM{Form: f}
		if v.Suggestions, err = s.suggestions(c, ""); err != nil {
			return err
		}
		return s.Render(c, http.StatusUnprocessableEntity, views.Page{Title: "New direct message"}, views.NewDMView(v))
	}
	return Redirect(c, DMURL(address)+"#latest")
}

// dmAddressOf is the canonical address of the DM between me and logins,
// all of whom have accounts: a ValidationError-like ErrInvalid for a
// malformed login or a wrong number of people, ErrNotFound naming the
// logins without an account.
func (s *Server) dmAddressOf(c echo.Context, me string, logins []string) (string, error) {
	if len(logins) == 0 {
		return "", fmt.Errorf("type at least one login: %w", store.ErrInvalid)
	}
	for _, l := range logins {
		if !store.ValidName(l) {
			return "", fmt.Errorf("%q is not a login: %w", l, store.ErrInvalid)
		}
	}
	address, err := store.DMAddress(append([]string{me}, logins...))
	if err != nil {
		return "", fmt.Errorf("a conversation has %d to %d people, you included: %w", store.MinDMMembers, store.MaxDMMembers, store.ErrInvalid)
	}
	members := strings.Split(address, "+")
	refs, err := s.db.UserRefs(c.Request().Context(), members)
	if err != nil {
		return "", err
	}
	if len(refs) != len(members) {
		var missing []string
		for _, m := range members {
			if !slices.ContainsFunc(refs, func(r store.UserRef) bool { return r.Login == m }) {
				missing = append(missing, m)
			}
		}
		return "", fmt.Errorf("no one has the login %s: %w", strings.Join(missing, ", "), store.ErrNotFound)
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
func (s *Server) suggestPeople(c echo.Context) error {
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
func (s *Server) suggestions(c echo.Context, typed string) ([]views.Suggestion, error) {
	ctx := c.Request().Context()
	me := MustUser(c)
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
		if !Matches(p, word) {
			continue
		}
		address, err := store.DMAddress(append([]string{me.Login, p.Login}, words...))
		if err != nil {
			continue // too many people typed, or a malformed word: nothing to open
		}
		out = append(out, views.Suggestion{Person: p, URL: DMURL(address)})
	}
	slices.SortFunc(out, func(a, b views.Suggestion) int { return strings.Compare(a.Person.Login, b.Person.Login) })
	return out[:min(len(out), maxSuggestions)], nil
}

// acquaintances are the people login shares a room or a DM with (two
// reads: the rooms in one IN query, the DM list in one partition), and
// whoever has exactly the login word (one read by key), by login.
func (s *Server) Acquaintances(ctx context.Context, login, word string) (map[string]store.UserRef, error) {
	people := map[string]store.UserRef{}
	rooms, err := s.MyRooms(ctx, login)
	if err != nil {
		return nil, err
	}
	for _, r := range rooms {
		for l, p := range r.Participants {
			people[l] = p
		}
	}
	dms, err := s.db.DMList(ctx, login)
	if err != nil {
		return nil, err
	}
	for _, e := range dms {
		for _, p := range e.DM.Members {
			people[p.Login] = p
		}
	}
	if word != "" && store.ValidName(word) {
		if u, err := s.user(ctx, word); err == nil {
			people[u.Login] = u.Ref()
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return people, nil
}

// matches reports whether p's login or name contains word (lower-case);
// every one matches "".
func Matches(p store.UserRef, word string) bool {
	return word == "" || strings.Contains(p.Login, word) || strings.Contains(strings.ToLower(p.Name()), word)
}

// recentOrUnread keeps the sidebarDMCount newest DMs and any older one
// with unread messages, so an unread DM is never out of sight.
func recentOrUnread(dms []views.SidebarDM, unread map[string]int) []views.SidebarDM {
	out := dms[:0:0]
	for i, d := range dms {
		if i < sidebarDMCount || unread[d.ID] > 0 {
			out = append(out, d)
		}
	}
	return out
}

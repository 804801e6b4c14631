// This file owns who a person knows, for suggestions (new DMs, adding
// members), and the sidebar's recent DMs.

package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/views"
	"github.com/labstack/echo/v4"
)

// sidebarDMCount is how many recent DMs the sidebar lists.
const sidebarDMCount = 10

// acquaintAll is the size of room whose members Acquaintances reads
// whole; of a bigger room it reads at most acquaintFew, by login.
const (
	acquaintAll = 500
	acquaintFew = 50
)

// Acquaintances are the people login shares a room or a DM with (the
// rooms' rows: a small room's all, a big one's whose login starts with
// word; the DM list in one partition), and whoever has exactly the login
// word (one read by key), by login.
func (s *Server) Acquaintances(ctx context.Context, login, word string) (map[string]chat.UserRef, error) {
	people := map[string]chat.UserRef{}
	rooms, err := s.MyRooms(ctx, login)
	if err != nil {
		return nil, err
	}
	for _, r := range rooms {
		// A room's rows, not its 10,000 members: a small room whole, a
		// big one those whose login starts with word.
		var members []chat.UserRef
		if r.Members <= acquaintAll {
			members, err = s.db.RoomMembers(ctx, r.Room, "", acquaintAll)
		} else {
			members, err = s.db.RoomMembersFrom(ctx, r.Room, word, acquaintFew)
		}
		if err != nil {
			return nil, err
		}
		for _, p := range members {
			people[p.Login] = p
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
	if word != "" && chat.ValidName(word) {
		if u, err := s.user(ctx, word); err == nil {
			people[u.Login] = u.Ref()
		} else if !errors.Is(err, chat.ErrNotFound) {
			return nil, err
		}
	}
	return people, nil
}

// Matches reports whether p's login or name contains word (lower-case);
// every one matches "".
func Matches(p chat.UserRef, word string) bool {
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

// listDMs is the person's direct messages, most recent activity first.
func (s *Server) listDMs(c echo.Context) error {
	me := MustUser(c)
	ctx := c.Request().Context()
	page := views.Page{Title: "Direct messages"}
	var entries []chat.DMEntry
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

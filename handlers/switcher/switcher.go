package switcher

import (
	"context"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/views"
)

// perKind is how many rooms, DMs and people an answer lists at most.
const perKind = 8

// maxQuery bounds q, in characters.
const maxQuery = 64

// Core is what the module uses of the server (handlers.Server): one's
// rooms through the caches, and rendering.
type Core interface {
	MyRooms(ctx context.Context, login string) ([]chat.RoomFor, error)
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
}

// DMs reads one's DM list (store.Store): one partition.
type DMs interface {
	DMList(ctx context.Context, login string) ([]chat.DMEntry, error)
}

// People reads the directory by prefix of a login or a name
// (service.Service).
type People interface {
	People(ctx context.Context, prefix string, after chat.PeopleCursor, n int) ([]chat.UserRef, *chat.PeopleCursor, error)
}

type routes struct {
	core   Core
	dms    DMs
	people People
}

// Register lists the switcher's route.
func Register(r handlers.Routes, core Core, dms DMs, people People) {
	s := routes{core: core, dms: dms, people: people}
	r.Auth.GET("/switch", s.find)
}

// find answers GET /switch?q=: JSON for the dialog (Accept:
// application/json), the page otherwise.
func (s routes) find(c echo.Context) error {
	q := strings.TrimSpace(c.QueryParam("q"))
	if utf8.RuneCountInString(q) > maxQuery {
		return echo.NewHTTPError(http.StatusBadRequest, "Search with a shorter name.")
	}
	items, err := s.matches(c.Request().Context(), handlers.MustUser(c).Login, q)
	if err != nil {
		return err
	}
	if strings.Contains(c.Request().Header.Get("Accept"), "application/json") {
		c.Response().Header().Set("Cache-Control", "no-store")
		if items == nil {
			items = []views.SwitchItem{}
		}
		return c.JSON(http.StatusOK, items)
	}
	return s.core.Render(c, http.StatusOK, views.Page{Title: "Go to"}, views.SwitchPage(views.SwitchList{Query: q, Items: items}))
}

// matches are the rooms, DMs and people whose name or login holds q
// (case, width and accents folded; people by the start of a login or a
// name, as the directory finds them), perKind of each, in that order.
func (s routes) matches(ctx context.Context, me, q string) ([]views.SwitchItem, error) {
	word := chat.FoldName(q)
	var out []views.SwitchItem
	rooms, err := s.core.MyRooms(ctx, me)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, r := range rooms {
		if n < perKind && (holds(r.Name, word) || holds(r.DisplayName, word)) {
			out = append(out, views.SwitchItem{Kind: "room", Label: "#" + r.Name, Detail: r.DisplayName, URL: "/rooms/" + r.Name})
			n++
		}
	}
	dms, err := s.dms.DMList(ctx, me)
	if err != nil {
		return nil, err
	}
	n = 0
	for _, e := range dms {
		title := handlers.DMTitle(e.DM, me)
		match := holds(title, word)
		for _, p := range e.DM.Others(me) {
			match = match || holds(p.Login, word)
		}
		if n < perKind && match {
			out = append(out, views.SwitchItem{Kind: "dm", Label: title, Detail: "Direct message", URL: handlers.DMURL(e.DM.Address)})
			n++
		}
	}
	people, _, err := s.people.People(ctx, q, chat.PeopleCursor{}, perKind+1)
	if err != nil {
		return nil, err
	}
	n = 0
	for _, p := range people {
		if p.Login == me || n == perKind {
			continue
		}
		addr, err := chat.DMAddress([]string{me, p.Login})
		if err != nil {
			continue
		}
		out = append(out, views.SwitchItem{Kind: "person", Label: p.Name(), Detail: "@" + p.Login, URL: handlers.DMURL(addr)})
		n++
	}
	return out, nil
}

// holds reports whether name, folded, holds word (already folded); every
// name holds "".
func holds(name, word string) bool {
	return word == "" || strings.Contains(chat.FoldName(name), word)
}

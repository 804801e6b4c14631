// This file owns the room routes: the list of all rooms, creation, the room
// page, join, leave and creator-only delete.

package handlers

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/views"
)

// messagesPerPage is how many messages a room page and an older page show.
const messagesPerPage = 50

func (s *Server) home(c echo.Context) error {
	rooms, err := s.MyRooms(c.Request().Context(), MustUser(c).Login)
	if err != nil {
		return err
	}
	return s.Render(c, http.StatusOK, views.Page{Title: "Home"}, views.HomeView(views.Home{Rooms: rooms}))
}

// pageToken signs Cassandra's paging state for a ?page= link; forged or
// stale (over 6 hours old) tokens do not decode.
func (s *Server) pageToken(state []byte) (string, error) {
	return s.pages.Encode("rooms-page", base64.RawURLEncoding.EncodeToString(state))
}

func (s *Server) pageState(token string) ([]byte, error) {
	if token == "" {
		return nil, nil
	}
	var encoded string
	if err := s.pages.Decode("rooms-page", token, &encoded); err != nil {
		return nil, echo.NewHTTPError(http.StatusBadRequest, "This page link is broken or has expired. Start again from the first page.")
	}
	return base64.RawURLEncoding.DecodeString(encoded)
}

func (s *Server) listRooms(c echo.Context) error {
	if name := strings.TrimSpace(c.QueryParam("name")); name != "" {
		return s.roomsNamedLike(c, name)
	}
	state, err := s.pageState(c.QueryParam("page"))
	if err != nil {
		return err
	}
	page, err := s.db.Rooms(c.Request().Context(), state, s.cfg.RoomsPerPage)
	if errors.Is(err, chat.ErrInvalid) {
		return echo.NewHTTPError(http.StatusBadRequest, "This page link is broken or has expired. Start again from the first page.")
	}
	if err != nil {
		return err
	}
	me := MustUser(c).Login
	rooms, err := s.withMyStanding(c.Request().Context(), page.Rooms, me)
	if err != nil {
		return err
	}
	list := views.RoomList{}
	for _, r := range rooms {
		if r.Visible() {
			list.Rows = append(list.Rows, views.RoomRow{Room: r.Room, Joined: r.IsMember()})
		}
	}
	if len(page.Next) > 0 {
		token, err := s.pageToken(page.Next)
		if err != nil {
			return err
		}
		list.Next = "/rooms?page=" + url.QueryEscape(token)
	}
	return s.Render(c, http.StatusOK, views.Page{Title: "All rooms"}, views.RoomListView(list))
}

func (s *Server) newRoom(c echo.Context) error {
	return s.Render(c, http.StatusOK, views.Page{Title: "New room"}, views.NewRoomView(views.Form{}))
}

func (s *Server) createRoom(c echo.Context) error {
	f := FormOf(c, "room_name", "banner", "kind")
	me := MustUser(c)
	r, err := s.app.CreateRoom(c.Request().Context(), me, chat.NewRoom{Name: f.Value("room_name"), Banner: f.Value("banner"), Kind: f.Value("kind")})
	if err != nil {
		if !FormError(err) {
			return err
		}
		f = WithErrors(f, err)
		if errors.Is(err, chat.ErrRoomExists) {
			// Said once, beside the field.
			f.Errors["room_name"], f.Error = "This room name is taken.", ""
		}
		return s.Render(c, FormStatus(err), views.Page{Title: "New room"}, views.NewRoomView(f))
	}
	return Redirect(c, RoomURL(r.Name))
}

func RoomURL(name string) string { return "/rooms/" + url.PathEscape(name) }

// roomOr404 reads the room named in the path (through the cache, see
// roomFor); for a viewer whose list still names a room that is gone, it
// repairs the list on the way.
func (s *Server) roomOr404(c echo.Context) (chat.RoomFor, error) {
	name := c.Param("room")
	login := MustUser(c).Login
	r, err := s.RoomFor(c.Request().Context(), name, login)
	if errors.Is(err, chat.ErrNotFound) {
		if u, uerr := s.user(c.Request().Context(), login); uerr == nil && slices.Contains(u.ChatRooms, chat.NameKey(name)) {
			if _, ferr := s.app.DropListedRoom(c.Request().Context(), login, name, false); ferr != nil && !errors.Is(ferr, chat.ErrNotFound) {
				s.log.Warn("repair my rooms", "room", name, "err", ferr)
			}
		}
	}
	return r, err
}

// showRoom is the page of a room or a DM: its latest messages, composer
// and live stream for members; a room's header and Join button for others.
func (s *Server) showRoom(c echo.Context) error {
	cv, err := s.ConversationOf(c)
	if err != nil {
		return err
	}
	v := s.roomView(c, cv)
	v.Now = time.Now()
	me := MustUser(c)
	page := views.Page{Title: cv.Title, Room: cv.ID, Composer: v.Participant}
	if !v.Participant {
		return s.Render(c, http.StatusOK, page, views.RoomPage(v))
	}
	// For a whole page, the sidebar (with this person's markers) is read
	// while the messages are: independent reads run at once. The page
	// marks the conversation read, so the sidebar does not count it.
	ctx := c.Request().Context()
	open := cv.ID
	if c.QueryParam("at") != "" {
		open = "" // a page in the past leaves the newer messages unread
	}
	var sidebarRead chan sidebar
	if !IsHTMX(c) {
		sidebarRead = make(chan sidebar, 1)
		go func() { sidebarRead <- s.readSidebar(ctx, me.Login, open) }()
	}
	if c.QueryParam("at") != "" {
		err = s.around(c, cv.Place, cv.URL, &v)
	} else {
		v.Messages, v.PageKey, v.Older, v.After, err = s.latest(c, cv)
	}
	var sb sidebar
	if sidebarRead != nil {
		sb = <-sidebarRead
	}
	if err != nil {
		return err
	}
	s.InConversation(c, cv.Place, v.Messages...)
	// The marker as it was when the page opened: the divider goes above
	// what was new then.
	marker, level := sb.markers.Read[cv.ID], sb.markers.LevelOf(cv.ID)
	if !sb.read {
		if marker, level, err = s.db.MarkerAndLevel(ctx, me.Login, cv.ID); err != nil {
			s.log.Warn("read marker", "conversation", cv.ID, "err", err)
		}
	}
	if level == "" {
		level = chat.DefaultLevel(cv.ID)
	}
	v.Level = level
	s.app.MarkShown(ctx, me.Login, cv.Place.Conversation(), v.Messages, marker)
	v.FirstUnread = firstUnread(v.Messages, marker, me.Login)
	if c.QueryParam("at") == "" {
		s.unreadAbove(ctx, cv, marker, &v)
	} else if c.QueryParam("unread") == "first" {
		v.FirstUnread = v.Highlight // the link of unreadAbove
	}
	v.Composer = views.Form{Values: map[string]string{"client_id": NewClientID(), "content": s.quoted(c, cv)}}
	if sidebarRead != nil {
		sb.fill(&page)
	}
	return s.Render(c, http.StatusOK, page, views.RoomPage(v))
}

// unreadAbove is for a latest page that does not reach back to the
// reader's first unread message (more came than a page holds): the
// divider would sit above a message that was not the first unread, so
// the page has none, and links to the page of the first unread instead.
func (s *Server) unreadAbove(ctx context.Context, cv conversation, marker chat.ID, v *views.RoomView) {
	if v.FirstUnread == (chat.ID{}) || v.Older == "" || !v.Messages[0].ID.After(marker) {
		return
	}
	v.FirstUnread = chat.ID{}
	first, _, err := s.db.MessagesAfter(ctx, cv.Place, marker, 1)
	if err != nil || len(first) == 0 {
		if err != nil {
			s.log.Warn("first unread", "conversation", cv.ID, "err", err)
		}
		return
	}
	m := first[0]
	v.UnreadAbove = cv.URL + "?at=" + m.ID.String() + "&unread=first#" + views.MessageID(m)
}

func (s *Server) joinRoom(c echo.Context) error {
	r, err := s.app.JoinRoom(c.Request().Context(), MustUser(c), c.Param("room"))
	if err != nil {
		return err
	}
	if IsHTMX(c) {
		// Not #latest: from the room page itself, htmx would only move to
		// the anchor instead of loading the page (app.js scrolls anyway).
		return Redirect(c, RoomURL(r.Name))
	}
	return Redirect(c, RoomURL(r.Name)+"#latest")
}

func (s *Server) leaveRoom(c echo.Context) error {
	if _, err := s.VisibleRoom(c); err != nil {
		return err // a closed room is not there for outsiders
	}
	if err := s.app.LeaveRoom(c.Request().Context(), MustUser(c), c.Param("room")); err != nil {
		return err
	}
	return Redirect(c, "/rooms?notice=room-left")
}

func (s *Server) deleteRoom(c echo.Context) error {
	if _, err := s.VisibleRoom(c); err != nil {
		return err // a closed room is not there for outsiders
	}
	// The creator condition uses the login from the session, never a form
	// field, so a forged form cannot delete someone else's room.
	if err := s.app.DeleteRoom(c.Request().Context(), MustUser(c).Login, c.Param("room")); err != nil {
		return err
	}
	return Redirect(c, "/?notice=you-deleted")
}

// roomsNamedLike answers GET /rooms?name=: the rooms whose name starts
// with name, in any case, in name order, a page at a time (?page= a
// token of the last name read, signed and encrypted: it may be a closed
// room's, which the reader must not learn, and a name made up is no
// place to start from). It reads one small partition of room_names and
// then the page's rooms, never the whole table.
func (s *Server) roomsNamedLike(c echo.Context, name string) error {
	ctx := c.Request().Context()
	var after string
	if token := c.QueryParam("page"); token != "" {
		if err := s.pages.Decode("rooms-named", token, &after); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "This page link is broken or has expired. Start again from the first page.")
		}
	}
	names, more, err := s.db.RoomNamesWithPrefix(ctx, name, after, s.cfg.RoomsPerPage)
	if err != nil {
		return err
	}
	found, err := s.db.RoomsNamed(ctx, names)
	if err != nil {
		return err
	}
	me := MustUser(c).Login
	var page []chat.Room
	for _, n := range names {
		if r, ok := found[n]; ok {
			page = append(page, r)
		}
	}
	rooms, err := s.withMyStanding(ctx, page, me)
	if err != nil {
		return err
	}
	list := views.RoomList{Name: name}
	for _, r := range rooms {
		if r.Visible() {
			list.Rows = append(list.Rows, views.RoomRow{Room: r.Room, Joined: r.IsMember()})
		}
	}
	if more && len(names) > 0 {
		token, err := s.pages.Encode("rooms-named", names[len(names)-1])
		if err != nil {
			return err
		}
		list.Next = "/rooms?name=" + url.QueryEscape(name) + "&page=" + url.QueryEscape(token)
	}
	return s.Render(c, http.StatusOK, views.Page{Title: "All rooms"}, views.RoomListView(list))
}

// quoted is what "Reply with quote" puts in the composer without
// JavaScript (?quote=<id>): the message quoted, its author and a link to
// it; "" when the page was opened without one, or for a message that is
// not there.
func (s *Server) quoted(c echo.Context, cv conversation) string {
	id, err := chat.ParseMessageID(c.QueryParam("quote"))
	if err != nil {
		return ""
	}
	m, err := s.db.Message(c.Request().Context(), cv.Place, id)
	if err != nil {
		return ""
	}
	return QuoteOf(c, m)
}

// QuoteOf is the quote of m that "Reply with quote" puts in the composer
// (chat.Quote), its attribution linking to m on this site.
func QuoteOf(c echo.Context, m chat.Message) string {
	return chat.Quote(m.Content, m.Author.Name(), c.Scheme()+"://"+c.Request().Host+views.Permalink(m))
}

// withMyStanding is rooms, each with login's standing (see standings: read
// for the rooms login's list names).
func (s *Server) withMyStanding(ctx context.Context, rooms []chat.Room, login string) ([]chat.RoomFor, error) {
	u, err := s.user(ctx, login)
	if err != nil {
		return nil, err
	}
	return s.rows.Standings(ctx, rooms, login, func(name string) bool { return slices.Contains(u.ChatRooms, name) })
}

// This file owns what room and DM routes share: finding the conversation a
// request names (conversationOf), with its address and title, and checking
// that the person asking may see it. Pages, older pages, posts and live
// streams of rooms and DMs go through it, so they are written once.

package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/views"
)

// conversation is a room or a DM as the handlers use it.
type conversation struct {
	// Place is what the message functions of the store take.
	Place chat.Place
	// ID is the conversation id: a room's name or a DM's "dm:" id. The
	// sequencer, the hub and the streams are keyed by it.
	ID string
	// URL is the conversation's address ("/rooms/lobby", "/dm/ada+bob");
	// its messages, events and read marker hang below it.
	URL string
	// Title names it for people: a room's display name, a DM's other members.
	Title string
	// Room is the room with who asks' standing, nil for a DM; DM is the
	// DM, nil for a room.
	Room *chat.RoomFor
	DM   *chat.DM
}

// Member reports whether login may read and post.
func (cv conversation) Member(login string) bool { return cv.Place.Conversation().Has(login) }

// ConversationOf reads the room (/rooms/:room...) or DM (/dm/:logins...)
// the request names. A DM is its members' only: it returns ErrNotFound
// for an address that is malformed, names someone without an account, or
// does not include the current user, so an outsider learns nothing; so
// does a closed room. An open room is returned to anyone; callers check
// membership (ErrNotParticipant).
func (s *Server) ConversationOf(c echo.Context) (conversation, error) {
	if addr := c.Param("logins"); addr != "" {
		return s.dmFor(c.Request().Context(), addr, MustUser(c).Login)
	}
	r, err := s.roomOr404(c)
	if err != nil {
		return conversation{}, err
	}
	return roomConversation(r)
}

// dmFor reads the DM at address as login sees it: ErrNotFound for anyone
// not in it.
func (s *Server) dmFor(ctx context.Context, address, login string) (conversation, error) {
	d, err := s.dm(ctx, address)
	if err != nil {
		return conversation{}, err
	}
	cv := dmConversation(d, login)
	if !cv.Member(login) {
		return conversation{}, fmt.Errorf("dm %q seen by %q: %w", d.Address, login, chat.ErrNotFound)
	}
	return cv, nil
}

// removedError is the ErrNotFound of a closed room for someone an admin
// removed from it: they knew the room, and are told why it is gone
// rather than that it was deleted.
type removedError struct{ room string }

func (e removedError) Error() string { return "removed from closed room " + e.room }
func (e removedError) Unwrap() error { return chat.ErrNotFound }

// roomConversation is r as the person whose standing it holds sees it:
// ErrNotFound for a closed room they are not in (it is its members' only,
// like a DM).
func roomConversation(r chat.RoomFor) (conversation, error) {
	if !r.Visible() {
		if _, removed := r.Removed[r.Login()]; removed {
			return conversation{}, removedError{room: r.DisplayName}
		}
		return conversation{}, fmt.Errorf("closed room %q seen by %q: %w", r.Name, r.Login(), chat.ErrNotFound)
	}
	return conversation{Place: r, ID: r.Name, URL: RoomURL(r.Name), Title: r.DisplayName, Room: &r}, nil
}

// ConversationByID reads the conversation whose id is id (a room's name
// or a DM's "dm:" id), as login sees it: ErrNotFound for a room that does
// not exist or is closed to login, or a DM login is not in.
func (s *Server) ConversationByID(ctx context.Context, login, id string) (conversation, error) {
	if address, ok := strings.CutPrefix(id, "dm:"); ok {
		return s.dmFor(ctx, address, login)
	}
	r, err := s.RoomFor(ctx, id, login)
	if err != nil {
		return conversation{}, err
	}
	return roomConversation(r)
}

// ConversationKey is the id of the conversation the path names, before
// it is read (a stream subscribes first), or "" for a malformed DM address.
func ConversationKey(c echo.Context) string {
	if addr := c.Param("logins"); addr != "" {
		canonical, _, err := chat.ParseDMAddress(addr)
		if err != nil {
			return ""
		}
		return chat.DM{Address: canonical}.Conversation().ID
	}
	return c.Param("room")
}

// dmConversation is d as seen by login.
func dmConversation(d chat.DM, login string) conversation {
	return conversation{Place: d, ID: d.Conversation().ID, URL: DMURL(d.Address), Title: DMTitle(d, login), DM: &d}
}

// DMURL is the page of the DM at a canonical address; its logins are valid
// names (letters, digits, '_', '.', '-') and '+', none of which needs escaping.
func DMURL(address string) string { return "/dm/" + address }

// DMTitle names a DM after its members other than login.
func DMTitle(d chat.DM, login string) string {
	var names []string
	for _, m := range d.Others(login) {
		names = append(names, m.Name())
	}
	if len(names) == 0 {
		return "Notes to yourself"
	}
	return strings.Join(names, ", ")
}

// CanonicalDM sends a DM address in another spelling (order, case,
// repeats) to the canonical one: a 301 for GET and HEAD; other methods go
// on with the canonical address in place. A malformed address is left for
// conversationOf to answer 404.
func CanonicalDM(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		addr := c.Param("logins")
		canonical, ok, err := chat.ParseDMAddress(addr)
		if err != nil || ok {
			return next(c)
		}
		if m := c.Request().Method; m == http.MethodGet || m == http.MethodHead {
			path := DMURL(canonical) + strings.TrimPrefix(c.Path(), "/dm/:logins")
			return c.Redirect(http.StatusMovedPermanently, path+query(c))
		}
		names, values := c.ParamNames(), c.ParamValues()
		for i, name := range names {
			if name == "logins" {
				values[i] = canonical
			}
		}
		c.SetParamValues(values...)
		return next(c)
	}
}

// roomView is the page of cv for the current user, without its messages.
func (s *Server) roomView(c echo.Context, cv conversation) views.RoomView {
	me := MustUser(c)
	v := views.RoomView{ID: cv.ID, URL: cv.URL, Title: cv.Title, Viewer: me, Participant: cv.Member(me.Login)}
	if cv.Room != nil {
		v.Room, v.Creator = cv.Room.Room, cv.Room.CreatorLogin == me.Login
		v.Moderator = cv.Room.IsAdmin()
		// The header's list: the first rows, never all the members.
		people, err := s.FirstPeople(c.Request().Context(), cv.Room.Room)
		if err != nil {
			s.log.Warn("participants", "room", cv.ID, "err", err)
		}
		v.People = people
	} else {
		v.DM = &views.DMHeader{Members: cv.DM.Members}
	}
	return v
}

// MessageLink opens conversation conv around message id (the permalink).
func MessageLink(conv string, id chat.ID) string {
	at := "?at=" + url.QueryEscape(id.String()) + "#msg-" + id.String()
	if address, ok := strings.CutPrefix(conv, "dm:"); ok {
		return DMURL(address) + at
	}
	return RoomURL(conv) + at
}

// VisibleRoom reads the room in the path for the current user: ErrNotFound
// for a closed room they are not in (see conversationOf).
func (s *Server) VisibleRoom(c echo.Context) (chat.RoomFor, error) {
	cv, err := s.ConversationOf(c)
	if err != nil {
		return chat.RoomFor{}, err
	}
	if cv.Room == nil {
		return chat.RoomFor{}, chat.ErrNotFound
	}
	return *cv.Room, nil
}

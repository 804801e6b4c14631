package accounts

// A newcomer who opens an invitation link is sent to log in with the link
// in ?next=; this file keeps the invitation through sign-up, so they land
// in the room.

import (
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
)

// invitation is a working invitation link that next points at: its token
// and its room (ok is false for any other next, or a link that no longer
// works; the invitation page then says why).
func (s routes) invitation(c echo.Context, next string) (token string, r chat.Room, ok bool) {
	rest, found := strings.CutPrefix(next, "/invites/")
	if !found || strings.ContainsAny(rest, "/?#") {
		return "", r, false
	}
	token, err := url.PathUnescape(rest)
	if err != nil || token == "" {
		return "", r, false
	}
	ctx := c.Request().Context()
	inv, err := s.db.Invite(ctx, token)
	if err != nil {
		return "", r, false
	}
	if r, err = s.db.Room(ctx, inv.Room); err != nil {
		return "", r, false
	}
	if inv.Problem(time.Now(), r.InviteUses[inv.ID]) != nil {
		return "", chat.Room{}, false
	}
	return token, r, true
}

// invitedName is the name of the room next invites to, for the sign-up
// and login pages ("" when next is no working invitation).
func (s routes) invitedName(c echo.Context, next string) string {
	if _, r, ok := s.invitation(c, next); ok {
		return r.DisplayName
	}
	return ""
}

// afterSignup is where a new account goes: into the room of the
// invitation it was made from (joined as the link's POST would), else to
// next.
func (s routes) afterSignup(c echo.Context, me chat.UserRef, next string) string {
	token, r, ok := s.invitation(c, next)
	if !ok {
		return next
	}
	// The room as the newcomer stands in it, as the link's POST reads it.
	ctx := c.Request().Context()
	if r, err := s.db.RoomFor(ctx, r.Name, me.Login); err == nil {
		joined, err := s.app.JoinByInvite(ctx, me, token, r)
		if err == nil {
			return handlers.RoomURL(joined.Name) + "#latest"
		}
		s.core.Log().Warn("join by invitation after sign-up", "room", r.Name, "err", err)
	}
	return next // the invitation page says what went wrong
}

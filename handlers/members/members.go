package members

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/views"
)

// People are the use cases that change a room's people and settings
// (service.Service).
type People interface {
	AddMember(ctx context.Context, actor chat.UserRef, r chat.Room, login string) error
	PromoteMember(ctx context.Context, actor string, r chat.Room, who string) error
	RemoveMember(ctx context.Context, actor chat.UserRef, r chat.Room, who string) error
	SetRoomKind(ctx context.Context, actor string, r chat.Room, kind string) error
	SetBanner(ctx context.Context, actor string, r chat.Room, banner string) error
	JoinByInvite(ctx context.Context, me chat.UserRef, token string, before chat.RoomFor) (chat.RoomFor, error)
	CreateInvite(ctx context.Context, actor chat.UserRef, room string, f chat.NewInvite) (string, error)
	RevokeInvite(ctx context.Context, actor, room, id string) error
}

// Roster is what the module reads and writes of a room's people and
// invitations (store.Store).
type Roster interface {
	RoomFor(ctx context.Context, name, login string) (chat.RoomFor, error)
	RoomMembers(ctx context.Context, r chat.Room, after string, n int) ([]chat.UserRef, error)
	RoomMembersFrom(ctx context.Context, r chat.Room, prefix string, n int) ([]chat.UserRef, error)
	MembersOf(ctx context.Context, r chat.Room, logins []string) (map[string]chat.UserRef, error)
	Invite(ctx context.Context, token string) (chat.Invite, error)
	Invites(ctx context.Context, r chat.Room) ([]chat.Invite, error)
}

// Core is what the module uses of the HTTP core (handlers.Server): the
// room or conversation a request names, the people one knows, the
// rendering of pages and fragments.
type Core interface {
	VisibleRoom(c echo.Context) (chat.RoomFor, error)
	ConversationOf(c echo.Context) (handlers.Conversation, error)
	Acquaintances(ctx context.Context, login, word string) (map[string]chat.UserRef, error)
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
	RenderRaw(c echo.Context, status int, comp templ.Component) error
}

// routes are the members module's routes.
type routes struct {
	core Core
	db   Roster
	app  People
}

// Register lists the routes of a room's people.
func Register(r handlers.Routes, core Core, db Roster, app People) {
	s := routes{core, db, app}
	r.Auth.GET("/rooms/:room/members", s.roomMembers)
	r.Auth.GET("/dm/:logins/members", s.roomMembers, handlers.CanonicalDM)
	r.Auth.GET("/rooms/:room/members/suggestions", s.memberSuggestions)
	r.Auth.POST("/rooms/:room/members", s.addMember, r.Membership)
	r.Auth.POST("/rooms/:room/members/:login/admin", s.promoteMember)
	r.Auth.POST("/rooms/:room/members/:login/remove", s.removeMember)
	r.Auth.POST("/rooms/:room/kind", s.setRoomKind)
	r.Auth.POST("/rooms/:room/banner", s.setBanner)
	r.Auth.POST("/rooms/:room/invites", s.createInvite, r.Membership)
	r.Auth.POST("/rooms/:room/invites/:id/revoke", s.revokeInvite)
	r.Auth.GET("/invites/:token", s.showInvite)
	r.Auth.POST("/invites/:token", s.useInvite, r.Membership)
}

// maxMemberCandidates bounds the suggestions of the add form.
const maxMemberCandidates = 20

func membersURL(room string) string { return handlers.RoomURL(room) + "/members" }

// showMembers is the members page.
func (s routes) showMembers(c echo.Context) error {
	r, err := s.core.VisibleRoom(c)
	if err != nil {
		return err
	}
	return s.renderMembers(c, http.StatusOK, r, views.Form{}, views.Form{})
}

// renderMembers renders the members page of r with the add and invite
// forms as given.
func (s routes) renderMembers(c echo.Context, status int, r chat.RoomFor, add, invite views.Form) error {
	ctx := c.Request().Context()
	me := handlers.MustUser(c)
	v := views.Members{Room: r.Room, Viewer: me, Admin: r.IsAdmin(), Add: add, Invite: invite,
		CanAdd: r.IsAdmin() || (!r.Closed() && r.IsMember())}
	// A page of the room's rows, by login, after ?after= (a room may
	// have 10,000 members: never read whole).
	after := chat.NameKey(c.QueryParam("after"))
	people, err := s.db.RoomMembers(ctx, r.Room, after, views.MembersPerPage+1)
	if err != nil {
		return err
	}
	if after != "" {
		v.Prev = membersURL(r.Name)
	}
	if len(people) > views.MembersPerPage {
		people = people[:views.MembersPerPage]
		v.Next = membersURL(r.Name) + "?after=" + url.QueryEscape(people[len(people)-1].Login)
	}
	v.People = people
	if v.CanAdd {
		people, err := s.memberCandidates(ctx, me.Login, r.Room, "")
		if err != nil {
			return err
		}
		v.Suggestions = people
		invites, err := s.db.Invites(ctx, r.Room)
		if err != nil {
			return err
		}
		now := time.Now()
		for _, inv := range invites {
			used := r.InviteUses[inv.ID]
			row := views.InviteRow{Invite: inv, Used: used, Status: "active"}
			switch problem := inv.For(r.Room, "", now); {
			case errors.Is(problem, chat.ErrInviteRevoked):
				row.Status = "revoked"
			case errors.Is(problem, chat.ErrInviteExpired):
				row.Status = "expired"
			case errors.Is(problem, chat.ErrInviteUsedUp):
				row.Status = "used up"
			case errors.Is(problem, chat.ErrInviteNotAdmin):
				row.Status = "stopped: its maker is no admin of the closed room"
			}
			v.Invites = append(v.Invites, row)
		}
		// A link just made: shown if its token is one of this room's.
		if token := c.QueryParam("invite"); token != "" {
			if inv, err := s.db.Invite(ctx, token); err == nil && inv.Room == r.Name {
				v.NewLink = inviteURL(token)
				v.LinkBase = c.Scheme() + "://" + c.Request().Host
			}
		}
	}
	return s.core.Render(c, status, views.Page{Title: "Members of #" + r.DisplayName}, views.MembersView(v))
}

func inviteURL(token string) string { return "/invites/" + url.PathEscape(token) }

// memberCandidates are people login shares a room or a DM with, or whose
// login is typed, who are not in r and whose login or name contains typed.
func (s routes) memberCandidates(ctx context.Context, login string, r chat.Room, typed string) ([]chat.UserRef, error) {
	typed = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(typed), "@"))
	people, err := s.core.Acquaintances(ctx, login, typed)
	if err != nil {
		return nil, err
	}
	var logins []string
	for l, p := range people {
		if handlers.Matches(p, typed) {
			logins = append(logins, l)
		}
	}
	in, err := s.db.MembersOf(ctx, r, logins)
	if err != nil {
		return nil, err
	}
	var out []chat.UserRef
	for _, l := range logins {
		if _, ok := in[l]; !ok {
			out = append(out, people[l])
		}
	}
	slices.SortFunc(out, func(a, b chat.UserRef) int { return strings.Compare(a.Login, b.Login) })
	return out[:min(len(out), maxMemberCandidates)], nil
}

// memberSuggestions is the htmx fragment of the add form's candidates.
func (s routes) memberSuggestions(c echo.Context) error {
	r, err := s.core.VisibleRoom(c)
	if err != nil {
		return err
	}
	people, err := s.memberCandidates(c.Request().Context(), handlers.MustUser(c).Login, r.Room, c.QueryParam("login"))
	if err != nil {
		return err
	}
	return s.core.RenderRaw(c, http.StatusOK, views.MemberCandidates(people))
}

// addMember adds the person named by the field login.
func (s routes) addMember(c echo.Context) error {
	r, err := s.core.VisibleRoom(c)
	if err != nil {
		return err
	}
	f := handlers.FormOf(c, "login")
	f.Values["login"] = strings.TrimPrefix(strings.TrimSpace(f.Value("login")), "@")
	err = s.app.AddMember(c.Request().Context(), handlers.MustUser(c), r.Room, f.Value("login"))
	if errors.Is(err, service.ErrUnknownLogin) {
		f.Errors["login"] = "No one has this login."
		return s.renderMembers(c, http.StatusUnprocessableEntity, r, f, views.Form{})
	}
	if err != nil {
		return err
	}
	return handlers.Redirect(c, membersURL(r.Name))
}

// promoteMember makes :login an admin.
func (s routes) promoteMember(c echo.Context) error {
	r, err := s.core.VisibleRoom(c)
	if err != nil {
		return err
	}
	if err := s.app.PromoteMember(c.Request().Context(), handlers.MustUser(c).Login, r.Room, chat.NameKey(c.Param("login"))); err != nil {
		return err
	}
	return handlers.Redirect(c, membersURL(r.Name))
}

// removeMember removes :login from the room: their list and the room's
// caches are dropped on every instance, and their open streams of the room
// end at once, on every instance.
func (s routes) removeMember(c echo.Context) error {
	r, err := s.core.VisibleRoom(c)
	if err != nil {
		return err
	}
	if err := s.app.RemoveMember(c.Request().Context(), handlers.MustUser(c), r.Room, chat.NameKey(c.Param("login"))); err != nil {
		return err
	}
	return handlers.Redirect(c, membersURL(r.Name))
}

// setRoomKind makes the room open or closed (field kind).
func (s routes) setRoomKind(c echo.Context) error {
	r, err := s.core.VisibleRoom(c)
	if err != nil {
		return err
	}
	if err := s.app.SetRoomKind(c.Request().Context(), handlers.MustUser(c).Login, r.Room, c.FormValue("kind")); err != nil {
		var v chat.ValidationError
		if errors.As(err, &v) {
			return echo.NewHTTPError(http.StatusUnprocessableEntity, "A room is open or closed.")
		}
		return err
	}
	return handlers.Redirect(c, membersURL(r.Name))
}

// setBanner sets the room's banner (field banner; empty for none), for
// its admins; anyone else is refused and nothing changes.
func (s routes) setBanner(c echo.Context) error {
	r, err := s.core.VisibleRoom(c)
	if err != nil {
		return err
	}
	if err := s.app.SetBanner(c.Request().Context(), handlers.MustUser(c).Login, r.Room, c.FormValue("banner")); err != nil {
		var v chat.ValidationError
		if errors.As(err, &v) {
			return echo.NewHTTPError(http.StatusUnprocessableEntity, "The banner: "+v["banner"])
		}
		return err
	}
	return handlers.Redirect(c, membersURL(r.Name))
}

// createInvite makes a link (fields expires_days, max_uses) and shows it
// once on the members page.
func (s routes) createInvite(c echo.Context) error {
	r, err := s.core.VisibleRoom(c)
	if err != nil {
		return err
	}
	f := handlers.FormOf(c, "expires_days", "max_uses")
	var form chat.NewInvite
	if d := strings.TrimSpace(f.Value("expires_days")); d != "" {
		days, err := strconv.Atoi(d)
		if err != nil || days < 1 || days > 90 {
			f.Errors["expires_days"] = "Choose between 1 and 90 days."
		}
		form.TTL = time.Duration(days) * 24 * time.Hour
	}
	if u := strings.TrimSpace(f.Value("max_uses")); u != "" {
		n, err := strconv.Atoi(u)
		if err != nil || n < 1 {
			f.Errors["max_uses"] = "Choose a number of uses from 1, or leave it empty."
		}
		form.MaxUses = n
	}
	if len(f.Errors) > 0 {
		f.Error = "Please correct the fields marked below."
		return s.renderMembers(c, http.StatusUnprocessableEntity, r, views.Form{}, f)
	}
	token, err := s.app.CreateInvite(c.Request().Context(), handlers.MustUser(c), r.Name, form)
	if err != nil {
		var v chat.ValidationError
		if errors.As(err, &v) {
			return s.renderMembers(c, http.StatusUnprocessableEntity, r, views.Form{}, handlers.WithErrors(f, err))
		}
		return err
	}
	return handlers.Redirect(c, membersURL(r.Name)+"?invite="+url.QueryEscape(token)+"#invites")
}

// revokeInvite revokes the link :id.
func (s routes) revokeInvite(c echo.Context) error {
	r, err := s.core.VisibleRoom(c)
	if err != nil {
		return err
	}
	if err := s.app.RevokeInvite(c.Request().Context(), handlers.MustUser(c).Login, r.Name, c.Param("id")); err != nil {
		return err
	}
	return handlers.Redirect(c, membersURL(r.Name)+"#invites")
}

// invitation reads the link in the path and its room, with why it no
// longer works, as the sentence the page shows ("" if it works).
func (s routes) invitation(c echo.Context) (chat.Invite, chat.RoomFor, string, error) {
	ctx := c.Request().Context()
	inv, err := s.db.Invite(ctx, c.Param("token"))
	if err != nil {
		return inv, chat.RoomFor{}, "", err
	}
	r, err := s.db.RoomFor(ctx, inv.Room, handlers.MustUser(c).Login)
	if err != nil {
		return inv, r, "", err
	}
	switch problem := inv.For(r.Room, handlers.MustUser(c).Login, time.Now()); {
	case errors.Is(problem, chat.ErrNotFound):
		// A link of a room deleted since: the room of the name now is
		// another's, of which the link tells nothing.
		return inv, chat.RoomFor{}, "", fmt.Errorf("members: invitation to %q: %w", inv.Room, problem)
	case problem != nil:
		return inv, r, inviteProblem(problem), nil
	}
	return inv, r, "", nil
}

// inviteProblem is the sentence for a link that no longer works.
func inviteProblem(err error) string {
	switch {
	case errors.Is(err, chat.ErrInviteExpired):
		return "This invitation link has expired."
	case errors.Is(err, chat.ErrInviteRevoked):
		return "This invitation link was revoked by an admin of the room."
	case errors.Is(err, chat.ErrInviteUsedUp):
		return "This invitation link has been used as many times as it allows."
	case errors.Is(err, chat.ErrInviteNotAdmin):
		return "This invitation link no longer works: the room is closed, and whoever made the link is not one of its admins."
	case errors.Is(err, chat.ErrInviteRemoved):
		return "This invitation link was made before an admin removed you from the room; ask an admin for a new one."
	}
	return ""
}

// showInvite is the page of an invitation link: the room and Join.
func (s routes) showInvite(c echo.Context) error {
	_, r, problem, err := s.invitation(c)
	if err != nil {
		return err
	}
	return s.renderInvite(c, r, problem)
}

func (s routes) renderInvite(c echo.Context, r chat.RoomFor, problem string) error {
	status := http.StatusOK
	if problem != "" {
		status = http.StatusGone
		r = chat.RoomFor{} // a dead link tells nothing about the room
	}
	v := views.InvitePage{Room: r.Room, Action: c.Request().URL.Path, Problem: problem,
		Member: problem == "" && r.IsMember()}
	title := "Invitation"
	if problem == "" {
		title = "Invitation to #" + r.DisplayName
	}
	return s.core.Render(c, status, views.Page{Title: title}, views.InviteView(v))
}

// useInvite joins the link's room (POST /invites/:token).
func (s routes) useInvite(c echo.Context) error {
	_, before, _, err := s.invitation(c)
	if err != nil {
		return err
	}
	r, err := s.app.JoinByInvite(c.Request().Context(), handlers.MustUser(c), c.Param("token"), before)
	if problem := inviteProblem(err); problem != "" {
		return s.renderInvite(c, before, problem)
	}
	if err != nil {
		return err
	}
	return handlers.Redirect(c, handlers.RoomURL(r.Name)+"#latest")
}

// roomMembers answers GET /rooms/:room/members?q= and
// /dm/:logins/members?q=: the composer's suggestions after "@"; without
// q, and not from htmx, a room's members page.
func (s routes) roomMembers(c echo.Context) error {
	if c.Param("room") != "" && !handlers.IsHTMX(c) && !c.QueryParams().Has("q") {
		return s.showMembers(c) // the page, not the composer's suggestions
	}
	cv, err := s.core.ConversationOf(c)
	if err != nil {
		return err
	}
	if cv.Room != nil && cv.Member(handlers.MustUser(c).Login) {
		return s.suggestRoomMembers(c, cv.Room.Room)
	}
	return s.suggestMembers(c, cv.Place.Conversation())
}

// suggestRoomMembers is suggestMembers for a room, whose members are not
// all read: a room of up to suggestAll members is read whole, a bigger
// one by login, from the rows whose login starts with ?q=.
func (s routes) suggestRoomMembers(c echo.Context, r chat.Room) error {
	q := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(c.QueryParam("q")), "@"))
	var (
		people []chat.UserRef
		err    error
	)
	if r.Members <= suggestAll {
		people, err = s.db.RoomMembers(c.Request().Context(), r, "", suggestAll)
	} else {
		people, err = s.db.RoomMembersFrom(c.Request().Context(), r, q, handlers.MaxMentionSuggestions+1)
	}
	if err != nil {
		return err
	}
	conv := chat.Conversation{ID: r.Name, Members: make(map[string]chat.UserRef, len(people))}
	for _, p := range people {
		conv.Members[p.Login] = p
	}
	me := handlers.MustUser(c)
	conv.Members[me.Login] = me
	return s.suggestMembers(c, conv)
}

// suggestAll is the size of room whose members suggestions read whole.
const suggestAll = 500

// suggestMembers renders the members of conv whose login or name starts
// with ?q= (case-insensitive), the viewer left out, at most handlers.MaxMentionSuggestions.
func (s routes) suggestMembers(c echo.Context, conv chat.Conversation) error {
	me := handlers.MustUser(c)
	if !conv.Has(me.Login) {
		return chat.ErrNotParticipant
	}
	q := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(c.QueryParam("q")), "@"))
	var out []chat.UserRef
	for login, u := range conv.Members {
		if login == me.Login {
			continue
		}
		if strings.HasPrefix(login, q) || strings.HasPrefix(strings.ToLower(u.Firstname), q) ||
			strings.HasPrefix(strings.ToLower(u.Lastname), q) {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Login < out[j].Login })
	if len(out) > handlers.MaxMentionSuggestions {
		out = out[:handlers.MaxMentionSuggestions]
	}
	return s.core.RenderRaw(c, http.StatusOK, views.MemberSuggestions(out))
}

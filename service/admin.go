// This file owns running the site: its administrators, who may sign up
// and create rooms, and the life of an account (deactivation,
// reactivation, password-reset links, deletion), each action recorded
// in the audit log.
//
// A deactivation racing what the person does on another instance never
// leaves them able to act afterwards, by the order of its steps:
//  1. the account's state is written (plain write, read back by every
//     check below from storage or from a cache this deactivation empties
//     before it answers);
//  2. their sessions are deleted; then a fence on the person ("@login")
//     drops their row and their cached sessions on every instance that
//     answers, before the deactivation answers: a post, a join or a page
//     after it reads the state again and is refused, and a request reads
//     its session from storage, where it is gone;
//  3. their streams end on every instance, saying why: their pages go to
//     the login page, which shows the sentence (their session is gone
//     by then, so the login page is what they get); their push
//     subscriptions go;
//  4. the person leaves each of their rooms by the rooms' LWT, each
//     followed by the room's fence: once it returns, no post of theirs
//     that checked the room before is still writing.
//
// A login checks the state after it saved its session (ConfirmLogin);
// the deactivation lists sessions after it wrote the state: either the
// login reads "deactivated" and deletes its session, or its session was
// listed and is deleted. A join checks the state after its LWT
// (JoinRoom): either it reads "deactivated" and leaves again, or it
// joined before step 4 read the person's rooms. A post checks the state
// inside its pass on the room's gate, which step 4's fence waits for,
// from a row that step 2 dropped from every cache.

package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// Accounts is the storage of the site and of accounts (store.Store).
type Accounts interface {
	Site(ctx context.Context) (chat.Site, error)
	ClaimSite(ctx context.Context, login string) (bool, error)
	SetAdmin(ctx context.Context, login string, admin bool) (chat.Site, error)
	SaveSettings(ctx context.Context, policy string, domains []string, rooms string) (chat.Site, error)
	Audit(ctx context.Context, actor, action, target, detail string) error
	AuditLog(ctx context.Context, before chat.ID, since time.Time, n int) ([]chat.AuditEntry, error)

	CreateUser(ctx context.Context, f chat.SignUp) (chat.User, error)
	Authenticate(ctx context.Context, login, password string) (chat.User, error)
	SetStatus(ctx context.Context, login, status string) error
	SetPassword(ctx context.Context, login, password, confirm string) error
	EraseUser(ctx context.Context, u chat.User) error
	DeleteDMFilesOf(ctx context.Context, login string) (int, error)
	SessionsSeen(ctx context.Context, login string) (int, time.Time, error)
	AdminPeople(ctx context.Context, prefix string, after chat.AdminCursor, n int) ([]string, chat.AdminCursor, error)
	DeleteSession(ctx context.Context, login, id string) error
	PushSubscriptions(ctx context.Context, login string) ([]chat.PushSubscription, error)
	DeletePushSubscription(ctx context.Context, login, endpoint string) error

	CreateResetLink(ctx context.Context, actor, login string) (string, error)
	ResetLink(ctx context.Context, token string) (string, error)
	UseResetLink(ctx context.Context, token string) (string, error)
	CreateSiteInvite(ctx context.Context, actor string, f chat.NewInvite) (string, chat.SiteInvite, error)
	SiteInvites(ctx context.Context) ([]chat.SiteInvite, error)
	UseSiteInvite(ctx context.Context, token string) error
	ReturnSiteInvite(ctx context.Context, token string) error
}

// ErrNotSiteAdmin refuses an administrative action to someone who is
// not an administrator; the pages answer it as not found.
var ErrNotSiteAdmin = fmt.Errorf("not an administrator: %w", chat.ErrNotFound)

// Site is the site's administrators and settings.
func (s *Service) Site(ctx context.Context) (chat.Site, error) { return s.Accounts.Site(ctx) }

// RequireAdmin is nil if login is an administrator, ErrNotSiteAdmin if
// not.
func (s *Service) RequireAdmin(ctx context.Context, login string) error {
	site, err := s.Accounts.Site(ctx)
	if err != nil {
		return err
	}
	if !site.IsAdmin(login) {
		return ErrNotSiteAdmin
	}
	return nil
}

// SignUp creates the account f describes under the site's policy
// (invite is the token of a site invitation link, "" for none); the
// first account of a site with no administrator becomes its
// administrator (admin true). chat.ErrSignupClosed or ErrLinkRefused
// under the invitation policy; a chat.ValidationError naming the email
// under the domain policy; store.CreateUser's errors otherwise.
func (s *Service) SignUp(ctx context.Context, f chat.SignUp, invite string) (u chat.User, admin bool, err error) {
	site, err := s.Accounts.Site(ctx)
	if err != nil {
		return chat.User{}, false, err
	}
	if err := f.Validate(); err != nil {
		return chat.User{}, false, err
	}
	switch site.Policy() {
	case chat.SignupInvite:
		if invite == "" {
			return chat.User{}, false, chat.ErrSignupClosed
		}
		if err := s.Accounts.UseSiteInvite(ctx, invite); err != nil {
			return chat.User{}, false, err
		}
		defer func() {
			if err != nil {
				if rerr := s.Accounts.ReturnSiteInvite(context.WithoutCancel(ctx), invite); rerr != nil {
					s.Log.Warn("give back a use of a site invitation", "err", rerr)
				}
			}
		}()
	case chat.SignupDomains:
		if !site.DomainAllowed(f.Email) {
			return chat.User{}, false, chat.ValidationError{"email": "Sign-up is open to email addresses at " + joinDomains(site.SignupDomains) + " only."}
		}
	}
	u, err = s.Accounts.CreateUser(ctx, f)
	if err != nil {
		return chat.User{}, false, err
	}
	if u.Email != "" {
		if _, err := s.SendVerification(ctx, u.Login); err != nil {
			s.Log.Warn("send a verification link", "login", u.Login, "err", err)
		}
	}
	if !site.Claimed {
		admin, err = s.Accounts.ClaimSite(ctx, u.Login)
		if err != nil {
			// The account exists: an administrator can still be made
			// from the command line.
			s.Log.Warn("claim the site", "login", u.Login, "err", err)
			return u, false, nil
		}
		if admin {
			s.audit(ctx, u.Login, chat.AuditFirstAdmin, u.Login, "")
		}
	}
	return u, admin, nil
}

func joinDomains(domains []string) string {
	out := ""
	for i, d := range domains {
		if i > 0 {
			out += ", "
		}
		out += d
	}
	return out
}

// LogIn checks login's password and that the account is active:
// chat.ErrBadCredentials, or chat.ErrDeactivated when the password is
// right but the account deactivated (a deleted one has no password).
// The caller saves a session, then calls ConfirmLogin.
func (s *Service) LogIn(ctx context.Context, login, password string) (chat.User, error) {
	u, err := s.Accounts.Authenticate(ctx, login, password)
	if err != nil {
		return u, err
	}
	if !u.Active() {
		return chat.User{}, chat.ErrDeactivated
	}
	return u, nil
}

// ConfirmLogin reads login's state again once the session id is saved,
// and deletes the session if the account was deactivated meanwhile
// (chat.ErrDeactivated): see the file's comment.
func (s *Service) ConfirmLogin(ctx context.Context, login, session string) error {
	u, err := s.Storage.User(ctx, login)
	if err == nil && u.Active() {
		return nil
	}
	if derr := s.Accounts.DeleteSession(ctx, login, session); derr != nil {
		return derr
	}
	s.SessionsEnded(ctx, login, []string{session})
	if err != nil {
		return err
	}
	return chat.ErrDeactivated
}

// MayAct is nil if login's account is active (or has no row), from the
// cached row, which a deactivation empties on every instance before it
// answers; chat.ErrDeactivated if not.
func (s *Service) MayAct(ctx context.Context, login string) error {
	if s.Accounts == nil {
		return nil // no accounts' states: every account is active
	}
	u, err := s.Rows.User(ctx, login)
	if errors.Is(err, chat.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !u.Active() {
		return chat.ErrDeactivated
	}
	return nil
}

// mayPost is nil if author may post in: their account is active and, in
// a DM, every member's is (a DM with a closed account is read only).
func (s *Service) mayPost(ctx context.Context, in chat.Place, author string) error {
	if err := s.MayAct(ctx, author); err != nil {
		return err
	}
	d, ok := in.(chat.DM)
	if !ok {
		return nil
	}
	for _, m := range d.Members {
		if err := s.MayAct(ctx, m.Login); err != nil {
			if errors.Is(err, chat.ErrDeactivated) {
				return chat.ErrDMClosed
			}
			return err
		}
	}
	return nil
}

// confirmJoin reads me's state from storage after a join's LWT, and
// takes them out again if their account was deactivated meanwhile (see
// the file's comment).
func (s *Service) confirmJoin(ctx context.Context, me chat.UserRef, room string) error {
	if s.Accounts == nil {
		return nil
	}
	u, err := s.Storage.User(ctx, me.Login)
	if err != nil || u.Active() {
		return nil // no row (tests' people), or active
	}
	err = s.Storage.LeaveRoom(ctx, me, room)
	s.fence(ctx, room, live.Invalidation{Rooms: []string{chat.NameKey(room)}, Users: []string{me.Login}})
	if err != nil && !errors.Is(err, chat.ErrNotFound) {
		return err
	}
	return chat.ErrDeactivated
}

// MayCreateRoom is nil if login may create a room: everyone may, unless
// the site lets administrators only (chat.ErrRoomsByAdmins).
func (s *Service) MayCreateRoom(ctx context.Context, login string) error {
	site, err := s.Accounts.Site(ctx)
	if err != nil {
		return err
	}
	if site.Rooms() == chat.RoomsByAdmins && !site.IsAdmin(login) {
		return chat.ErrRoomsByAdmins
	}
	return nil
}

// SetAdmin makes who an administrator (admin true) or no longer one, as
// actor. chat.ErrLastAdmin if who is the last; chat.ErrNotFound if who
// has no active account (to promote).
func (s *Service) SetAdmin(ctx context.Context, actor, who string, admin bool) error {
	u, err := s.Storage.User(ctx, who)
	if err != nil {
		return err
	}
	if admin && !u.Active() {
		return fmt.Errorf("promote %q: %w", who, chat.ErrDeactivated)
	}
	if _, err := s.Accounts.SetAdmin(ctx, u.Login, admin); err != nil {
		return err
	}
	action := chat.AuditDemote
	if admin {
		action = chat.AuditPromote
	}
	s.audit(ctx, actor, action, u.Login, "")
	return nil
}

// Deactivate closes who's account, as actor, on every instance at once
// (see the file's comment). chat.ErrLastAdmin if who is the last
// administrator; chat.ErrNotFound if there is no such account.
func (s *Service) Deactivate(ctx context.Context, actor, who string) error {
	// Once begun it runs to its end, whoever goes away: the person's pages
	// leave as it runs, and the administrator's may too.
	ctx = context.WithoutCancel(ctx)
	u, err := s.Storage.User(ctx, who)
	if err != nil {
		return err
	}
	if u.Status == chat.AccountDeleted {
		return fmt.Errorf("deactivate %q: %w", who, chat.ErrNotFound)
	}
	// The last administrator stays: the demotion's LWT refuses it.
	if _, err := s.Accounts.SetAdmin(ctx, u.Login, false); err != nil {
		return err
	}
	if err := s.Accounts.SetStatus(ctx, u.Login, chat.AccountDeactivated); err != nil {
		return err
	}
	if err := s.closeAccount(ctx, u.Login, endDeactivated); err != nil {
		return err
	}
	s.audit(ctx, actor, chat.AuditDeactivate, u.Login, "")
	return nil
}

// Why a person's open pages are sent to the login page: the notice it
// shows (see live.StreamEnd.Reason).
const (
	endDeactivated = "deactivated"
	endDeleted     = "account-deleted"
	endSessions    = "sessions-ended"
	endPasswordSet = "password-set"
)

// closeAccount is the steps 2 to 4 of a deactivation or a deletion; why
// is what the person's open pages are told.
func (s *Service) closeAccount(ctx context.Context, login, why string) error {
	if err := s.endAllSessions(ctx, login, why); err != nil {
		return err
	}
	subs, err := s.Accounts.PushSubscriptions(ctx, login)
	if err != nil {
		return err
	}
	for _, sub := range subs {
		if err := s.Accounts.DeletePushSubscription(ctx, login, sub.Endpoint); err != nil {
			return err
		}
	}
	// The rooms as stored after the state was written: a join that
	// landed before is in the list, one after reads the state.
	u, err := s.Storage.User(ctx, login)
	if err != nil {
		return err
	}
	for _, room := range u.ChatRooms {
		err := s.Storage.LeaveRoom(ctx, u.Ref(), room)
		s.fence(ctx, room, live.Invalidation{Rooms: []string{room}, Users: []string{login}})
		if err != nil && !errors.Is(err, chat.ErrNotFound) && !errors.Is(err, chat.ErrHandOver) {
			return err
		}
		s.EndStreams(ctx, live.StreamEnd{Login: login, Room: room, Reason: why})
		if err == nil {
			if r, rerr := s.Rows.Room(ctx, room); rerr == nil {
				s.Announce(ctx, r, u.Ref(), u.Name()+" leaves the room")
			}
		}
	}
	return nil
}

// endAllSessions deletes every session of login and ends their streams
// on every instance, sending their pages to the login page with the
// notice why.
func (s *Service) endAllSessions(ctx context.Context, login, why string) error {
	if _, err := s.Storage.EndOtherSessions(ctx, login, ""); err != nil {
		return err
	}
	// Every instance drops the person's row and cached sessions before
	// the answer (a fence waits for them): their next request reads its
	// session from storage, where it is gone.
	s.fence(ctx, "@"+login, live.Invalidation{Users: []string{login}, Accounts: []string{login}})
	s.EndStreams(ctx, live.StreamEnd{Login: login, Reason: why})
	return nil
}

// Reactivate opens who's account again, as actor: they can log in; the
// rooms they left stay left.
func (s *Service) Reactivate(ctx context.Context, actor, who string) error {
	u, err := s.Storage.User(ctx, who)
	if err != nil {
		return err
	}
	if err := s.Accounts.SetStatus(ctx, u.Login, chat.AccountActive); err != nil {
		return err
	}
	s.Invalidate(ctx, live.Invalidation{Users: []string{u.Login}, Accounts: []string{u.Login}})
	s.audit(ctx, actor, chat.AuditReactivate, u.Login, "")
	return nil
}

// EndSessions ends every session of who, as actor, with their streams.
func (s *Service) EndSessions(ctx context.Context, actor, who string) error {
	u, err := s.Storage.User(ctx, who)
	if err != nil {
		return err
	}
	if err := s.endAllSessions(ctx, u.Login, endSessions); err != nil {
		return err
	}
	s.audit(ctx, actor, chat.AuditEndSessions, u.Login, "")
	return nil
}

// CreateResetLink makes a password-reset link's token for who, as actor.
func (s *Service) CreateResetLink(ctx context.Context, actor, who string) (string, error) {
	u, err := s.Storage.User(ctx, who)
	if err != nil {
		return "", err
	}
	if u.Status == chat.AccountDeleted {
		return "", fmt.Errorf("reset link for %q: %w", who, chat.ErrNotFound)
	}
	token, err := s.Accounts.CreateResetLink(ctx, actor, u.Login)
	if err != nil {
		return "", err
	}
	s.audit(ctx, actor, chat.AuditResetLink, u.Login, "")
	return token, nil
}

// ResetLink is the login of a reset link that still works;
// chat.ErrLinkRefused otherwise.
func (s *Service) ResetLink(ctx context.Context, token string) (string, error) {
	return s.Accounts.ResetLink(ctx, token)
}

// ResetPassword sets a new password by the reset link token (spending
// it, once) and ends every session of its person. A bad password is a
// chat.ValidationError and leaves the link unspent; a link used, expired
// or unknown is chat.ErrLinkRefused.
func (s *Service) ResetPassword(ctx context.Context, token, password, confirm string) (string, error) {
	v := chat.ValidationError{}
	chat.CheckPassword(v, password, confirm)
	if err := v.Err(); err != nil {
		return "", err
	}
	login, err := s.Accounts.UseResetLink(ctx, token)
	if err != nil {
		return "", err
	}
	if err := s.Accounts.SetPassword(ctx, login, password, confirm); err != nil {
		return "", err
	}
	// An imported account is claimed by its first password: it opens.
	if u, err := s.Storage.User(ctx, login); err == nil && u.Status == chat.AccountUnclaimed {
		if err := s.Accounts.SetStatus(ctx, login, chat.AccountActive); err != nil {
			return "", err
		}
		s.Invalidate(ctx, live.Invalidation{Users: []string{login}, Accounts: []string{login}})
	}
	if err := s.endAllSessions(ctx, login, endPasswordSet); err != nil {
		return "", err
	}
	s.audit(ctx, login, chat.AuditPasswordSet, login, "")
	return login, nil
}

// SaveSettings sets the site's sign-up policy and who creates rooms, as
// actor; existing accounts are not touched. A chat.ValidationError for a
// bad form.
func (s *Service) SaveSettings(ctx context.Context, actor string, f chat.Settings) error {
	domains, err := f.Validate()
	if err != nil {
		return err
	}
	if _, err := s.Accounts.SaveSettings(ctx, f.SignupPolicy, domains, f.RoomCreation); err != nil {
		return err
	}
	s.audit(ctx, actor, chat.AuditSettings, "", "sign-up "+f.SignupPolicy+" "+joinDomains(domains)+"; rooms by "+f.RoomCreation)
	return nil
}

// CreateSiteInvite makes a sign-up link, as actor.
func (s *Service) CreateSiteInvite(ctx context.Context, actor string, f chat.NewInvite) (string, chat.SiteInvite, error) {
	token, inv, err := s.Accounts.CreateSiteInvite(ctx, actor, f)
	if err != nil {
		return "", inv, err
	}
	s.audit(ctx, actor, chat.AuditSiteInvite, inv.ID, fmt.Sprintf("%d uses, until %s", inv.MaxUses, inv.ExpiresAt.Format(time.RFC3339)))
	return token, inv, nil
}

// SiteInvites are the site's sign-up links still valid.
func (s *Service) SiteInvites(ctx context.Context) ([]chat.SiteInvite, error) {
	return s.Accounts.SiteInvites(ctx)
}

// DeleteAccount deletes login's own account, once their password is
// confirmed: their profile and sessions go, and the files they sent in
// DMs; their messages stay (shown under "deleted user"), and so do their
// files in rooms. A deactivation deletes no file: the DMs stay readable.
// chat.ValidationError for a wrong password; chat.ErrLastAdmin for the
// last administrator.
func (s *Service) DeleteAccount(ctx context.Context, login, password string) error {
	u, err := s.Accounts.Authenticate(ctx, login, password)
	if errors.Is(err, chat.ErrBadCredentials) {
		return chat.ValidationError{"password": "This is not your password."}
	}
	if err != nil {
		return err
	}
	// Once the password is checked it runs to its end: the person's own
	// page may leave as their streams end.
	ctx = context.WithoutCancel(ctx)
	if _, err := s.Accounts.SetAdmin(ctx, u.Login, false); err != nil {
		return err
	}
	if err := s.Accounts.SetStatus(ctx, u.Login, chat.AccountDeactivated); err != nil {
		return err
	}
	if err := s.closeAccount(ctx, u.Login, endDeleted); err != nil {
		return err
	}
	// Their files in DMs go with them (the others' messages say so);
	// their files in rooms stay with the rooms.
	if _, err := s.Accounts.DeleteDMFilesOf(ctx, u.Login); err != nil {
		return err
	}
	if err := s.Accounts.EraseUser(ctx, u); err != nil {
		return err
	}
	// Pages read the closed accounts again: "deleted user" now, where
	// the steps above may have cached "deactivated".
	s.Invalidate(ctx, live.Invalidation{Users: []string{u.Login}, Accounts: []string{u.Login}})
	s.audit(ctx, u.Login, chat.AuditDeleteSelf, u.Login, "")
	return nil
}

// FindPeople are up to n people whose login, name or email starts with
// prefix ("" for everyone), after the cursor, with their sessions and
// whether they are administrators; and the next page's cursor (zero at
// the end).
func (s *Service) FindPeople(ctx context.Context, prefix string, after chat.AdminCursor, n int) ([]chat.Person, chat.AdminCursor, error) {
	logins, next, err := s.Accounts.AdminPeople(ctx, prefix, after, n)
	if err != nil {
		return nil, next, err
	}
	people, err := s.people(ctx, logins)
	return people, next, err
}

func (s *Service) people(ctx context.Context, logins []string) ([]chat.Person, error) {
	site, err := s.Accounts.Site(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]chat.Person, 0, len(logins))
	for _, l := range logins {
		u, err := s.Storage.User(ctx, l)
		if errors.Is(err, chat.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		p := chat.Person{User: u, Admin: site.IsAdmin(u.Login)}
		if p.Sessions, p.LastSeen, err = s.Accounts.SessionsSeen(ctx, u.Login); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// AuditLog is a page of the audit log before the entry before (zero: the
// newest), newest first.
func (s *Service) AuditLog(ctx context.Context, before chat.ID, n int) ([]chat.AuditEntry, error) {
	site, err := s.Accounts.Site(ctx)
	if err != nil {
		return nil, err
	}
	return s.Accounts.AuditLog(ctx, before, site.CreatedAt, n)
}

// audit records an action; a failure is logged: the action is done.
func (s *Service) audit(ctx context.Context, actor, action, target, detail string) {
	if err := s.Accounts.Audit(context.WithoutCancel(ctx), actor, action, target, detail); err != nil {
		s.Log.Error("audit log", "actor", actor, "action", action, "target", target, "err", err)
	}
}

// This file owns the site as its administrators run it: who the
// administrators are, who may sign up and create rooms, the state of an
// account, the audit log, and the links that reset a password or let a
// person sign up.

package chat

import (
	"errors"
	"net/mail"
	"slices"
	"strings"
	"time"
)

// Sign-up policies.
const (
	SignupOpen    = "open"
	SignupInvite  = "invite"
	SignupDomains = "domains"
)

// Who may create rooms.
const (
	RoomsByEveryone = "everyone"
	RoomsByAdmins   = "admins"
)

// Account states; "" is active.
const (
	AccountActive      = ""
	AccountDeactivated = "deactivated"
	AccountDeleted     = "deleted"
	// AccountUnclaimed is an imported account nobody has claimed yet:
	// closed as a deactivated one is, until a password is set by a
	// reset link, which opens it.
	AccountUnclaimed = "unclaimed"
)

// Errors of running a site.
var (
	// ErrLastAdmin refuses to demote or deactivate the only administrator.
	ErrLastAdmin = errors.New("a site needs at least one administrator")
	// ErrDeactivated refuses whatever a deactivated account asks for.
	ErrDeactivated = errors.New("this account is deactivated")
	// ErrDMClosed refuses a message in a DM with a deactivated member.
	ErrDMClosed = errors.New("this conversation takes no new messages: an account in it is closed")
	// ErrSignupClosed refuses a sign-up the site's policy does not allow.
	ErrSignupClosed = errors.New("sign-up is by invitation only")
	// ErrLinkRefused is the one refusal of a reset or invitation link that
	// is used up, expired or unknown: it says nothing of which.
	ErrLinkRefused = errors.New("this link does not work")
	// ErrRoomsByAdmins refuses a room's creation by someone who is not an
	// administrator when only administrators create rooms.
	ErrRoomsByAdmins = errors.New("only administrators create rooms on this site")
)

// ResetLinkTTL is how long a password-reset link works.
const ResetLinkTTL = 24 * time.Hour

// Site is the site's administrators and settings.
type Site struct {
	Admins []string
	// Version changes with every change of the row; nil before the first.
	Version ID
	// Claimed is true once the site row exists: the first sign-up has
	// become its administrator, or the site had people before.
	Claimed bool
	// CreatedAt is when the row was made (the audit log starts then).
	CreatedAt time.Time
	// SignupPolicy is SignupOpen, SignupInvite or SignupDomains;
	// SignupDomains the email domains allowed under SignupDomains.
	SignupPolicy  string
	SignupDomains []string
	// RoomCreation is RoomsByEveryone or RoomsByAdmins.
	RoomCreation string
	// DefaultRooms are the room keys every new person joins;
	// DefaultRoomsSet says an administrator chose them (also none).
	DefaultRooms    []string
	DefaultRoomsSet bool
}

// IsAdmin reports whether login is an administrator of the site.
func (s Site) IsAdmin(login string) bool { return slices.Contains(s.Admins, NameKey(login)) }

// Policy is the sign-up policy, open when never set.
func (s Site) Policy() string {
	if s.SignupPolicy == "" {
		return SignupOpen
	}
	return s.SignupPolicy
}

// Rooms is who creates rooms, everyone when never set.
func (s Site) Rooms() string {
	if s.RoomCreation == "" {
		return RoomsByEveryone
	}
	return s.RoomCreation
}

// DomainAllowed reports whether email's domain is one of the policy's.
func (s Site) DomainAllowed(email string) bool {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return false
	}
	return slices.Contains(s.SignupDomains, strings.ToLower(email[at+1:]))
}

// Settings is the form of the site's settings.
type Settings struct {
	SignupPolicy string
	// Domains is the domains, separated by commas or spaces.
	Domains      string
	RoomCreation string
}

// Validate checks f, returning the domains it lists (lower case), or a
// ValidationError.
func (f Settings) Validate() ([]string, error) {
	v := ValidationError{}
	switch f.SignupPolicy {
	case SignupOpen, SignupInvite, SignupDomains:
	default:
		v["signup_policy"] = "Choose open, by invitation, or by email domain."
	}
	switch f.RoomCreation {
	case RoomsByEveryone, RoomsByAdmins:
	default:
		v["room_creation"] = "Choose everyone or administrators only."
	}
	var domains []string
	for _, d := range strings.FieldsFunc(strings.ToLower(f.Domains), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
		d = strings.TrimPrefix(d, "@")
		if _, err := mail.ParseAddress("x@" + d); err != nil || !strings.Contains(d, ".") || len(d) > 253 {
			v["domains"] = "Write domains such as example.com, separated by commas."
			break
		}
		if !slices.Contains(domains, d) {
			domains = append(domains, d)
		}
	}
	if len(domains) > 50 {
		v["domains"] = "List at most 50 domains."
	}
	if f.SignupPolicy == SignupDomains && len(domains) == 0 && v["domains"] == "" {
		v["domains"] = "List at least one domain, such as example.com."
	}
	return domains, v.Err()
}

// Person is a person as the administration page lists them.
type Person struct {
	User
	Admin    bool
	Sessions int
	// LastSeen is when their newest session was last saved; zero if none.
	LastSeen time.Time
}

// Active reports whether the account is neither deactivated nor deleted.
func (u User) Active() bool { return u.Status == AccountActive }

// AdminCursor is where a page of the administration page's people starts: after this term
// and login.
type AdminCursor struct{ Term, Login string }

// AuditEntry is one administrative action.
type AuditEntry struct {
	ID     ID
	Actor  string
	Action string
	Target string
	Detail string
}

// Time is when the action was taken.
func (e AuditEntry) Time() time.Time { return e.ID.Time() }

// Audit actions.
const (
	AuditPromote      = "promote"
	AuditDemote       = "demote"
	AuditDeactivate   = "deactivate"
	AuditReactivate   = "reactivate"
	AuditEndSessions  = "end-sessions"
	AuditResetLink    = "reset-link"
	AuditSettings     = "settings"
	AuditSiteInvite   = "site-invite"
	AuditCreateAdmin  = "create-admin"
	AuditFirstAdmin   = "first-admin"
	AuditDeleteSelf   = "delete-account"
	AuditPasswordSet  = "password-reset"
	AuditInviteRevoke = "site-invite-revoke"
	AuditDefaultRooms = "default-rooms"
)

// SiteInvite is a link that lets people sign up under the invitation
// policy.
type SiteInvite struct {
	ID        string
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	// MaxUses is how many may sign up by it; 0 for any number.
	MaxUses int
}

// This file owns invitation links: what a link is, when it stops letting
// people in, and the form that makes one.

package chat

import "time"

const (
	// DefaultInviteTTL is how long a link lets people in unless its maker
	// says otherwise; MaxInviteTTL the longest allowed.
	DefaultInviteTTL = 7 * 24 * time.Hour
	MaxInviteTTL     = 90 * 24 * time.Hour
	// maxInviteUses bounds a link's uses; 0 is any number.
	maxInviteUses = 10_000
)

// NewInvite is the form that makes a link.
type NewInvite struct {
	// TTL is how long it works: DefaultInviteTTL when zero.
	TTL time.Duration
	// MaxUses is how many people may join by it; 0 for any number.
	MaxUses int
}

// Validate returns a ValidationError for a TTL or a number of uses out of
// range, or nil; it fills in the default TTL.
func (f *NewInvite) Validate() error {
	v := ValidationError{}
	if f.TTL == 0 {
		f.TTL = DefaultInviteTTL
	}
	if f.TTL < time.Minute || f.TTL > MaxInviteTTL {
		v["expires"] = "Choose between a minute and 90 days."
	}
	if f.MaxUses < 0 || f.MaxUses > maxInviteUses {
		v["max_uses"] = "Choose up to 10,000 uses, or leave it empty for any number."
	}
	return v.Err()
}

// Invite is an invitation link, without its token.
type Invite struct {
	// ID names the link to its room's admins (for revoking): the first
	// 8 bytes of the token's hash, in hex.
	ID        string
	Room      string
	CreatedBy UserRef
	CreatedAt time.Time
	ExpiresAt time.Time
	// MaxUses is how many people may join by it; 0 for any number.
	MaxUses int
	Revoked bool
	// RoomSince is the creation date of the room the link was made for
	// (zero for a link from before it was recorded).
	RoomSince time.Time
}

// RevokedMark is the key of link id's revocation mark in its room's
// InviteUses.
func RevokedMark(id string) string { return id + ":revoked" }

// Of reports whether the link belongs to r's incarnation: made for it,
// or, from before links recorded it, made after r began.
func (i Invite) Of(r Room) bool {
	if !i.RoomSince.IsZero() {
		return i.RoomSince.Equal(r.CreatedAt)
	}
	return !i.CreatedAt.Before(r.CreatedAt)
}

// For is why the link lets login into r (as read) no more at now, or nil:
// ErrNotFound for a link of another room that had the name (deleted
// since), one of Problem's errors, the room's revocation mark's
// ErrInviteRevoked, ErrInviteNotAdmin when r is closed and the link's
// maker holds no admin role in it, and ErrInviteRemoved when an admin
// removed login after the link was made.
func (i Invite) For(r Room, login string, now time.Time) error {
	if !i.Of(r) {
		return ErrNotFound
	}
	if err := i.Problem(now, r.InviteUses[i.ID]); err != nil {
		return err
	}
	if _, revoked := r.InviteUses[RevokedMark(i.ID)]; revoked {
		return ErrInviteRevoked
	}
	if r.Closed() && !r.HoldsAdmin(i.CreatedBy.Login) {
		return ErrInviteNotAdmin
	}
	if at, removed := r.Removed[login]; removed && !i.CreatedAt.After(at) {
		return ErrInviteRemoved
	}
	return nil
}

// Problem is why the link lets no one in at now, given the uses taken
// (ErrInviteRevoked, ErrInviteExpired, ErrInviteUsedUp), or nil.
func (i Invite) Problem(now time.Time, used int) error {
	switch {
	case i.Revoked:
		return ErrInviteRevoked
	case !now.Before(i.ExpiresAt):
		return ErrInviteExpired
	case i.MaxUses > 0 && used >= i.MaxUses:
		return ErrInviteUsedUp
	}
	return nil
}

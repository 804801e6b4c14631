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

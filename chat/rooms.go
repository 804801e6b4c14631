// This file owns rooms: a room as read with the standings it was asked
// about, its kinds, and the creation form.

package chat

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Room is a chat room with its creator and participants, read in one query.
type Room struct {
	// Name is the key: lower-case, in URLs, hub events, message
	// partitions and the users' lists of rooms.
	Name string
	// DisplayName is the name as its creator typed it ("Lobby" for "lobby").
	DisplayName  string
	Banner       string
	Creator      UserRef
	CreatorLogin string
	CreatedAt    time.Time
	// Participants are the participants read with the room, by login:
	// all of them (a read for a delete), or those whose standing was
	// asked for (RoomFor, WithStanding). A room of 10,000 members is not
	// read whole for one person's request.
	Participants map[string]UserRef
	// asked are the logins whose standing was read, unless all were.
	asked map[string]bool
	all   bool
	// Kind is KindOpen or KindClosed.
	Kind string
	// Admins are the logins of the admins other than the creator.
	Admins []string
	// InviteUses counts the uses taken of each invitation link, by its id.
	InviteUses map[string]int
	// Removed is when an admin last removed each person, by login: a
	// link made before then does not let them back in.
	Removed map[string]time.Time
	// Guard is the fence of statements of unknown outcome (see
	// fenceRoom); zero for null.
	Guard ID
	// Version changes with every change of the participants.
	Version ID
	// Members is how many participants the room has.
	Members int
}

// Room kinds: an open room is listed to everyone and anyone joins it; a
// closed room is seen by its members only, who join by being added or by
// an invitation link.
const (
	KindOpen   = "open"
	KindClosed = "closed"
)

// Closed reports whether the room is closed.
func (r Room) Closed() bool { return r.Kind == KindClosed }

// VisibleTo reports whether login may see the room at all: an open room
// is everyone's to see, a closed one its participants'.
func (r Room) VisibleTo(login string) bool { return !r.Closed() || r.HasParticipant(login) }

// IsAdmin reports whether login is a participant and an admin: the
// creator or a promoted member.
func (r Room) IsAdmin(login string) bool {
	return r.HasParticipant(login) && r.HoldsAdmin(login)
}

// HasParticipant reports whether login takes part in the room. The room
// must have been read with login's standing (or all participants): asking
// about anyone else is a programming error, and panics rather than answer
// "no" to a member.
func (r Room) HasParticipant(login string) bool {
	if !r.Knows(login) {
		panic(fmt.Sprintf("store: room %q was read without the standing of %q", r.Name, login))
	}
	_, ok := r.Participants[login]
	return ok
}

// Knows reports whether the room was read with login's standing.
func (r Room) Knows(login string) bool { return r.all || r.asked[login] }

// HoldsAdmin reports whether login is the creator or a promoted admin,
// whether or not still a participant (see IsAdmin).
func (r Room) HoldsAdmin(login string) bool {
	return r.CreatorLogin == login || slices.Contains(r.Admins, login)
}

// WithStanding is r with login's standing as given (nil: not a
// participant), read apart from the room (a cache holds them apart).
func (r Room) WithStanding(login string, entry *UserRef) Room {
	asked := make(map[string]bool, len(r.asked)+1)
	for l := range r.asked {
		asked[l] = true
	}
	asked[login] = true
	participants := make(map[string]UserRef, len(r.Participants)+1)
	for l, p := range r.Participants {
		participants[l] = p
	}
	delete(participants, login)
	if entry != nil {
		participants[login] = *entry
	}
	r.asked, r.Participants = asked, participants
	return r
}

// NewRoom is the room creation form.
type NewRoom struct {
	Name   string
	Banner string
	// Kind is KindOpen (also for "") or KindClosed.
	Kind string
}

// Validate returns a ValidationError naming each bad field, or nil. It
// cleans the fields in place (see cleanText); the name keeps the case it
// was typed in, and is stored under NameKey(Name).
func (f *NewRoom) Validate() error {
	f.Name = strings.TrimSpace(f.Name)
	v := ValidationError{}
	if !ValidName(f.Name) {
		v["room_name"] = nameProblem
	}
	checkField(v, "banner", &f.Banner, bannerRule)
	switch f.Kind {
	case "":
		f.Kind = KindOpen
	case KindOpen, KindClosed:
	default:
		v["kind"] = kindProblem
	}
	return v.Err()
}

// CheckKind returns a ValidationError unless kind is KindOpen or KindClosed.
func CheckKind(kind string) error {
	if kind != KindOpen && kind != KindClosed {
		return ValidationError{"kind": kindProblem}
	}
	return nil
}

// CheckBanner cleans a room's banner in place, and returns a
// ValidationError unless it is one line of at most 200 characters, or none.
func CheckBanner(banner *string) error {
	v := ValidationError{}
	checkField(v, "banner", banner, bannerRule)
	return v.Err()
}

// WithAllParticipants is r read with every participant: it knows the
// standing of anyone (see Knows).
func (r Room) WithAllParticipants(participants map[string]UserRef) Room {
	r.Participants, r.all = participants, true
	return r
}

// Member is one member of a room as an export carries it: who, and when
// they joined (zero for the creator, or from before it was recorded).
type Member struct {
	UserRef
	Joined time.Time
}

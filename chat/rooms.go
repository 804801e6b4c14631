// This file owns rooms: a room's header, a person's standing in it (read
// apart: a room of 10,000 members is never read whole for one request),
// the two together, a room with every participant (for a delete), its
// kinds, and the creation form.

package chat

import (
	"slices"
	"strings"
	"time"
)

// Room is a room's header: its name, creator, kind, admins and counts,
// with no one's standing (see RoomFor, Standing and RoomWithAll).
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

// Standing is one person's standing in a room, as read from their row
// (one row, whatever the room's size).
type Standing struct {
	Login string
	// Member says whether they take part in the room.
	Member bool
	// Ref is their entry as a participant; zero unless Member.
	Ref UserRef
}

// StandingOf is login's standing from the entry read for them: nil if
// they are not a participant.
func StandingOf(login string, entry *UserRef) Standing {
	if entry == nil {
		return Standing{Login: login}
	}
	return Standing{Login: login, Member: true, Ref: *entry}
}

// RoomFor is a room's header with one person's standing in it: what is
// read to decide what that person may see and do. Its questions are about
// that person alone; no one else's standing is in it.
type RoomFor struct {
	Room
	Standing Standing
}

// For is r with st, the standing of one person read apart from the header
// (a cache holds them apart).
func (r Room) For(st Standing) RoomFor { return RoomFor{Room: r, Standing: st} }

// Login is whose standing r holds.
func (r RoomFor) Login() string { return r.Standing.Login }

// IsMember reports whether the person takes part in the room.
func (r RoomFor) IsMember() bool { return r.Standing.Member }

// Visible reports whether the person may see the room at all: an open
// room is everyone's to see, a closed one its participants'.
func (r RoomFor) Visible() bool { return !r.Closed() || r.Standing.Member }

// IsAdmin reports whether the person is a participant and an admin: the
// creator or a promoted member.
func (r RoomFor) IsAdmin() bool { return r.Room.AdminIs(r.Standing) }

// AdminIs reports whether st is a participant's standing and an admin's:
// the creator or a promoted member.
func (r Room) AdminIs(st Standing) bool { return st.Member && r.HoldsAdmin(st.Login) }

// RoomWithAll is a room's header with every participant, read in one
// query of its partition: what a delete needs (it must clean every
// member's list), never a request's read.
type RoomWithAll struct {
	Room
	// Participants are all the room's participants, by login.
	Participants map[string]UserRef
}

// Has reports whether login takes part in the room.
func (r RoomWithAll) Has(login string) bool {
	_, ok := r.Participants[login]
	return ok
}

// For is the room with login's standing, which a read of every
// participant knows.
func (r RoomWithAll) For(login string) RoomFor {
	p, ok := r.Participants[login]
	if !ok {
		return r.Room.For(Standing{Login: login})
	}
	return r.Room.For(StandingOf(login, &p))
}

// RoomPage is one page of the list of all rooms.
type RoomPage struct {
	Rooms []Room
	// Next is the storage's opaque paging state for the next page; empty
	// on the last.
	Next []byte
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

// HoldsAdmin reports whether login is the creator or a promoted admin,
// whether or not still a participant (see AdminIs).
func (r Room) HoldsAdmin(login string) bool {
	return r.CreatorLogin == login || slices.Contains(r.Admins, login)
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

// Member is one member of a room as an export carries it: who, and when
// they joined (zero for the creator, or from before it was recorded).
type Member struct {
	UserRef
	Joined time.Time
}

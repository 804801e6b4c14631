// This file owns conversations: what rooms and DMs share (a Conversation,
// a Place to post in), DMs and their addresses, and a DM list's entries.

package chat

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

const (
	// DMPrefix starts a DM's conversation id; no room name can contain ':'.
	DMPrefix = "dm:"
	// MinDMMembers and MaxDMMembers bound the people in a DM.
	MinDMMembers, MaxDMMembers = 2, 8
	// MaxUnread is where an unread count stops: more is shown as "99+".
	MaxUnread = 100
)

// DMEpoch is the start of every DM: DMs are never deleted, so their
// messages have no earlier conversation to be told apart from.
var DMEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// Place is where messages are posted and read: a room (a Room header, a
// RoomFor with the poster's standing, a RoomWithAll), a DM, or a
// Conversation itself. The message functions take it, so rooms and DMs
// share one path.
type Place interface{ Conversation() Conversation }

// Conversation is itself.
func (c Conversation) Conversation() Conversation { return c }

// Conversation is where messages are posted and read: a room or a DM.
type Conversation struct {
	// ID is a room's name, or "dm:" and a DM's address.
	ID string
	// Since is when it started: messages of an earlier conversation with
	// the same ID (a deleted room) are older and never shown.
	Since time.Time
	// Members are who may read and post, by login: all of a DM's; of a
	// room's, the standing read with it (see RoomFor.Conversation), or
	// all for a RoomWithAll.
	Members map[string]UserRef
}

// Has reports whether login is a member.
func (c Conversation) Has(login string) bool {
	_, ok := c.Members[login]
	return ok
}

// IsDM reports whether a conversation id is a DM's.
func IsDM(id string) bool { return strings.HasPrefix(id, DMPrefix) }

// Conversation is the room as a conversation, with no one's standing:
// its members are not read.
func (r Room) Conversation() Conversation {
	return Conversation{ID: r.Name, Since: r.CreatedAt, Members: map[string]UserRef{}}
}

// Conversation is the room as a conversation whose members are the one
// person read, if they take part (more are read for the logins a text
// mentions: see Mentionable), never all of a room's rows.
func (r RoomFor) Conversation() Conversation {
	c := r.Room.Conversation()
	if r.Standing.Member {
		c.Members[r.Standing.Login] = r.Standing.Ref
	}
	return c
}

// Conversation is the room as a conversation with every participant.
func (r RoomWithAll) Conversation() Conversation {
	return Conversation{ID: r.Name, Since: r.CreatedAt, Members: r.Participants}
}

// RoomOf is the header of the room p is (a Room, a RoomFor or a
// RoomWithAll), or false for a DM or a bare Conversation.
func RoomOf(p Place) (Room, bool) {
	switch r := p.(type) {
	case Room:
		return r, true
	case RoomFor:
		return r.Room, true
	case RoomWithAll:
		return r.Room, true
	}
	return Room{}, false
}

// DM is a direct conversation between 2 to 8 people.
type DM struct {
	// Address is the members' logins, lower-case, sorted, joined by "+".
	Address string
	// Members, sorted by login.
	Members []UserRef
}

// Conversation is the DM as a conversation.
func (d DM) Conversation() Conversation {
	c := Conversation{ID: DMPrefix + d.Address, Since: DMEpoch, Members: make(map[string]UserRef, len(d.Members))}
	for _, m := range d.Members {
		c.Members[m.Login] = m
	}
	return c
}

// Others are the members other than login.
func (d DM) Others(login string) []UserRef {
	out := make([]UserRef, 0, len(d.Members))
	for _, m := range d.Members {
		if m.Login != login {
			out = append(out, m)
		}
	}
	return out
}

// DMAddress is the canonical address of a DM between logins: lower-case,
// sorted, without repeats, joined by "+". It returns an error wrapping
// ErrInvalid for a malformed login or fewer than 2 or more than 8 people.
func DMAddress(logins []string) (string, error) {
	seen := map[string]bool{}
	var out []string
	for _, l := range logins {
		l = strings.ToLower(strings.TrimSpace(l))
		if !ValidName(l) {
			return "", fmt.Errorf("store: dm member %q: %w", l, ErrInvalid)
		}
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	if len(out) < MinDMMembers || len(out) > MaxDMMembers {
		return "", fmt.Errorf("store: a dm has %d to %d people, not %d: %w", MinDMMembers, MaxDMMembers, len(out), ErrInvalid)
	}
	sort.Strings(out)
	return strings.Join(out, "+"), nil
}

// ParseDMAddress splits an address as found in a URL into its canonical
// form. The bool says whether the given form was already canonical.
func ParseDMAddress(address string) (string, bool, error) {
	canonical, err := DMAddress(strings.Split(address, "+"))
	return canonical, err == nil && canonical == address, err
}

// DMEntry is one line of a person's list of DMs.
type DMEntry struct {
	DM DM
	// Last is the newest message: its id, author and first characters.
	LastID      ID
	LastAuthor  UserRef
	LastExcerpt string
}

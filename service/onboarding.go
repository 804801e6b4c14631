// This file owns onboarding (issue 39): the rooms every new person joins
// on sign-up, which an administrator chooses (SetDefaultRooms; until one
// does, #general), and joining them.

package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/killrchat/killrchat/chat"
)

// GeneralRoom is the room a site that never chose its default rooms puts
// every newcomer in; the first one creates it.
const GeneralRoom = "general"

// generalBanner is #general's banner when a newcomer creates it.
const generalBanner = "Everyone is here: say hello."

// maxDefaultRooms bounds the default rooms, each a join on every sign-up.
const maxDefaultRooms = 20

// Onboarding stores the site's default rooms (store.Store).
type Onboarding interface {
	// DefaultRooms are the room keys new people join, and whether they
	// were ever set.
	DefaultRooms(ctx context.Context) ([]string, bool, error)
	// SetDefaultRooms replaces them.
	SetDefaultRooms(ctx context.Context, rooms []string) error
	// RecordPerson lists u in the people directory.
	RecordPerson(ctx context.Context, u chat.UserRef) error
	// People are a page of the directory (see store.People).
	People(ctx context.Context, prefix string, after chat.PeopleCursor, n int) ([]chat.UserRef, *chat.PeopleCursor, error)
}

// Onboard welcomes me, who just signed up: they are listed in the people
// directory, and join the default rooms (JoinDefaultRooms), whose names
// it returns.
func (s *Service) Onboard(ctx context.Context, me chat.UserRef) ([]string, error) {
	if err := s.Storage.RecordPerson(ctx, me); err != nil {
		return nil, err
	}
	return s.JoinDefaultRooms(ctx, me)
}

// People are up to n people of the directory whose login or a name
// starts with prefix (all with ""), after the cursor, and the cursor of
// the next page (nil on the last).
func (s *Service) People(ctx context.Context, prefix string, after chat.PeopleCursor, n int) ([]chat.UserRef, *chat.PeopleCursor, error) {
	return s.Storage.People(ctx, prefix, after, n)
}

// DefaultRooms are the rooms every new person joins, by key: the list an
// administrator set, or #general on a site where none did.
func (s *Service) DefaultRooms(ctx context.Context) ([]string, error) {
	rooms, set, err := s.Storage.DefaultRooms(ctx)
	if err != nil {
		return nil, err
	}
	if !set {
		return []string{GeneralRoom}, nil
	}
	return rooms, nil
}

// SetDefaultRooms makes rooms (names in any case, with or without "#")
// the rooms every new person joins, in that order, each once; none is a
// valid choice. A malformed name, or more than maxDefaultRooms, is a
// chat.ValidationError of field "rooms" and changes nothing. The rooms
// need not exist yet: a missing one is skipped at sign-up.
func (s *Service) SetDefaultRooms(ctx context.Context, rooms []string) error {
	keys, err := defaultRoomKeys(rooms)
	if err != nil {
		return err
	}
	return s.Storage.SetDefaultRooms(ctx, keys)
}

// ChooseDefaultRooms is SetDefaultRooms by the administrator actor (the
// administration's form), written to the audit log.
func (s *Service) ChooseDefaultRooms(ctx context.Context, actor string, rooms []string) error {
	keys, err := defaultRoomKeys(rooms)
	if err != nil {
		return err
	}
	if err := s.Storage.SetDefaultRooms(ctx, keys); err != nil {
		return err
	}
	s.audit(ctx, actor, chat.AuditDefaultRooms, "", "#"+strings.Join(keys, ", #"))
	return nil
}

// defaultRoomKeys are the keys of rooms, in order, each once, or why
// they cannot be the default rooms.
func defaultRoomKeys(rooms []string) ([]string, error) {
	var keys []string
	seen := map[string]bool{}
	for _, r := range rooms {
		r = strings.TrimPrefix(strings.TrimSpace(r), "#")
		if r == "" {
			continue
		}
		if !chat.ValidName(r) {
			return nil, chat.ValidationError{"rooms": fmt.Sprintf("%q is not a room name.", r)}
		}
		if k := chat.NameKey(r); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if len(keys) > maxDefaultRooms {
		return nil, chat.ValidationError{"rooms": fmt.Sprintf("At most %d default rooms.", maxDefaultRooms)}
	}
	return keys, nil
}

// JoinDefaultRooms makes me, who just signed up, a participant of the
// default rooms, and returns those they joined. #general, when it is the
// site's default and missing, is created with me as its creator (a race
// with another newcomer ends in a join). A room that is missing or
// closed is skipped and logged: a sign-up never fails for it.
func (s *Service) JoinDefaultRooms(ctx context.Context, me chat.UserRef) ([]string, error) {
	rooms, set, err := s.Storage.DefaultRooms(ctx)
	if err != nil {
		return nil, err
	}
	if !set {
		rooms = []string{GeneralRoom}
	}
	var joined []string
	for _, name := range rooms {
		_, err := s.JoinRoom(ctx, me, name)
		if errors.Is(err, chat.ErrNotFound) && !set {
			_, err = s.CreateRoom(ctx, me, chat.NewRoom{Name: name, Banner: generalBanner})
			if errors.Is(err, chat.ErrRoomExists) {
				_, err = s.JoinRoom(ctx, me, name)
			}
		}
		if err != nil {
			if errors.Is(err, chat.ErrUnavailable) {
				return joined, err
			}
			if s.Log != nil {
				s.Log.Warn("join a default room", "room", name, "login", me.Login, "err", err)
			}
			continue
		}
		joined = append(joined, name)
	}
	return joined, nil
}

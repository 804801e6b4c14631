// This file owns who may do what in a room (issue 21): its kind (open or
// closed), adding people, admins, removing members and the creator's
// hand-over on leave. Each change is one LWT on the room's partition
// (DESIGN rule 4) whose condition re-checks, inside Paxos, what the
// decision was based on: that the actor is still an admin (or member) and
// the target still a member. A room read from a cache never decides it:
// the room is read at SERIAL before each attempt.

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	setRoomKind = `UPDATE rooms SET kind = ? WHERE room_name = ? IF `
	setBanner   = `UPDATE rooms SET banner = ? WHERE room_name = ? IF `
	addToRoom   = `UPDATE rooms SET member = ?, joined = toTimestamp(now()), version = ?, members = ? WHERE room_name = ? AND since = ? AND login = ?
		IF creation_date = ? AND members = ? AND member = null AND `
	promoteMember = `UPDATE rooms SET admins = admins + ? WHERE room_name = ? AND since = ? AND login = ?
		IF member != null AND creation_date = ? AND `
	removeMember = `UPDATE rooms SET member = null, admins = admins - ?, removed = removed + ?, version = ?, members = ? WHERE room_name = ? AND since = ? AND login = ?
		IF member != null AND creation_date = ? AND members = ? AND creator_login != ? AND `
	// stillMember is the condition that someone is still a member, as
	// a statement of the batch: it writes their entry as it was read.
	stillMember = setMember + ` IF member != null AND creation_date = ?`

	// The actor's standing, checked in the LWT's conditions: a member of
	// an open room; the creator or an admin of any room, still a member
	// (their row, by stillMember in the same batch).
	asOpenMember = `kind != 'closed'`
	asCreator    = `creator_login = ?`
	asAdmin      = `admins CONTAINS ?`

	// changeAttempts bounds how often a change re-reads the room after
	// its condition failed because the room changed in between (each
	// failure means another change applied: a join by a link retries
	// once for each other joiner).
	changeAttempts = 50
)

// asAdminOf is the condition that login is still an admin of r, as it was
// when r was read, with its values.
func asAdminOf(r chat.Room, login string) (string, []any) {
	if r.CreatorLogin == login {
		return asCreator, []any{login}
	}
	return asAdmin, []any{login}
}

// change is a change's statement with the actor's row, which must still
// be a member's, unless the statement itself is on the actor's row.
func change(r chat.RoomFor, stmt string, values []any, onActorRow bool) []batchStmt {
	stmts := []batchStmt{{stmt, values}}
	if !onActorRow {
		stmts = append(stmts, batchStmt{stillMember, []any{r.Standing.Ref, r.Name, r.CreatedAt, r.Login(), r.CreatedAt}})
	}
	return stmts
}

// roomRead is what a change decides on: the room's header read at SERIAL
// with the actor's standing, the standing of the person the change is
// about (the actor's again when it is about no one else), and, for a
// creator's hand-over, the other admins' (never all 10,000 members').
type roomRead struct {
	chat.RoomFor
	who   chat.Standing
	heirs []chat.Standing
}

// readForChange reads the room named name (its key) at SERIAL with the
// standings a change of actor's about who ("" for none) needs, and the
// other admins' if heirs is set: two reads, the header's and their rows'.
func (s *Store) readForChange(ctx context.Context, name, actor, who string, heirs bool) (roomRead, error) {
	r, err := s.header(ctx, name, true)
	if err != nil {
		return roomRead{}, err
	}
	logins := []string{actor}
	switch {
	case heirs:
		logins = append(logins, r.Admins...)
	case who != "":
		logins = append(logins, who)
	}
	st, err := s.standings(ctx, r, true, logins)
	if err != nil {
		return roomRead{}, err
	}
	read := roomRead{RoomFor: r.For(st[0]), who: st[0]}
	if heirs {
		for _, a := range st[1:] {
			if a.Login != actor {
				read.heirs = append(read.heirs, a)
			}
		}
	} else if who != "" {
		read.who = st[1]
	}
	return read, nil
}

// changeRoom runs one change of the room named name by actor, about who
// ("" for no one else), as an LWT planned from the room read at SERIAL
// with their standings (and the other admins', if heirs: see
// readForChange): plan returns the statements (one partition's, in one
// conditional batch), or none when there is nothing to do, or an error to
// refuse. If the condition fails (the room changed in between), the room
// is read and planned again. done tells, from a SERIAL read, whether a
// timed-out attempt applied. It returns the room as read before the
// change that applied.
func (s *Store) changeRoom(ctx context.Context, op, name, actor, who string, heirs bool, plan func(roomRead) ([]batchStmt, error), done func(roomRead) bool) (roomRead, error) {
	if !chat.ValidName(name) {
		return roomRead{}, fmt.Errorf("store: %s %q: %w", op, name, chat.ErrNotFound)
	}
	name = chat.NameKey(name)
	for attempt := 0; attempt < changeAttempts; attempt++ {
		r, err := s.readForChange(ctx, name, actor, who, heirs)
		if err != nil {
			return roomRead{}, fmt.Errorf("store: %s: %w", op, err)
		}
		stmts, err := plan(r)
		if err != nil || len(stmts) == 0 {
			return r, err
		}
		applied, err := s.lwtBatch(ctx, op+" "+name, stmts, nil, func(ctx context.Context) (bool, error) {
			got, err := s.readForChange(ctx, name, actor, who, heirs)
			if errors.Is(err, chat.ErrNotFound) {
				return false, nil
			}
			return err == nil && done(got), err
		})
		if err != nil || applied {
			return r, err
		}
	}
	return roomRead{}, fmt.Errorf("store: %s %q: %w", op, name, chat.ErrConflict)
}

// refuse is the error for r's person trying what only an admin may do:
// chat.ErrNotFound when the room is closed to them, so an outsider learns
// nothing, else chat.ErrNotAdmin.
func refuse(r chat.RoomFor, op string) error {
	if !r.Visible() {
		return fmt.Errorf("store: %s %q by %q: %w", op, r.Name, r.Login(), chat.ErrNotFound)
	}
	return fmt.Errorf("store: %s %q by %q: %w", op, r.Name, r.Login(), chat.ErrNotAdmin)
}

// SetRoomKind makes the room open or closed, if actor is one of its
// admins. It returns a chat.ValidationError for another kind, chat.ErrNotFound,
// or chat.ErrNotAdmin.
func (s *Store) SetRoomKind(ctx context.Context, actor, room, kind string) (chat.Room, error) {
	if err := chat.CheckKind(kind); err != nil {
		return chat.Room{}, err
	}
	r, err := s.changeRoom(ctx, "set kind of", room, actor, "", false, func(r roomRead) ([]batchStmt, error) {
		if !r.IsAdmin() {
			return nil, refuse(r.RoomFor, "set kind of")
		}
		if r.Kind == kind {
			return nil, nil
		}
		cond, values := asAdminOf(r.Room, actor)
		return change(r.RoomFor, setRoomKind+cond, append([]any{kind, r.Name}, values...), false), nil
	}, func(r roomRead) bool { return r.Kind == kind })
	r.Kind = kind
	return r.Room, err
}

// SetBanner sets the room's banner (one line of at most 200 characters,
// or none) on actor's word, an admin's: an LWT on the room's partition
// whose condition checks that actor still is one. It returns a
// chat.ValidationError for a banner that is not one line or too long,
// chat.ErrNotFound (no such room, or closed to actor) or chat.ErrNotAdmin.
func (s *Store) SetBanner(ctx context.Context, actor, room, banner string) (chat.Room, error) {
	if err := chat.CheckBanner(&banner); err != nil {
		return chat.Room{}, err
	}
	r, err := s.changeRoom(ctx, "set the banner of", room, actor, "", false, func(r roomRead) ([]batchStmt, error) {
		if !r.IsAdmin() {
			return nil, refuse(r.RoomFor, "set the banner of")
		}
		if r.Banner == banner {
			return nil, nil
		}
		cond, values := asAdminOf(r.Room, actor)
		return change(r.RoomFor, setBanner+cond, append([]any{banner, r.Name}, values...), false), nil
	}, func(r roomRead) bool { return r.Banner == banner })
	r.Banner = banner
	return r.Room, err
}

// AddMember adds who to the room on actor's word: any member of an open
// room, an admin of a closed one. It is a no-op if who is a member
// already. It returns chat.ErrNotFound (no such room, or closed to actor),
// chat.ErrNotParticipant (actor is not a member of the open room) or
// chat.ErrNotAdmin; the room is returned as it is after the add, with
// who's standing.
func (s *Store) AddMember(ctx context.Context, actor string, room string, who chat.UserRef) (chat.RoomFor, error) {
	undo, err := s.listFirst(ctx, who.Login, room)
	if err != nil {
		return chat.RoomFor{}, err
	}
	before, err := s.changeRoom(ctx, "add to", room, actor, who.Login, false, func(r roomRead) ([]batchStmt, error) {
		if r.who.Member {
			return nil, nil
		}
		added := []any{who, gocql.TimeUUID(), r.Members + 1, r.Name, r.CreatedAt, who.Login, r.CreatedAt, r.Members}
		switch {
		case !r.Closed() && r.IsMember():
			return change(r.RoomFor, addToRoom+asOpenMember, added, actor == who.Login), nil
		case r.IsAdmin():
			cond, values := asAdminOf(r.Room, actor)
			return change(r.RoomFor, addToRoom+cond, append(added, values...), actor == who.Login), nil
		case !r.Closed():
			return nil, fmt.Errorf("store: add to %q by %q: %w", r.Name, actor, chat.ErrNotParticipant)
		}
		return nil, refuse(r.RoomFor, "add to")
	}, func(r roomRead) bool { return r.who.Member })
	if err != nil {
		return chat.RoomFor{}, undo(err)
	}
	return s.enlist(ctx, who.Login, before.Room)
}

// listFirst puts the room in login's list before an LWT that may make
// them a participant (see JoinRoom: a participant is then listed even if
// the outcome stays unknown), and returns what to do with the LWT's
// error: a refusal takes the entry away again, unless login took part
// already; an unknown outcome (chat.ErrUnavailable) leaves it, for ForgetRoom
// to drop on read if the LWT did not apply.
func (s *Store) listFirst(ctx context.Context, login, room string) (func(error) error, error) {
	r, err := s.roomFor(ctx, room, false, login)
	if err != nil {
		return nil, err
	}
	if err := s.addUserRoom(ctx, login, r.Room); err != nil {
		return nil, err
	}
	return func(cause error) error {
		if errors.Is(cause, chat.ErrUnavailable) || r.IsMember() {
			return cause
		}
		return errors.Join(cause, s.removeUserRoom(ctx, login, r.Name))
	}, nil
}

// MakeAdmin makes the member who an admin of the room, if actor is one.
// It returns chat.ErrNotFound (no such room or member, or closed to actor) or
// chat.ErrNotAdmin.
func (s *Store) MakeAdmin(ctx context.Context, actor, room, who string) (chat.Room, error) {
	r, err := s.changeRoom(ctx, "promote in", room, actor, who, false, func(r roomRead) ([]batchStmt, error) {
		if !r.IsAdmin() {
			return nil, refuse(r.RoomFor, "promote in")
		}
		if !r.who.Member {
			return nil, fmt.Errorf("store: promote %q in %q: %w", who, r.Name, chat.ErrNotFound)
		}
		if r.AdminIs(r.who) {
			return nil, nil
		}
		cond, values := asAdminOf(r.Room, actor)
		return change(r.RoomFor, promoteMember+cond, append([]any{[]string{who}, r.Name, r.CreatedAt, who, r.CreatedAt}, values...), actor == who), nil
	}, func(r roomRead) bool { return r.AdminIs(r.who) })
	if err == nil && !slices.Contains(r.Admins, who) && r.CreatorLogin != who {
		r.Admins = append(r.Admins, who)
	}
	return r.Room, err
}

// RemoveMember removes the member who from the room, if actor is an admin,
// and the room from who's list. The creator cannot be removed. It returns
// the room as it was before with who's standing then, or chat.ErrNotFound
// (no such room or member, or closed to actor), chat.ErrNotAdmin, or
// chat.ErrNotCreator for the creator.
func (s *Store) RemoveMember(ctx context.Context, actor, room, who string) (chat.RoomFor, error) {
	r, err := s.changeRoom(ctx, "remove from", room, actor, who, false, func(r roomRead) ([]batchStmt, error) {
		if !r.IsAdmin() {
			return nil, refuse(r.RoomFor, "remove from")
		}
		if !r.who.Member {
			return nil, fmt.Errorf("store: remove %q from %q: %w", who, r.Name, chat.ErrNotFound)
		}
		if who == r.CreatorLogin {
			return nil, fmt.Errorf("store: remove the creator of %q: %w", r.Name, chat.ErrNotCreator)
		}
		cond, values := asAdminOf(r.Room, actor)
		return change(r.RoomFor, removeMember+cond,
			append([]any{[]string{who}, map[string]time.Time{who: s.Now().UTC()}, gocql.TimeUUID(), r.Members - 1, r.Name, r.CreatedAt, who, r.CreatedAt, r.Members, who}, values...), actor == who), nil
	}, func(r roomRead) bool { return !r.who.Member })
	if err != nil {
		return chat.RoomFor{}, err
	}
	return r.Room.For(r.who), s.removeUserRoom(ctx, who, r.Name)
}

// handOver is a creator's leave: alone in the room, they just leave (the
// condition checks they still are alone); while others remain, in one LWT
// the creator leaves and an admin who is still a member becomes the
// creator, so a room always has exactly one creator. It returns
// chat.ErrHandOver if no other member is an admin.
func (s *Store) handOver(ctx context.Context, creator chat.UserRef, room string) error {
	_, err := s.changeRoom(ctx, "hand over", room, creator.Login, "", true, func(r roomRead) ([]batchStmt, error) {
		switch {
		case !r.IsMember():
			return nil, nil // left already
		case r.CreatorLogin != creator.Login:
			return nil, fmt.Errorf("store: hand over %q: %w", r.Name, chat.ErrConflict)
		case r.Members == 1:
			return []batchStmt{{leaveAlone, []any{gocql.TimeUUID(), r.Name, r.CreatedAt, creator.Login, creator.Login, guardValue(r.Version)}}}, nil
		}
		var heirs []chat.Standing
		for _, a := range r.heirs {
			if a.Member {
				heirs = append(heirs, a)
			}
		}
		if len(heirs) == 0 {
			return nil, fmt.Errorf("store: leave %q as its creator: %w", r.Name, chat.ErrHandOver)
		}
		heir := slices.MinFunc(heirs, func(a, b chat.Standing) int { return strings.Compare(a.Login, b.Login) })
		return []batchStmt{
			{handOverRoom, []any{[]string{heir.Login}, heir.Ref, heir.Login, gocql.TimeUUID(), r.Members - 1,
				r.Name, r.CreatedAt, creator.Login, r.CreatedAt, creator.Login, heir.Login, r.Members}},
			{stillMember, []any{heir.Ref, r.Name, r.CreatedAt, heir.Login, r.CreatedAt}},
		}, nil
	}, func(r roomRead) bool { return !r.IsMember() })
	if err != nil {
		return err
	}
	return s.removeUserRoom(ctx, creator.Login, chat.NameKey(room))
}

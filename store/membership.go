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

// these is the logins whose standing a change reads: always the same.
func these(logins ...string) func(chat.Room) []string {
	return func(chat.Room) []string { return logins }
}

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
func change(r chat.Room, actor string, stmt string, values []any, onActorRow bool) []batchStmt {
	stmts := []batchStmt{{stmt, values}}
	if !onActorRow {
		stmts = append(stmts, batchStmt{stillMember, []any{r.Participants[actor], r.Name, r.CreatedAt, actor, r.CreatedAt}})
	}
	return stmts
}

// changeRoom runs one change of the room named name as an LWT planned from
// the room read at SERIAL, with the standing of the logins standing
// names (the actor's, the target's: never all 10,000): plan returns the statements (one partition's,
// in one conditional batch), or none when there is nothing to do, or an
// error to refuse. If the condition
// fails (the room changed in between), the room is read and planned again.
// done tells, from a SERIAL read, whether a timed-out attempt applied. It
// returns the room as read before the change that applied.
func (s *Store) changeRoom(ctx context.Context, op, name string, standing func(chat.Room) []string, plan func(chat.Room) ([]batchStmt, error), done func(chat.Room) bool) (chat.Room, error) {
	if !chat.ValidName(name) {
		return chat.Room{}, fmt.Errorf("store: %s %q: %w", op, name, chat.ErrNotFound)
	}
	name = chat.NameKey(name)
	for attempt := 0; attempt < changeAttempts; attempt++ {
		r, err := s.room(ctx, name, true)
		if err == nil {
			r, err = s.withStanding(ctx, r, true, standing(r))
		}
		if err != nil {
			return chat.Room{}, fmt.Errorf("store: %s: %w", op, err)
		}
		stmts, err := plan(r)
		if err != nil || len(stmts) == 0 {
			return r, err
		}
		applied, err := s.lwtBatch(ctx, op+" "+name, stmts, nil, func(ctx context.Context) (bool, error) {
			got, err := s.room(ctx, name, true)
			if err == nil {
				got, err = s.withStanding(ctx, got, true, standing(got))
			}
			if errors.Is(err, chat.ErrNotFound) {
				return false, nil
			}
			return err == nil && done(got), err
		})
		if err != nil || applied {
			return r, err
		}
	}
	return chat.Room{}, fmt.Errorf("store: %s %q: %w", op, name, chat.ErrConflict)
}

// refuse is the error for actor trying what only an admin may do in r:
// chat.ErrNotFound when the room is closed to them, so an outsider learns
// nothing, else chat.ErrNotAdmin.
func refuse(r chat.Room, actor, op string) error {
	if !r.VisibleTo(actor) {
		return fmt.Errorf("store: %s %q by %q: %w", op, r.Name, actor, chat.ErrNotFound)
	}
	return fmt.Errorf("store: %s %q by %q: %w", op, r.Name, actor, chat.ErrNotAdmin)
}

// SetRoomKind makes the room open or closed, if actor is one of its
// admins. It returns a chat.ValidationError for another kind, chat.ErrNotFound,
// or chat.ErrNotAdmin.
func (s *Store) SetRoomKind(ctx context.Context, actor, room, kind string) (chat.Room, error) {
	if err := chat.CheckKind(kind); err != nil {
		return chat.Room{}, err
	}
	r, err := s.changeRoom(ctx, "set kind of", room, these(actor), func(r chat.Room) ([]batchStmt, error) {
		if !r.IsAdmin(actor) {
			return nil, refuse(r, actor, "set kind of")
		}
		if r.Kind == kind {
			return nil, nil
		}
		cond, values := asAdminOf(r, actor)
		return change(r, actor, setRoomKind+cond, append([]any{kind, r.Name}, values...), false), nil
	}, func(r chat.Room) bool { return r.Kind == kind })
	r.Kind = kind
	return r, err
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
	r, err := s.changeRoom(ctx, "set the banner of", room, these(actor), func(r chat.Room) ([]batchStmt, error) {
		if !r.IsAdmin(actor) {
			return nil, refuse(r, actor, "set the banner of")
		}
		if r.Banner == banner {
			return nil, nil
		}
		cond, values := asAdminOf(r, actor)
		return change(r, actor, setBanner+cond, append([]any{banner, r.Name}, values...), false), nil
	}, func(r chat.Room) bool { return r.Banner == banner })
	r.Banner = banner
	return r, err
}

// AddMember adds who to the room on actor's word: any member of an open
// room, an admin of a closed one. It is a no-op if who is a member
// already. It returns chat.ErrNotFound (no such room, or closed to actor),
// chat.ErrNotParticipant (actor is not a member of the open room) or
// chat.ErrNotAdmin; the room is returned as it is after the add.
func (s *Store) AddMember(ctx context.Context, actor string, room string, who chat.UserRef) (chat.Room, error) {
	undo, err := s.listFirst(ctx, who.Login, room)
	if err != nil {
		return chat.Room{}, err
	}
	before, err := s.changeRoom(ctx, "add to", room, these(actor, who.Login), func(r chat.Room) ([]batchStmt, error) {
		if r.HasParticipant(who.Login) {
			return nil, nil
		}
		added := []any{who, gocql.TimeUUID(), r.Members + 1, r.Name, r.CreatedAt, who.Login, r.CreatedAt, r.Members}
		switch {
		case !r.Closed() && r.HasParticipant(actor):
			return change(r, actor, addToRoom+asOpenMember, added, actor == who.Login), nil
		case r.IsAdmin(actor):
			cond, values := asAdminOf(r, actor)
			return change(r, actor, addToRoom+cond, append(added, values...), actor == who.Login), nil
		case !r.Closed():
			return nil, fmt.Errorf("store: add to %q by %q: %w", r.Name, actor, chat.ErrNotParticipant)
		}
		return nil, refuse(r, actor, "add to")
	}, func(r chat.Room) bool { return r.HasParticipant(who.Login) })
	if err != nil {
		return chat.Room{}, undo(err)
	}
	return s.enlist(ctx, who.Login, before)
}

// listFirst puts the room in login's list before an LWT that may make
// them a participant (see JoinRoom: a participant is then listed even if
// the outcome stays unknown), and returns what to do with the LWT's
// error: a refusal takes the entry away again, unless login took part
// already; an unknown outcome (chat.ErrUnavailable) leaves it, for ForgetRoom
// to drop on read if the LWT did not apply.
func (s *Store) listFirst(ctx context.Context, login, room string) (func(error) error, error) {
	r, err := s.room(ctx, room, false, login)
	if err != nil {
		return nil, err
	}
	if err := s.addUserRoom(ctx, login, r); err != nil {
		return nil, err
	}
	return func(cause error) error {
		if errors.Is(cause, chat.ErrUnavailable) || r.HasParticipant(login) {
			return cause
		}
		return errors.Join(cause, s.removeUserRoom(ctx, login, r.Name))
	}, nil
}

// MakeAdmin makes the member who an admin of the room, if actor is one.
// It returns chat.ErrNotFound (no such room or member, or closed to actor) or
// chat.ErrNotAdmin.
func (s *Store) MakeAdmin(ctx context.Context, actor, room, who string) (chat.Room, error) {
	r, err := s.changeRoom(ctx, "promote in", room, these(actor, who), func(r chat.Room) ([]batchStmt, error) {
		if !r.IsAdmin(actor) {
			return nil, refuse(r, actor, "promote in")
		}
		if !r.HasParticipant(who) {
			return nil, fmt.Errorf("store: promote %q in %q: %w", who, r.Name, chat.ErrNotFound)
		}
		if r.IsAdmin(who) {
			return nil, nil
		}
		cond, values := asAdminOf(r, actor)
		return change(r, actor, promoteMember+cond, append([]any{[]string{who}, r.Name, r.CreatedAt, who, r.CreatedAt}, values...), actor == who), nil
	}, func(r chat.Room) bool { return r.IsAdmin(who) })
	if err == nil && !slices.Contains(r.Admins, who) && r.CreatorLogin != who {
		r.Admins = append(r.Admins, who)
	}
	return r, err
}

// RemoveMember removes the member who from the room, if actor is an admin,
// and the room from who's list. The creator cannot be removed. It returns
// the room as it was before, or chat.ErrNotFound (no such room or member, or
// closed to actor), chat.ErrNotAdmin, or chat.ErrNotCreator for the creator.
func (s *Store) RemoveMember(ctx context.Context, actor, room, who string) (chat.Room, error) {
	r, err := s.changeRoom(ctx, "remove from", room, these(actor, who), func(r chat.Room) ([]batchStmt, error) {
		if !r.IsAdmin(actor) {
			return nil, refuse(r, actor, "remove from")
		}
		if !r.HasParticipant(who) {
			return nil, fmt.Errorf("store: remove %q from %q: %w", who, r.Name, chat.ErrNotFound)
		}
		if who == r.CreatorLogin {
			return nil, fmt.Errorf("store: remove the creator of %q: %w", r.Name, chat.ErrNotCreator)
		}
		cond, values := asAdminOf(r, actor)
		return change(r, actor, removeMember+cond,
			append([]any{[]string{who}, map[string]time.Time{who: s.Now().UTC()}, gocql.TimeUUID(), r.Members - 1, r.Name, r.CreatedAt, who, r.CreatedAt, r.Members, who}, values...), actor == who), nil
	}, func(r chat.Room) bool { return !r.HasParticipant(who) })
	if err != nil {
		return chat.Room{}, err
	}
	return r, s.removeUserRoom(ctx, who, r.Name)
}

// handOver is a creator's leave: alone in the room, they just leave (the
// condition checks they still are alone); while others remain, in one LWT
// the creator leaves and an admin who is still a member becomes the
// creator, so a room always has exactly one creator. It returns
// chat.ErrHandOver if no other member is an admin.
func (s *Store) handOver(ctx context.Context, creator chat.UserRef, room string) error {
	_, err := s.changeRoom(ctx, "hand over", room, func(r chat.Room) []string { return append([]string{creator.Login}, r.Admins...) }, func(r chat.Room) ([]batchStmt, error) {
		switch {
		case !r.HasParticipant(creator.Login):
			return nil, nil // left already
		case r.CreatorLogin != creator.Login:
			return nil, fmt.Errorf("store: hand over %q: %w", r.Name, chat.ErrConflict)
		case r.Members == 1:
			return []batchStmt{{leaveAlone, []any{gocql.TimeUUID(), r.Name, r.CreatedAt, creator.Login, creator.Login, guardValue(r.Version)}}}, nil
		}
		var heirs []string
		for _, a := range r.Admins {
			if a != creator.Login && r.HasParticipant(a) {
				heirs = append(heirs, a)
			}
		}
		if len(heirs) == 0 {
			return nil, fmt.Errorf("store: leave %q as its creator: %w", r.Name, chat.ErrHandOver)
		}
		slices.Sort(heirs)
		heir := heirs[0]
		return []batchStmt{
			{handOverRoom, []any{[]string{heir}, r.Participants[heir], heir, gocql.TimeUUID(), r.Members - 1,
				r.Name, r.CreatedAt, creator.Login, r.CreatedAt, creator.Login, heir, r.Members}},
			{stillMember, []any{r.Participants[heir], r.Name, r.CreatedAt, heir, r.CreatedAt}},
		}, nil
	}, func(r chat.Room) bool { return !r.HasParticipant(creator.Login) })
	if err != nil {
		return err
	}
	return s.removeUserRoom(ctx, creator.Login, chat.NameKey(room))
}

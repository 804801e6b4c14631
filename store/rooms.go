// This file owns chat rooms. Every write to a room's partition of rooms is
// a lightweight transaction (mixing Paxos and plain writes on one partition
// is unsafe), but for the range delete of a deleted room's own rows:
// create IF no room has the name, join and leave IF the room (of the
// incarnation read) exists, delete IF the creator and the version of the
// participants are what was just read.

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
	"golang.org/x/sync/errgroup"
)

// room_name is the key: the lower-case form of the name (see NameKey), as
// in every table keyed by room; display_name is the form the creator typed.
// A room is one partition of rooms (schema/016_room_members.cql): its
// header in static columns, each member a row of the room's incarnation
// (since = creation_date). Every write to a room's partition is an LWT,
// but for the range delete of a deleted room's rows (cleanUpRoom), which
// no LWT reads again.
const (
	// roomStatics are the header's columns: the static columns of rooms,
	// every one of which the delete deletes.
	roomStatics = `display_name, creation_date, banner, creator, creator_login, kind, admins, invite_uses, guard, version, members, removed`
	roomHeader  = `room_name, ` + roomStatics
	// The header and every member, in one read of the partition (for a
	// delete, which must know whose lists to clean).
	selectRoom = `SELECT ` + roomHeader + `, since, login, member FROM rooms WHERE room_name = ?`
	// The header alone; of several rooms; of all rooms, a page at a time.
	selectHeader  = `SELECT ` + roomHeader + ` FROM rooms WHERE room_name = ? LIMIT 1`
	selectHeaders = `SELECT DISTINCT ` + roomHeader + ` FROM rooms WHERE room_name IN ?`
	selectRooms   = `SELECT DISTINCT ` + roomHeader + ` FROM rooms`
	// Some members' rows; a page of members, by login.
	selectEntries     = `SELECT login, member FROM rooms WHERE room_name = ? AND since = ? AND login IN ?`
	selectMemberPage  = `SELECT login, member FROM rooms WHERE room_name = ? AND since = ? AND login > ? LIMIT ?`
	selectMembersFrom = `SELECT login, member FROM rooms WHERE room_name = ? AND since = ? AND login >= ? LIMIT ?`
	// One member's row, with the header's creation date, without the
	// other members.
	selectStanding = `SELECT creation_date, member FROM rooms WHERE room_name = ? AND since = ? AND login = ?`
	selectCreated  = `SELECT creation_date FROM rooms WHERE room_name = ? LIMIT 1`
	// The creation: the header IF no room has the name (a deleted room's
	// header is deleted), and the creator's row, in one conditional batch.
	createRoom = `UPDATE rooms SET display_name = ?, creation_date = ?, banner = ?, creator = ?, creator_login = ?,
		kind = ?, admins = null, invite_uses = null, guard = null, version = ?, members = 1, removed = null WHERE room_name = ? IF creator_login = null`
	// setMember writes a member's row; with conditions, it is how a
	// batch checks that someone still is a member (writing their entry
	// as it was read).
	setMember = `UPDATE rooms SET member = ? WHERE room_name = ? AND since = ? AND login = ?`
	// Joining without an invitation: "creation_date = ?" is IF EXISTS
	// for the incarnation read (every room has one; a deleted room's
	// header has none), so no join resurrects a deleted room, and a
	// closed room refuses it. "guard = ?" (as read) lets an unknown
	// outcome be fenced (see fenceJoin).
	joinRoom = `UPDATE rooms SET member = ?, joined = toTimestamp(now()), version = ?, members = ? WHERE room_name = ? AND since = ? AND login = ?
		IF creation_date = ? AND kind != 'closed' AND guard = ? AND members = ? AND member = null`
	// Anyone's leave but the creator's.
	leaveRoom = `UPDATE rooms SET member = null, admins = admins - ?, version = ?, members = ? WHERE room_name = ? AND since = ? AND login = ?
		IF creation_date = ? AND creator_login != ? AND members = ? AND member != null`
	// The creator's leave: alone in the room (the version is the one
	// read with the creator as the only member), or handing the creator
	// role to an admin who is still a member, in the same batch.
	leaveAlone = `UPDATE rooms SET member = null, version = ?, members = 0 WHERE room_name = ? AND since = ? AND login = ?
		IF creator_login = ? AND version = ?`
	handOverRoom = `UPDATE rooms SET member = null, admins = admins - ?, creator = ?, creator_login = ?, version = ?, members = ?
		WHERE room_name = ? AND since = ? AND login = ? IF creation_date = ? AND creator_login = ? AND admins CONTAINS ? AND members = ?`
	// The delete takes the header away IF the creator and the version
	// (so the members) are what was just read.
	deleteRoom = `DELETE ` + roomStatics + ` FROM rooms WHERE room_name = ? IF creator_login = ? AND version = ? AND guard = ?`
	// A deleted room's rows, by its incarnation: a plain range delete,
	// which no room made again under the name (a later since) shares.
	deleteRoomMembers = `DELETE FROM rooms WHERE room_name = ? AND since = ?`
	// fenceRoom moves the guard on, IF the room exists and its guard is
	// still the one a statement of unknown outcome carries (and, for a
	// join, IF the person is still not a member): then that statement
	// has not applied, and never will (schema/015_room_guard.cql).
	fenceRoom       = `UPDATE rooms SET guard = ? WHERE room_name = ? IF creator_login != null AND guard = ?`
	fenceRoomJoiner = `UPDATE rooms SET guard = ? WHERE room_name = ? AND since = ? AND login = ?
		IF creation_date = ? AND guard = ? AND member = null`

	selectRoomBuckets    = `SELECT time_bucket FROM messages_bucket WHERE room_name = ?`
	deleteBucketMessages = `DELETE FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`
	deleteRoomBuckets    = `DELETE FROM messages_bucket WHERE room_name = ?`
	// What a deleted room keeps under its name alone, written with their
	// own timestamps: deleted as of the room's delete (forgetRoomState).
	deleteRoomMarker = `DELETE FROM read_markers USING TIMESTAMP ? WHERE login = ? AND conversation = ?`
	deleteRoomHead   = `DELETE FROM conversation_heads USING TIMESTAMP ? WHERE conversation = ?`
	deleteRoomLevels = `DELETE FROM conversation_levels USING TIMESTAMP ? WHERE conversation = ?`

	// maxBatch bounds the statements in one logged batch.
	maxBatch = 100
	// deleteAttempts bounds how often a delete re-reads the participants
	// after someone joined or left in between.
	deleteAttempts = 20
)

// readRooms reads the rows of selectRoom: the room's header once, and as
// its participants every member of its incarnation. A partition without
// a header (a deleted room whose rows are not yet cleaned up) is no room.
func (s *Store) readRooms(q *gocql.Query) (map[string]chat.RoomWithAll, error) {
	found := map[string]chat.RoomWithAll{}
	iter := q.Iter()
	var (
		r      chat.Room
		since  time.Time
		login  string
		member *chat.UserRef
	)
	for iter.Scan(append(headerOf(&r), &since, &login, &member)...) {
		if r.CreatorLogin == "" {
			continue
		}
		got, ok := found[r.Name]
		if !ok {
			got = chat.RoomWithAll{Room: fixHeader(r), Participants: map[string]chat.UserRef{}}
			found[r.Name] = got
		}
		if login != "" && member != nil && since.Equal(got.CreatedAt) {
			got.Participants[login] = *member
		}
		r, member = chat.Room{}, nil
	}
	if err := iter.Close(); err != nil {
		return nil, err
	}
	return found, nil
}

// headerOf is where a row of roomHeader scans into.
func headerOf(r *chat.Room) []any {
	return []any{&r.Name, &r.DisplayName, &r.CreatedAt, &r.Banner, &r.Creator, &r.CreatorLogin,
		&r.Kind, &r.Admins, &r.InviteUses, (*gocql.UUID)(&r.Guard), (*gocql.UUID)(&r.Version), &r.Members, &r.Removed}
}

// fixHeader fills what rooms from before a column existed lack.
func fixHeader(r chat.Room) chat.Room {
	if r.Kind == "" { // a room from before kinds existed
		r.Kind = chat.KindOpen
	}
	if r.DisplayName == "" { // a row from before display_name existed
		r.DisplayName = r.Name
	}
	return r
}

// readHeaders reads rows of roomHeader, skipping partitions without a
// header (a deleted room's rows not yet cleaned up).
func readHeaders(iter *gocql.Iter, each func(chat.Room)) error {
	var r chat.Room
	for iter.Scan(headerOf(&r)...) {
		if r.CreatorLogin != "" {
			each(fixHeader(r))
		}
		r = chat.Room{}
	}
	return iter.Close()
}

// CreateRoom creates a room by INSERT ... IF NOT EXISTS under the name's
// lower-case key, with the creator as its first participant, then adds it
// to the creator's rooms; the room is returned with the creator's
// standing. It returns a chat.ValidationError for bad input and
// chat.ErrRoomExists if the name is taken in any case ("LOBBY" when "Lobby"
// exists).
func (s *Store) CreateRoom(ctx context.Context, creator chat.UserRef, f chat.NewRoom) (chat.RoomFor, error) {
	if err := f.Validate(); err != nil {
		return chat.RoomFor{}, err
	}
	r := chat.Room{
		Name: chat.NameKey(f.Name), DisplayName: f.Name, Banner: f.Banner, Creator: creator, CreatorLogin: creator.Login,
		CreatedAt: s.Now().UTC().Truncate(time.Millisecond), Kind: f.Kind,
	}
	// The creator's list first, as a join does: if the outcome stays
	// unknown the creator, should the room exist, is listed; an entry for
	// a room not made is dropped on read (ForgetRoom).
	if err := s.addUserRoom(ctx, creator.Login, r); err != nil {
		return chat.RoomFor{}, err
	}
	r.Version, r.Members = chat.ID(gocql.TimeUUID()), 1
	applied, err := s.lwtBatch(ctx, "create room "+r.Name, []batchStmt{
		{createRoom, []any{r.DisplayName, r.CreatedAt, r.Banner, r.Creator, r.CreatorLogin, r.Kind, gocql.UUID(r.Version), r.Name}},
		{setMember, []any{creator, r.Name, r.CreatedAt, creator.Login}},
	}, nil,
		func(ctx context.Context) (bool, error) {
			got, err := s.header(ctx, r.Name, true)
			if err != nil {
				return false, err
			}
			return got.CreatorLogin == r.CreatorLogin && got.CreatedAt.Equal(r.CreatedAt), nil
		})
	if err != nil {
		return chat.RoomFor{}, err
	}
	if !applied {
		// Taken: the entry goes, unless the creator takes part in the
		// room that has the name.
		taken, err := s.roomFor(ctx, r.Name, false, creator.Login)
		if err == nil && taken.IsMember() {
			err = s.addUserRoom(ctx, creator.Login, taken.Room) // its title as it was
		} else {
			err = s.removeUserRoom(ctx, creator.Login, r.Name)
		}
		if err != nil {
			return chat.RoomFor{}, err
		}
		return chat.RoomFor{}, fmt.Errorf("store: create room %q: %w", r.DisplayName, chat.ErrRoomExists)
	}
	if err := s.recordRoomName(ctx, r); err != nil {
		return chat.RoomFor{}, err
	}
	return r.For(chat.StandingOf(creator.Login, &creator)), nil
}

// Room returns the header of the room named name, in any case, or
// chat.ErrNotFound; no one's standing is read (see RoomFor).
func (s *Store) Room(ctx context.Context, name string) (chat.Room, error) {
	return s.header(ctx, name, false)
}

// RoomFor returns the room named name with login's standing.
func (s *Store) RoomFor(ctx context.Context, name, login string) (chat.RoomFor, error) {
	return s.roomFor(ctx, name, false, login)
}

// roomFor reads a room's header and login's standing, at SERIAL
// consistency if serial is set (to see every committed LWT and settle any
// in flight): two reads, the header's and login's row.
func (s *Store) roomFor(ctx context.Context, name string, serial bool, login string) (chat.RoomFor, error) {
	r, err := s.header(ctx, name, serial)
	if err != nil {
		return chat.RoomFor{}, err
	}
	st, err := s.standings(ctx, r, serial, []string{login})
	if err != nil {
		return chat.RoomFor{}, err
	}
	return r.For(st[0]), nil
}

// header reads a room's header, at SERIAL consistency if serial is set.
func (s *Store) header(ctx context.Context, name string, serial bool) (chat.Room, error) {
	q, name, err := s.roomQuery(ctx, selectHeader, name, serial)
	if err != nil {
		return chat.Room{}, err
	}
	var r chat.Room
	err = q.Scan(headerOf(&r)...)
	if errors.Is(err, gocql.ErrNotFound) || (err == nil && r.CreatorLogin == "") {
		return chat.Room{}, fmt.Errorf("store: room %q: %w", name, chat.ErrNotFound)
	}
	if err != nil {
		return chat.Room{}, s.fail("read room "+name, err)
	}
	return fixHeader(r), nil
}

// roomQuery is stmt for the room named name (in any case), at SERIAL if
// serial is set, with the name's key; chat.ErrNotFound for a name no room can
// have.
func (s *Store) roomQuery(ctx context.Context, stmt, name string, serial bool) (*gocql.Query, string, error) {
	if !chat.ValidName(name) {
		return nil, "", fmt.Errorf("store: room %q: %w", name, chat.ErrNotFound)
	}
	name = chat.NameKey(name)
	q, err := s.query(ctx, stmt, name)
	if err != nil {
		return nil, "", err
	}
	if serial {
		q = q.Consistency(gocql.Consistency(s.cfg.SerialConsistency))
	}
	return q, name, nil
}

// standings are the standings of logins in r (at SERIAL if serial), in
// their order: one read of their rows.
func (s *Store) standings(ctx context.Context, r chat.Room, serial bool, logins []string) ([]chat.Standing, error) {
	found, err := s.entries(ctx, r, serial, logins)
	if err != nil {
		return nil, err
	}
	out := make([]chat.Standing, len(logins))
	for i, l := range logins {
		var entry *chat.UserRef
		if p, ok := found[l]; ok {
			entry = &p
		}
		out[i] = chat.StandingOf(l, entry)
	}
	return out, nil
}

// roomAll reads a room with every participant, at SERIAL if serial is set:
// one read of the whole partition, for a delete.
func (s *Store) roomAll(ctx context.Context, name string, serial bool) (chat.RoomWithAll, error) {
	q, name, err := s.roomQuery(ctx, selectRoom, name, serial)
	if err != nil {
		return chat.RoomWithAll{}, err
	}
	found, err := s.readRooms(q)
	if err != nil {
		return chat.RoomWithAll{}, s.fail("read room "+name, err)
	}
	r, ok := found[name]
	if !ok {
		return chat.RoomWithAll{}, fmt.Errorf("store: room %q: %w", name, chat.ErrNotFound)
	}
	return r, nil
}

// entries reads the rows of logins in r's incarnation: the participants
// among them.
func (s *Store) entries(ctx context.Context, r chat.Room, serial bool, logins []string) (map[string]chat.UserRef, error) {
	q, err := s.query(ctx, selectEntries, r.Name, r.CreatedAt, logins)
	if err != nil {
		return nil, err
	}
	if serial {
		q = q.Consistency(gocql.Consistency(s.cfg.SerialConsistency))
	}
	found := map[string]chat.UserRef{}
	iter := q.Iter()
	var (
		login  string
		member *chat.UserRef
	)
	for iter.Scan(&login, &member) {
		if member != nil {
			found[login] = *member
		}
		member = nil
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read members of "+r.Name, err)
	}
	return found, nil
}

// Standing reads whether login takes part in r (the incarnation read),
// with their entry: one row.
func (s *Store) Standing(ctx context.Context, r chat.Room, login string) (chat.Standing, error) {
	st, err := s.standings(ctx, r, false, []string{login})
	if err != nil {
		return chat.Standing{}, err
	}
	return st[0], nil
}

// MembersOf returns which of logins take part in r, with their entries:
// one read of their rows, whatever the room's size.
func (s *Store) MembersOf(ctx context.Context, r chat.Room, logins []string) (map[string]chat.UserRef, error) {
	if len(logins) == 0 {
		return map[string]chat.UserRef{}, nil
	}
	return s.entries(ctx, r, false, logins)
}

// RoomMembersFrom returns at most n participants of r whose login starts
// with prefix, in login order: a slice of the room's rows.
func (s *Store) RoomMembersFrom(ctx context.Context, r chat.Room, prefix string, n int) ([]chat.UserRef, error) {
	q, err := s.query(ctx, selectMembersFrom, r.Name, r.CreatedAt, prefix, n)
	if err != nil {
		return nil, err
	}
	people, err := s.readMembers(q, r)
	var out []chat.UserRef
	for _, p := range people {
		if strings.HasPrefix(p.Login, prefix) {
			out = append(out, p)
		}
	}
	return out, err
}

// RoomMembers returns at most n participants of r whose login comes after
// after ("" for the first), in login order: a slice of the room's rows.
func (s *Store) RoomMembers(ctx context.Context, r chat.Room, after string, n int) ([]chat.UserRef, error) {
	q, err := s.query(ctx, selectMemberPage, r.Name, r.CreatedAt, after, n)
	if err != nil {
		return nil, err
	}
	return s.readMembers(q, r)
}

// readMembers reads rows of login and member.
func (s *Store) readMembers(q *gocql.Query, r chat.Room) ([]chat.UserRef, error) {
	var (
		out    []chat.UserRef
		login  string
		member *chat.UserRef
	)
	iter := q.Iter()
	for iter.Scan(&login, &member) {
		if member != nil {
			out = append(out, *member)
		}
		member = nil
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read members of "+r.Name, err)
	}
	return out, nil
}

// standing reads whether login takes part in the room created at since,
// without the other participants, and when the room of that name was
// created (zero if there is none). It returns chat.ErrNotFound if there is no
// such room.
func (s *Store) standing(ctx context.Context, room string, since time.Time, login string) (time.Time, bool, error) {
	q, err := s.query(ctx, selectStanding, room, since, login)
	if err != nil {
		return time.Time{}, false, err
	}
	var created time.Time
	var entry *chat.UserRef
	err = q.Scan(&created, &entry)
	if err == nil && entry != nil && created.Equal(since) {
		return created, true, nil
	}
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return time.Time{}, false, s.fail("read room "+room, err)
	}
	// Not a member of that room: is there a room, and which?
	if q, err = s.query(ctx, selectCreated, room); err != nil {
		return time.Time{}, false, err
	}
	created = time.Time{}
	err = q.Scan(&created)
	if errors.Is(err, gocql.ErrNotFound) || (err == nil && created.IsZero()) {
		return time.Time{}, false, fmt.Errorf("store: room %q: %w", room, chat.ErrNotFound)
	}
	if err != nil {
		return time.Time{}, false, s.fail("read room "+room, err)
	}
	return created, false, nil
}

// Rooms returns a page of at most n rooms starting at the paging state
// from a previous page (nil for the first). It returns chat.ErrInvalid if the
// paging state is not one Cassandra accepts.
func (s *Store) Rooms(ctx context.Context, state []byte, n int) (chat.RoomPage, error) {
	q, err := s.query(ctx, selectRooms)
	if err != nil {
		return chat.RoomPage{}, err
	}
	iter := q.PageSize(n).PageState(state).Iter()
	var page chat.RoomPage
	err = readHeaders(iter, func(r chat.Room) { page.Rooms = append(page.Rooms, r) })
	page.Next = iter.PageState()
	if err != nil {
		var reqErr gocql.RequestError
		if len(state) > 0 && errors.As(err, &reqErr) && reqErr.Code() == gocql.ErrCodeProtocol {
			return chat.RoomPage{}, fmt.Errorf("store: list rooms: paging state: %w (%w)", chat.ErrInvalid, err)
		}
		return chat.RoomPage{}, s.fail("list rooms", err)
	}
	return page, nil
}

// MyRooms returns the rooms login takes part in, each with login's
// standing: their list's rooms in one read, and login's row in each (one
// read a room, at once), and repairs the list on read: a listed room that
// no longer exists (its delete raced a join), or that login does not take
// part in, is removed from it.
func (s *Store) MyRooms(ctx context.Context, login string) ([]chat.RoomFor, error) {
	u, err := s.User(ctx, login)
	if err != nil {
		return nil, err
	}
	found, err := s.RoomsNamed(ctx, u.ChatRooms)
	if err != nil {
		return nil, err
	}
	var (
		g      errgroup.Group
		mu     sync.Mutex
		joined = map[string]chat.RoomFor{}
	)
	g.SetLimit(8)
	for _, r := range found {
		g.Go(func() error {
			st, err := s.Standing(ctx, r, login)
			mu.Lock()
			joined[r.Name] = r.For(st)
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rooms := make([]chat.RoomFor, 0, len(found))
	for _, name := range u.ChatRooms {
		r, ok := joined[name]
		if ok && r.IsMember() {
			rooms = append(rooms, r)
			continue
		}
		forgot, err := s.ForgetRoom(ctx, login, name)
		if err != nil {
			return nil, err
		}
		if !forgot && ok {
			// A participant after all (a join just applied).
			if r, err = s.RoomFor(ctx, name, login); err == nil && r.IsMember() {
				rooms = append(rooms, r)
			}
		}
	}
	return rooms, nil
}

// RoomsNamed reads the headers of the rooms with these name keys in one
// query; a name with no room is not in the map.
func (s *Store) RoomsNamed(ctx context.Context, names []string) (map[string]chat.Room, error) {
	found := map[string]chat.Room{}
	if len(names) == 0 {
		return found, nil
	}
	q, err := s.query(ctx, selectHeaders, names)
	if err != nil {
		return nil, err
	}
	if err := readHeaders(q.Iter(), func(r chat.Room) { found[r.Name] = r }); err != nil {
		return nil, s.fail("read rooms", err)
	}
	return found, nil
}

// ForgetRoom removes a room from login's list, if the list still names
// it, when the room no longer exists or login does not take part in it
// (read at SERIAL): repair on read, after a join raced a delete or a join
// whose outcome stayed unknown did not apply (the list is written first,
// see JoinRoom). It tells whether it removed the entry.
func (s *Store) ForgetRoom(ctx context.Context, login, room string) (bool, error) {
	room = chat.NameKey(room)
	r, err := s.roomFor(ctx, room, true, login)
	if err == nil && r.IsMember() {
		return false, nil
	}
	if err != nil && !errors.Is(err, chat.ErrNotFound) {
		return false, err
	}
	u, err := s.User(ctx, login)
	if err != nil || !slices.Contains(u.ChatRooms, room) {
		return false, err
	}
	s.log.Info("store: repaired a dangling room entry", "login", login, "room", room)
	return true, s.removeUserRoom(ctx, login, room)
}

// JoinRoom adds user to the room (named in any case) with UPDATE ... IF
// EXISTS, so a join that races a delete can never resurrect the room, then
// adds the room to the user's list. It returns chat.ErrNotFound if the room does
// not exist (any more).
func (s *Store) JoinRoom(ctx context.Context, user chat.UserRef, room string) (chat.RoomFor, error) {
	// A plain read first: the user's list needs the display name, and a
	// room that does not exist costs no Paxos round.
	before, err := s.roomFor(ctx, room, false, user.Login)
	if err != nil {
		return chat.RoomFor{}, fmt.Errorf("store: join room: %w", err)
	}
	room = before.Name
	// The list first: a participant is then always listed, even when the
	// join's outcome stays unknown (a node lost mid-join, e2e/chaos); an
	// entry whose join did not apply is dropped on read (ForgetRoom).
	if err := s.addUserRoom(ctx, user.Login, before.Room); err != nil {
		return chat.RoomFor{}, err
	}
	refused := func() error {
		if !before.IsMember() {
			if err := s.removeUserRoom(ctx, user.Login, room); err != nil {
				return err
			}
		}
		return fmt.Errorf("store: join room %q: %w", room, chat.ErrNotFound)
	}
	target := before.Room
	for attempt := 0; ; attempt++ {
		applied, err := s.lwt(ctx, "join room "+room, joinRoom,
			[]any{user, gocql.TimeUUID(), target.Members + 1, room, target.CreatedAt, user.Login,
				target.CreatedAt, guardValue(target.Guard), target.Members}, nil,
			func(ctx context.Context) (bool, error) { return s.settleJoin(ctx, target, user.Login) })
		if err != nil {
			return chat.RoomFor{}, err
		}
		if applied {
			break
		}
		// Refused: the room is gone, closed or made again, or its guard
		// moved since the read (a fence), or an unknown outcome was
		// settled as not applied (and fenced): then again, with the room
		// as it is.
		r, err := s.roomFor(ctx, room, true, user.Login)
		if errors.Is(err, chat.ErrNotFound) {
			return chat.RoomFor{}, refused()
		}
		if err != nil {
			return chat.RoomFor{}, fmt.Errorf("store: join room: %w", err)
		}
		if r.IsMember() {
			target = r.Room
			break // in already (or the unknown outcome applied after all)
		}
		if r.Closed() || attempt == changeAttempts {
			return chat.RoomFor{}, refused()
		}
		target = r.Room
	}
	return s.enlist(ctx, user.Login, target)
}

// settleJoin tells whether a join of login into room (as read: its
// incarnation and guard), whose outcome is unknown, applied; if it did not, it makes sure
// it never will (a frozen coordinator may still hold it) by moving the
// guard on, IF login is still not a participant.
func (s *Store) settleJoin(ctx context.Context, room chat.Room, login string) (bool, error) {
	r, err := s.roomFor(ctx, room.Name, true, login)
	switch {
	case errors.Is(err, chat.ErrNotFound):
		return false, nil // and no join can bring it back
	case err != nil:
		return false, err
	case !r.CreatedAt.Equal(room.CreatedAt):
		return false, nil // made again: the late join's condition can never hold
	case r.IsMember():
		return true, nil
	case r.Guard != room.Guard:
		return false, nil // the late join's condition can never hold
	}
	applied, err := s.lwt(ctx, "fence a join of "+room.Name, fenceRoomJoiner,
		[]any{gocql.TimeUUID(), room.Name, room.CreatedAt, login, room.CreatedAt, guardValue(room.Guard)}, nil, nil)
	if err != nil || applied {
		return false, err
	}
	// Gone, the guard moved (the late join can never apply), or it
	// applied meanwhile.
	r, err = s.roomFor(ctx, room.Name, true, login)
	if errors.Is(err, chat.ErrNotFound) {
		return false, nil
	}
	return err == nil && r.CreatedAt.Equal(room.CreatedAt) && r.IsMember(), err
}

// settleDelete tells whether a delete of room, whose outcome is unknown
// and which carried guard, applied; if it did not, it makes sure it never
// will (a frozen coordinator may still hold it: e2e/chaos saw a delete
// answered "not found" apply seconds later) by moving the guard on.
func (s *Store) settleDelete(ctx context.Context, room string, guard chat.ID) (bool, error) {
	_, err := s.header(ctx, room, true)
	if errors.Is(err, chat.ErrNotFound) {
		return true, nil // only the creator deletes, so it was this delete
	}
	if err != nil {
		return false, err
	}
	applied, err := s.lwt(ctx, "fence a delete of "+room, fenceRoom, []any{gocql.TimeUUID(), room, guardValue(guard)}, nil, nil)
	if err != nil || applied {
		return false, err
	}
	// Gone (the delete applied meanwhile) or the guard moved (it never
	// will).
	_, err = s.header(ctx, room, true)
	if errors.Is(err, chat.ErrNotFound) {
		return true, nil
	}
	return false, err
}

// guardValue is g as a statement's value: null for the zero UUID.
func guardValue(g chat.ID) any {
	if g == (chat.ID{}) {
		return nil
	}
	return gocql.UUID(g)
}

// uuidOf is a timeuuid from a CAS answer's previous values (zero for null).
func uuidOf(v any) chat.ID {
	switch u := v.(type) {
	case gocql.UUID:
		return chat.ID(u)
	case *gocql.UUID:
		if u != nil {
			return chat.ID(*u)
		}
	}
	return chat.ID{}
}

// enlist adds the room to login's list once login was added to its
// participants (a join, an add, an invitation), and returns the room as
// it is now. A delete may have applied between the LWT and the list
// update, and its clean-up may have run before the update: it re-reads
// (SERIAL) and undoes, with chat.ErrNotFound.
func (s *Store) enlist(ctx context.Context, login string, before chat.Room) (chat.RoomFor, error) {
	if err := s.addUserRoom(ctx, login, before); err != nil {
		return chat.RoomFor{}, err
	}
	r, err := s.roomFor(ctx, before.Name, true, login)
	if errors.Is(err, chat.ErrNotFound) {
		if err := s.removeUserRoom(ctx, login, before.Name); err != nil {
			return chat.RoomFor{}, err
		}
		return chat.RoomFor{}, fmt.Errorf("store: room %q: deleted meanwhile: %w", before.Name, chat.ErrNotFound)
	}
	if err == nil && r.DisplayName != before.DisplayName {
		// Deleted and created again, in another case, since the first read.
		err = s.addUserRoom(ctx, login, r.Room)
	}
	return r, err
}

// LeaveRoom removes user from the room (an LWT, like every rooms
// write) and the room from the user's list. A creator who leaves while
// others remain hands the creator role to an admin in the same LWT (see
// handOver). It returns chat.ErrNotFound if the room does not exist (the
// user's list is cleaned either way) and chat.ErrHandOver if the creator has no
// admin to hand over to.
func (s *Store) LeaveRoom(ctx context.Context, user chat.UserRef, room string) error {
	if !chat.ValidName(room) {
		return fmt.Errorf("store: leave room %q: %w", room, chat.ErrNotFound)
	}
	room = chat.NameKey(room)
	// Not the creator's leave (decided inside the LWT, on the header the
	// read found): a creator's fails, and hands over.
	r, err := s.roomFor(ctx, room, false, user.Login)
	for attempt := 0; attempt < changeAttempts; attempt++ {
		if err == nil {
			since := r.CreatedAt
			var applied bool
			applied, err = s.lwt(ctx, "leave room "+room, leaveRoom,
				[]any{[]string{user.Login}, gocql.TimeUUID(), r.Members - 1, room, since, user.Login, since, user.Login, r.Members}, nil,
				func(ctx context.Context) (bool, error) {
					got, err := s.roomFor(ctx, room, true, user.Login)
					if errors.Is(err, chat.ErrNotFound) {
						return false, nil
					}
					return err == nil && got.CreatedAt.Equal(since) && !got.IsMember(), err
				})
			if err != nil {
				return err
			}
			if applied {
				return s.removeUserRoom(ctx, user.Login, room)
			}
			// Not applied: the room is gone or made again, the user
			// created it, or an unknown outcome was settled as not
			// applied. The room as it is says which; the list follows
			// the participants, never the other way (chaos: a settled
			// leave took the room off a list while its owner stayed a
			// participant).
			r, err = s.roomFor(ctx, room, true, user.Login)
		}
		switch {
		case errors.Is(err, chat.ErrNotFound):
			if err := s.removeUserRoom(ctx, user.Login, room); err != nil {
				return err
			}
			return fmt.Errorf("store: leave room %q: %w", room, chat.ErrNotFound)
		case err != nil:
			return err
		case r.CreatorLogin == user.Login:
			return s.handOver(ctx, user, room)
		case !r.IsMember():
			return s.removeUserRoom(ctx, user.Login, room) // left after all
		}
		// Still a participant: the settled attempt did not apply; again.
	}
	return fmt.Errorf("store: leave room %q: %w", room, chat.ErrConflict)
}

// DeleteRoom deletes the room if login created it: DELETE ... IF
// creator_login = login AND version = the version read with the
// participants (every change of them sets a new one). If
// someone joined or left in between, it re-reads and tries again (bounded).
// After it applies, the room leaves every participant's list and all its
// messages and buckets are deleted (in the background, should the first
// try fail: the delete has applied, see retryCleanUp). It returns chat.ErrNotFound, chat.ErrNotCreator,
// or chat.ErrConflict when the participants kept changing.
func (s *Store) DeleteRoom(ctx context.Context, login, name string) (chat.RoomWithAll, error) {
	return s.DeleteRoomFenced(ctx, login, name, nil)
}

// DeleteRoomFenced is DeleteRoom with fence called between the delete's
// LWT and the clean-up (when the LWT applied): the caller's fence returns
// once no post that checked the room before can still be writing
// (live/fence), so the clean-up deletes every message such a post
// stored. A fence's error is logged; the clean-up runs anyway.
func (s *Store) DeleteRoomFenced(ctx context.Context, login, name string, fence func(ctx context.Context, room string) error) (chat.RoomWithAll, error) {
	name = chat.NameKey(name)
	for attempt := 0; attempt < deleteAttempts; attempt++ {
		r, err := s.roomAll(ctx, name, true)
		if err != nil {
			return chat.RoomWithAll{}, err
		}
		if r.CreatorLogin != login {
			return chat.RoomWithAll{}, fmt.Errorf("store: delete room %q by %q: %w", name, login, chat.ErrNotCreator)
		}
		prev := map[string]any{}
		gone := s.Now()
		applied, err := s.lwt(ctx, "delete room "+name, deleteRoom, []any{name, login, guardValue(r.Version), guardValue(r.Guard)}, prev,
			func(ctx context.Context) (bool, error) { return s.settleDelete(ctx, name, r.Guard) })
		if err != nil {
			return chat.RoomWithAll{}, err
		}
		if applied {
			if fence != nil {
				if err := fence(ctx, name); err != nil {
					s.log.Warn("store: the fence of a deleted room did not hold everywhere", "room", name, "err", err)
				}
			}
			if err := s.cleanUpRoom(ctx, r, gone); err != nil {
				// The room is deleted: that is the answer. What it
				// leaves is invisible (a room made again under its name
				// starts later, see Conversation.Since) and is cleaned
				// up in the background.
				s.log.Warn("store: the clean-up of a deleted room failed; it is tried again in the background", "room", name, "err", err)
				go s.retryCleanUp(r, gone)
			}
			return r, nil
		}
		if c, _ := prev["creator_login"].(string); c != "" && c != login {
			return chat.RoomWithAll{}, fmt.Errorf("store: delete room %q by %q: %w", name, login, chat.ErrNotCreator)
		}
		// The participants (their version) or the guard changed since the read, the room
		// is gone, or an unknown outcome was settled as not applied (and
		// fenced): read again.
	}
	return chat.RoomWithAll{}, fmt.Errorf("store: delete room %q: %w", name, chat.ErrConflict)
}

// cleanUpRetries and cleanUpBackoff bound the background clean-up of a
// deleted room (see retryCleanUp): about ten minutes in all.
const (
	cleanUpRetries = 12
	cleanUpBackoff = 3 * time.Second
)

// retryCleanUp tries the clean-up of the deleted room r again, backing
// off, until it succeeds or a room of the same name exists again (whose
// new messages share r's partitions: what r left stays, unseen).
func (s *Store) retryCleanUp(r chat.RoomWithAll, gone time.Time) {
	wait := cleanUpBackoff
	for attempt := 1; attempt <= cleanUpRetries; attempt++ {
		time.Sleep(wait)
		wait = min(2*wait, time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 4*s.cfg.Timeout)
		_, err := s.header(ctx, r.Name, true)
		if !errors.Is(err, chat.ErrNotFound) {
			cancel()
			if err == nil {
				s.log.Warn("store: a deleted room's name is taken again; its clean-up stops", "room", r.Name)
				return
			}
			continue
		}
		err = s.cleanUpRoom(ctx, r, gone)
		cancel()
		if err == nil {
			s.log.Info("store: a deleted room is cleaned up", "room", r.Name, "attempt", attempt)
			return
		}
	}
	s.log.Error("store: the clean-up of a deleted room gave up; its messages stay, unseen", "room", r.Name)
}

// cleanUpRoom runs after a room's row is deleted (at gone, or just
// after): it removes the room from every participant's list and deletes
// every message bucket and every attachment (chunks included) of the room,
// its invitation links, in logged batches so each batch completes even if
// this process dies midway; and its head, markers and levels (see
// forgetRoomState).
func (s *Store) cleanUpRoom(ctx context.Context, r chat.RoomWithAll, gone time.Time) error {
	sess, err := s.db()
	if err != nil {
		return err
	}
	if err := s.forgetRoomState(ctx, r, gone); err != nil {
		return err
	}
	var stmts []batchStmt
	for login := range r.Participants {
		stmts = append(stmts, batchStmt{removeUserRoom, []any{[]string{r.Name}, []string{r.Name}, login}})
	}
	q, err := s.query(ctx, selectRoomBuckets, r.Name)
	if err != nil {
		return err
	}
	iter := q.Iter()
	var bucket int
	for iter.Scan(&bucket) {
		stmts = append(stmts, batchStmt{deleteBucketMessages, []any{r.Name, bucket}})
		stmts = append(stmts, batchStmt{deleteBucketReactions, []any{r.Name, bucket}})
	}
	if err := iter.Close(); err != nil {
		return s.fail("list buckets of "+r.Name, err)
	}
	stmts = append(stmts, batchStmt{deleteRoomMembers, []any{r.Name, r.CreatedAt}},
		batchStmt{deleteRoomBuckets, []any{r.Name}},
		batchStmt{deleteRoomName, []any{r.CreatedAt.UnixMicro(), initialOf(r.Name), r.Name}})
	// Its files go with its messages: deletes only, so the batches stay
	// small (a chunk is never written in a batch).
	files, err := s.conversationAttachmentDeletes(ctx, r.Name)
	if err != nil {
		return err
	}
	stmts = append(stmts, files...)
	links, err := s.roomInviteDeletes(ctx, r.Room)
	if err != nil {
		return err
	}
	stmts = append(stmts, links...)
	for start := 0; start < len(stmts); start += maxBatch {
		b := sess.NewBatch(gocql.LoggedBatch).WithContext(ctx)
		for _, st := range stmts[start:min(start+maxBatch, len(stmts))] {
			b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: st.stmt, Args: st.values, Idempotent: true}) // deletes
		}
		if err := sess.ExecuteBatch(b); err != nil {
			return s.fail("clean up room "+r.Name, err)
		}
	}
	return nil
}

// forgetRoomState deletes what else the deleted room r kept under its
// name alone: its head, the read markers (with mention heads and levels)
// of its participants and of whoever set a level in it, and its push
// levels. They are written with their own timestamps (a message's time,
// DESIGN rule 10), so the deletes carry gone, the time of the room's
// delete: they take everything of r and nothing a room made again under
// the name writes after it. Mentions and search postings are keyed by
// person or term and are dropped on read instead (older than the room of
// the name).
func (s *Store) forgetRoomState(ctx context.Context, r chat.RoomWithAll, gone time.Time) error {
	levels, err := s.ConversationLevels(ctx, r.Name)
	if err != nil {
		return err
	}
	logins := make([]string, 0, len(r.Participants)+len(levels))
	for login := range r.Participants {
		logins = append(logins, login)
	}
	for login := range levels {
		if _, in := r.Participants[login]; !in {
			logins = append(logins, login)
		}
	}
	at := gone.UnixMicro()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, login := range logins {
		g.Go(func() error { return s.exec(gctx, "forget the marker of "+login, deleteRoomMarker, at, login, r.Name) })
	}
	g.Go(func() error { return s.exec(gctx, "forget the head of "+r.Name, deleteRoomHead, at, r.Name) })
	g.Go(func() error { return s.exec(gctx, "forget the levels of "+r.Name, deleteRoomLevels, at, r.Name) })
	return g.Wait()
}

type batchStmt struct {
	stmt   string
	values []any
}

func (s *Store) addUserRoom(ctx context.Context, login string, room chat.Room) error {
	q, err := s.query(ctx, addUserRoom, []string{room.Name}, map[string]string{room.Name: room.DisplayName}, login)
	if err != nil {
		return err
	}
	if err := q.Exec(); err != nil {
		return s.fail("add room to "+login, err)
	}
	return nil
}

func (s *Store) removeUserRoom(ctx context.Context, login, room string) error {
	q, err := s.query(ctx, removeUserRoom, []string{room}, []string{room}, login)
	if err != nil {
		return err
	}
	if err := q.Exec(); err != nil {
		return s.fail("remove room from "+login, err)
	}
	return nil
}

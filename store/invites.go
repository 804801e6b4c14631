// This file owns invitation links (issue 21): a random token of 256 bits,
// given out once in the link and stored only as its sha256, with an expiry
// and an optional number of uses. The uses taken live in the room's own
// partition (rooms.invite_uses, a static column), so joining by a link is one LWT that
// adds the participant and takes a use together, conditioned on the count
// just read: racing joiners can never take more uses than the link has.

package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertInvite = `INSERT INTO room_invites (token_hash, invite_id, room_name, created_by, created_at, expires_at, max_uses, revoked, room_since)
		VALUES (?, ?, ?, ?, ?, ?, ?, false, ?) USING TTL ?`
	insertRoomInvite = `INSERT INTO room_invites_by_room (room_name, invite_id, token_hash, created_by, created_at, expires_at, max_uses, revoked, room_since)
		VALUES (?, ?, ?, ?, ?, ?, ?, false, ?) USING TTL ?`
	selectInvite = `SELECT invite_id, room_name, created_by, created_at, expires_at, max_uses, revoked, room_since
		FROM room_invites WHERE token_hash = ?`
	selectRoomInvites = `SELECT invite_id, room_name, created_by, created_at, expires_at, max_uses, revoked, room_since, token_hash
		FROM room_invites_by_room WHERE room_name = ?`
	selectRoomInvite = `SELECT invite_id, room_name, created_by, created_at, expires_at, max_uses, revoked, room_since, token_hash
		FROM room_invites_by_room WHERE room_name = ? AND invite_id = ?`
	// A deleted room's links end with it (cleanUpRoom).
	deleteInvite      = `DELETE FROM room_invites WHERE token_hash = ?`
	deleteRoomInvites = `DELETE FROM room_invites_by_room WHERE room_name = ? AND invite_id = ?`
	revokeInvite      = `UPDATE room_invites USING TTL ? SET revoked = true WHERE token_hash = ?`
	revokeRoomInvite  = `UPDATE room_invites_by_room USING TTL ? SET revoked = true WHERE room_name = ? AND invite_id = ?`
	// The join by link: "creation_date = ?" is IF EXISTS (rule 2) for the
	// link's incarnation of the room, and the link's revocation mark (see
	// RevokeInvite) must not be there. The kind, creator and admins as
	// read keep a member's link from admitting anyone once the room is
	// closed; removed[joiner] as read, a removed person from coming back
	// by a link made before the removal (Invite.For).
	joinByInvite = `UPDATE rooms SET member = ?, joined = toTimestamp(now()), version = ?, members = ?, invite_uses = invite_uses + ?
		WHERE room_name = ? AND since = ? AND login = ?
		IF creation_date = ? AND members = ? AND member = null AND invite_uses[?] = ? AND invite_uses[?] = null
		AND kind = ? AND creator_login = ? AND admins = ? AND removed[?] = ?`
	// The revocation's mark, in the room's partition beside the uses, by
	// an LWT, so that a join that read the link before it was revoked
	// fails its condition once it is.
	markRevoked = `UPDATE rooms SET invite_uses = invite_uses + ? WHERE room_name = ? IF creator_login != null`

	// inviteKept is how long a link's row outlives its expiry, so it still
	// gets its own "expired" page.
	inviteKept = 30 * 24 * time.Hour
)

func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CreateInvite makes a link to the room for actor: any member of an open
// room, an admin of a closed one. It returns the token (the only time it
// is known) and the link, or a chat.ValidationError, chat.ErrNotFound,
// chat.ErrNotParticipant or chat.ErrNotAdmin.
func (s *Store) CreateInvite(ctx context.Context, actor chat.UserRef, room string, f chat.NewInvite) (string, chat.Invite, error) {
	if err := f.Validate(); err != nil {
		return "", chat.Invite{}, err
	}
	r, err := s.RoomFor(ctx, room, actor.Login)
	if err != nil {
		return "", chat.Invite{}, err
	}
	if err := mayInvite(r); err != nil {
		return "", chat.Invite{}, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", chat.Invite{}, fmt.Errorf("store: invite token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	hash := tokenHash(token)
	now := s.Now().UTC().Truncate(time.Millisecond)
	inv := chat.Invite{ID: hex.EncodeToString(hash[:8]), Room: r.Name, CreatedBy: actor, CreatedAt: now,
		ExpiresAt: now.Add(f.TTL), MaxUses: f.MaxUses, RoomSince: r.CreatedAt}
	ttl := int((f.TTL + inviteKept) / time.Second)
	var uses any
	if f.MaxUses > 0 {
		uses = f.MaxUses
	}
	// The room's row first: a link that the list misses could not be revoked.
	if err := s.exec(ctx, "list invite of "+r.Name, insertRoomInvite,
		r.Name, inv.ID, hash, actor, now, inv.ExpiresAt, uses, r.CreatedAt, ttl); err != nil {
		return "", chat.Invite{}, err
	}
	if err := s.exec(ctx, "create invite to "+r.Name, insertInvite,
		hash, inv.ID, r.Name, actor, now, inv.ExpiresAt, uses, r.CreatedAt, ttl); err != nil {
		return "", chat.Invite{}, err
	}
	return token, inv, nil
}

// mayInvite is nil if r's person may make links to r or add people to it.
func mayInvite(r chat.RoomFor) error {
	switch {
	case r.IsAdmin(), !r.Closed() && r.IsMember():
		return nil
	case !r.Closed():
		return fmt.Errorf("store: invite to %q by %q: %w", r.Name, r.Login(), chat.ErrNotParticipant)
	}
	return refuse(r, "invite to")
}

func scanInvite(scan func(...any) error, hash *[]byte) (chat.Invite, error) {
	var inv chat.Invite
	dest := []any{&inv.ID, &inv.Room, &inv.CreatedBy, &inv.CreatedAt, &inv.ExpiresAt, &inv.MaxUses, &inv.Revoked, &inv.RoomSince}
	if hash != nil {
		dest = append(dest, hash)
	}
	err := scan(dest...)
	return inv, err
}

// Invite returns the link with this token, or chat.ErrNotFound (never made,
// or so long expired that it is gone).
func (s *Store) Invite(ctx context.Context, token string) (chat.Invite, error) {
	if len(token) == 0 || len(token) > 100 {
		return chat.Invite{}, fmt.Errorf("store: invite: %w", chat.ErrNotFound)
	}
	hash := tokenHash(token)
	q, err := s.query(ctx, selectInvite, hash)
	if err != nil {
		return chat.Invite{}, err
	}
	inv, err := scanInvite(q.Scan, nil)
	if errors.Is(err, gocql.ErrNotFound) {
		return chat.Invite{}, fmt.Errorf("store: invite: %w", chat.ErrNotFound)
	}
	if err != nil {
		return chat.Invite{}, s.fail("read invite", err)
	}
	return inv, nil
}

// Invites returns the links of the room r (of its incarnation: not those
// of a room deleted before under the name), for its admins, oldest first.
func (s *Store) Invites(ctx context.Context, r chat.Room) ([]chat.Invite, error) {
	all, err := s.roomInvites(ctx, r.Name)
	if err != nil {
		return nil, err
	}
	var out []chat.Invite
	for _, inv := range all {
		if inv.Of(r) {
			out = append(out, inv.Invite)
		}
	}
	return out, nil
}

// listedInvite is a link as its room's list holds it, with its token's
// hash (the key of its own row).
type listedInvite struct {
	chat.Invite
	hash []byte
}

// roomInvites returns every link listed under the room's name.
func (s *Store) roomInvites(ctx context.Context, room string) ([]listedInvite, error) {
	q, err := s.query(ctx, selectRoomInvites, chat.NameKey(room))
	if err != nil {
		return nil, err
	}
	iter := q.Iter()
	var out []listedInvite
	scanner := iter.Scanner()
	for scanner.Next() {
		var hash []byte
		inv, err := scanInvite(scanner.Scan, &hash)
		if err != nil {
			iter.Close()
			return nil, s.fail("scan invites", err)
		}
		out = append(out, listedInvite{inv, hash})
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("list invites of "+room, err)
	}
	slices.SortFunc(out, func(a, b listedInvite) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// RevokeInvite revokes the room's link id, if actor is an admin of the
// room. It returns chat.ErrNotFound (no such room or link, or the room is closed
// to actor) or chat.ErrNotAdmin.
func (s *Store) RevokeInvite(ctx context.Context, actor, room, id string) error {
	r, err := s.RoomFor(ctx, room, actor)
	if err != nil {
		return err
	}
	if !r.IsAdmin() {
		return refuse(r, "revoke invite to")
	}
	q, err := s.query(ctx, selectRoomInvite, r.Name, id)
	if err != nil {
		return err
	}
	var hash []byte
	inv, err := scanInvite(q.Scan, &hash)
	if errors.Is(err, gocql.ErrNotFound) || err == nil && !inv.Of(r.Room) {
		return fmt.Errorf("store: revoke invite %q: %w", id, chat.ErrNotFound)
	}
	if err != nil {
		return s.fail("read invite "+id, err)
	}
	// The room's mark first: from its LWT on, no join by the link can
	// apply, whatever the join read of the link before (JoinByInvite's
	// condition), so a revocation that answers is one no join outlives.
	_, err = s.changeRoom(ctx, "revoke invite to", r.Name, actor, "", false, func(r roomRead) ([]batchStmt, error) {
		if !r.IsAdmin() {
			return nil, refuse(r.RoomFor, "revoke invite to")
		}
		if _, done := r.InviteUses[chat.RevokedMark(id)]; done {
			return nil, nil
		}
		return []batchStmt{{markRevoked, []any{map[string]int{chat.RevokedMark(id): 1}, r.Name}}}, nil
	}, func(r roomRead) bool { _, done := r.InviteUses[chat.RevokedMark(id)]; return done })
	if err != nil {
		return err
	}
	// The revoked cell lives as long as the rest of the row.
	ttl := int(time.Until(inv.ExpiresAt.Add(inviteKept)) / time.Second)
	if ttl < 1 {
		return nil
	}
	if err := s.exec(ctx, "revoke invite", revokeInvite, ttl, hash); err != nil {
		return err
	}
	return s.exec(ctx, "revoke invite", revokeRoomInvite, ttl, r.Name, id)
}

// JoinByInvite adds user to the link's room and takes one of its uses, in
// one LWT conditioned on the uses just read; a member already in the room
// takes no use. It returns the room with user's standing, or
// chat.ErrNotFound (no such link or room), chat.ErrInviteRevoked,
// chat.ErrInviteExpired, chat.ErrInviteUsedUp, or chat.ErrConflict if
// others kept taking uses in between.
func (s *Store) JoinByInvite(ctx context.Context, user chat.UserRef, token string) (chat.RoomFor, error) {
	inv, err := s.Invite(ctx, token)
	if err != nil {
		return chat.RoomFor{}, err
	}
	return s.joinByInvite(ctx, user, inv)
}

// joinByInvite is JoinByInvite with the link as read, perhaps before it
// was revoked: the room's revocation mark still refuses the join.
func (s *Store) joinByInvite(ctx context.Context, user chat.UserRef, inv chat.Invite) (chat.RoomFor, error) {
	undo, err := s.listFirst(ctx, user.Login, inv.Room)
	if err != nil {
		return chat.RoomFor{}, err
	}
	before, err := s.changeRoom(ctx, "join by invite", inv.Room, user.Login, "", false, func(r roomRead) ([]batchStmt, error) {
		if r.IsMember() {
			return nil, nil // a member takes no use
		}
		if err := inv.For(r.Room, user.Login, s.Now()); err != nil {
			return nil, fmt.Errorf("store: join %q by invite: %w", r.Name, err)
		}
		used, had := r.InviteUses[inv.ID]
		var was any // null: never used
		if had {
			was = used
		}
		var removedAt any // null: never removed
		if at, ok := r.Removed[user.Login]; ok {
			removedAt = at
		}
		var admins any // null: none but the creator
		if len(r.Admins) > 0 {
			admins = r.Admins
		}
		return []batchStmt{{joinByInvite, []any{user, gocql.TimeUUID(), r.Members + 1, map[string]int{inv.ID: used + 1},
			r.Name, r.CreatedAt, user.Login, r.CreatedAt, r.Members, inv.ID, was, chat.RevokedMark(inv.ID),
			r.Kind, r.CreatorLogin, admins, user.Login, removedAt}}}, nil
	}, func(r roomRead) bool { return r.IsMember() })
	if err != nil {
		return chat.RoomFor{}, undo(err)
	}
	return s.enlist(ctx, user.Login, before.Room)
}

// roomInviteDeletes are the statements that end the links of the deleted
// room r (cleanUpRoom); those of a room made again under the name since
// stay.
func (s *Store) roomInviteDeletes(ctx context.Context, r chat.Room) ([]batchStmt, error) {
	all, err := s.roomInvites(ctx, r.Name)
	if err != nil {
		return nil, err
	}
	var stmts []batchStmt
	for _, inv := range all {
		if inv.Of(r) {
			stmts = append(stmts, batchStmt{deleteInvite, []any{inv.hash}}, batchStmt{deleteRoomInvites, []any{r.Name, inv.ID}})
		}
	}
	return stmts, nil
}

package store

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

// SetTracer has Cassandra trace every statement s sends from now on (nil:
// none), so a test can read from system_traces the rows a read cost.
func (s *Store) SetTracer(t gocql.Tracer) { s.session.Load().SetTrace(t) }

// NewBehindIndexer is an Indexer with no queue and no workers: every
// message given to Index falls behind, and CatchUp indexes one bucket of
// those.
func NewBehindIndexer(db *Store) *Indexer {
	ix := &Indexer{db: db, log: slog.New(slog.NewTextHandler(io.Discard, nil)), jobs: make(chan indexJob),
		behind: map[behindKey]chat.Conversation{}}
	ix.idle = sync.NewCond(&ix.mu)
	return ix
}

// CatchUp indexes one bucket that fell behind.
func (ix *Indexer) CatchUp() { ix.catchUp(make(chan struct{})) }

// RecordOldDMEntry writes m as d's last message in login's dm_lists entry
// alone, as versions before schema 010 did.
func (s *Store) RecordOldDMEntry(ctx context.Context, login string, d chat.DM, m chat.Message) error {
	return s.exec(ctx, "old dm list", updateDMList, writeTime(m.ID), d.Members, gocql.UUID(m.ID), m.Author, m.Content, login, chat.DMPrefix+d.Address)
}

// JoinWithInviteAsRead joins user by inv as it was read, perhaps before
// it was revoked (the race of a join and a revocation).
func (s *Store) JoinWithInviteAsRead(ctx context.Context, user chat.UserRef, inv chat.Invite) (chat.RoomFor, error) {
	return s.joinByInvite(ctx, user, inv)
}

// SettleDelete and SettleJoin settle a delete or join of unknown outcome
// that carried guard (see settleDelete, settleJoin).
func (s *Store) SettleDelete(ctx context.Context, room string, guard chat.ID) (bool, error) {
	return s.settleDelete(ctx, room, guard)
}

func (s *Store) SettleJoin(ctx context.Context, room chat.Room, login string) (bool, error) {
	return s.settleJoin(ctx, room, login)
}

// LateDelete and LateJoin run a delete or join planned from r as read,
// as a frozen coordinator would run it after the client gave up.
func (s *Store) LateDelete(ctx context.Context, r chat.Room) (bool, error) {
	return s.lwt(ctx, "late delete", deleteRoom, []any{r.Name, r.CreatorLogin, guardValue(r.Version), guardValue(r.Guard)}, nil, nil)
}

func (s *Store) LateJoin(ctx context.Context, r chat.Room, who chat.UserRef) (bool, error) {
	return s.lwt(ctx, "late join", joinRoom, []any{who, gocql.TimeUUID(), r.Members + 1, r.Name, r.CreatedAt, who.Login,
		r.CreatedAt, guardValue(r.Guard), r.Members}, nil, nil)
}

// ListRoom adds r to login's list alone, as a join whose outcome stayed
// unknown leaves it (the list is written first).
func (s *Store) ListRoom(ctx context.Context, login string, r chat.Room) error {
	return s.addUserRoom(ctx, login, r)
}

// MoveRooms runs the move of rooms from chat_rooms (see moveRooms), as
// an instance that connects does.
func (s *Store) MoveRooms(ctx context.Context) error {
	sess, err := s.db()
	if err != nil {
		return err
	}
	return s.moveRooms(ctx, sess)
}

// RoomStatics are the columns the delete of a room deletes.
const RoomStatics = roomStatics

// RoomWithAll reads a room with every participant (Room reads the header
// alone), as a delete does.
func (s *Store) RoomWithAll(ctx context.Context, name string) (chat.RoomWithAll, error) {
	return s.roomAll(ctx, name, false)
}

// MergeSiteSettings runs the move of site_settings into the site row (see
// mergeSiteSettings), as an instance that connects does.
func (s *Store) MergeSiteSettings(ctx context.Context) error {
	sess, err := s.db()
	if err != nil {
		return err
	}
	return s.mergeSiteSettings(ctx, sess)
}

// WaitingPosts is how many posts of conversation wait for the next write
// of its messages (see postGrouped).
func (s *Store) WaitingPosts(conversation string) int {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	if c := s.groups.convs[conversation]; c != nil {
		return len(c.toStore)
	}
	return 0
}

// MessageWrites is how many writes of a conversation's messages may be
// under way at once.
const MessageWrites = messageWrites

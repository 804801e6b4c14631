// This file owns what exports and imports read and write of the store
// (service/moving): the whole tables read in token order, a page at a
// time, so that an export's memory stays flat and two keyspaces holding
// the same rows are read in the same order; and the writes that put an
// account, a room with its members, and a message with its reactions
// back with the ids, times and hashes they had. Every write here is
// idempotent: running an import again writes the same cells again.

package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
	"golang.org/x/sync/errgroup"
)

const (
	selectEveryUser = `SELECT login, display_login, pass, firstname, lastname, email, bio, created_at, status, kind FROM users`
	// The rooms, their rows grouped by partition, in token order.
	selectAllRoomRows = `SELECT room_name, display_name, creation_date, banner, creator, creator_login, kind, admins,
		since, login, member, joined FROM rooms`
	selectRoomRows = `SELECT room_name, display_name, creation_date, banner, creator, creator_login, kind, admins,
		since, login, member, joined FROM rooms WHERE room_name = ?`
	selectAllConversations = `SELECT DISTINCT room_name FROM messages_bucket`
	selectBucketsAsc       = `SELECT time_bucket FROM messages_bucket WHERE room_name = ? ORDER BY time_bucket ASC`

	// A restored user keeps their hash and their times; IF NOT EXISTS so
	// that no import overwrites an account.
	restoreUser = `INSERT INTO users (login, display_login, pass, firstname, lastname, email, bio, created_at, status, status_at, kind)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	// A restored bot is listed among the site's bots, without a token
	// (an administrator makes one on the administration page).
	restoreBot = `INSERT INTO bots (part, login, created_by, created_at) VALUES (?, ?, ?, ?)`
	// restoredBy is who a restored bot says made it.
	restoredBy  = "(import)"
	restoreRoom = `UPDATE rooms SET display_name = ?, creation_date = ?, banner = ?, creator = ?, creator_login = ?,
		kind = ?, admins = ?, invite_uses = null, guard = null, version = ?, members = 1, removed = null WHERE room_name = ? IF creator_login = null`
	restoreMember = `UPDATE rooms SET member = ?, joined = ? WHERE room_name = ? AND since = ? AND login = ?`
	// The member rows go in conditional batches that hold while the
	// room is the incarnation restored (every write to a room's
	// partition is an LWT, rule 4).
	restoreMembersGuard = `UPDATE rooms SET version = ? WHERE room_name = ? IF creation_date = ?`
	countMembers        = `SELECT COUNT(*) FROM rooms WHERE room_name = ? AND since = ?`
	restoreMemberCount  = `UPDATE rooms SET members = ?, version = ? WHERE room_name = ? IF creation_date = ?`
	restoreMessage      = `INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message, attachment, edited)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	restoreBatch = 50
)

// EachUser calls each with every account and its password hash, in the
// table's token order, a page at a time; an error of each stops it.
func (s *Store) EachUser(ctx context.Context, each func(u chat.User, hash string) error) error {
	q, err := s.query(ctx, selectEveryUser)
	if err != nil {
		return err
	}
	iter := q.PageSize(500).Iter()
	var (
		u    chat.User
		hash string
	)
	for iter.Scan(&u.Login, &u.DisplayLogin, &hash, &u.Firstname, &u.Lastname, &u.Email, &u.Bio, &u.CreatedAt, &u.Status, &u.Kind) {
		if u.DisplayLogin == "" {
			u.DisplayLogin = u.Login
		}
		if err := each(u, hash); err != nil {
			iter.Close()
			return err
		}
		u, hash = chat.User{}, ""
	}
	if err := iter.Close(); err != nil {
		return s.fail("read users", err)
	}
	return nil
}

// EachRoom calls each with every room (its header, with no one's
// standing) and its members by login, in token order; a deleted room's
// rows are skipped.
func (s *Store) EachRoom(ctx context.Context, each func(r chat.Room, members []chat.Member) error) error {
	q, err := s.query(ctx, selectAllRoomRows)
	if err != nil {
		return err
	}
	return s.roomRows(q.PageSize(1000).Iter(), each)
}

// RoomWithMembers is the room named name with its members;
// chat.ErrNotFound if there is none.
func (s *Store) RoomWithMembers(ctx context.Context, name string) (chat.Room, []chat.Member, error) {
	q, err := s.query(ctx, selectRoomRows, chat.NameKey(name))
	if err != nil {
		return chat.Room{}, nil, err
	}
	var (
		room    chat.Room
		members []chat.Member
	)
	err = s.roomRows(q.PageSize(1000).Iter(), func(r chat.Room, m []chat.Member) error {
		room, members = r, m
		return nil
	})
	if err == nil && room.Name == "" {
		err = fmt.Errorf("store: room %q: %w", name, chat.ErrNotFound)
	}
	return room, members, err
}

// roomRows groups iter's rows by room and hands each room over once its
// rows are read.
func (s *Store) roomRows(iter *gocql.Iter, each func(r chat.Room, members []chat.Member) error) error {
	var (
		cur     chat.Room
		members []chat.Member
	)
	flush := func() error {
		if cur.Name == "" || cur.CreatorLogin == "" {
			return nil
		}
		sort.Slice(members, func(i, j int) bool { return members[i].Login < members[j].Login })
		return each(cur, members)
	}
	for {
		var (
			r      chat.Room
			since  time.Time
			login  string
			member *chat.UserRef
			joined time.Time
		)
		if !iter.Scan(&r.Name, &r.DisplayName, &r.CreatedAt, &r.Banner, &r.Creator, &r.CreatorLogin, &r.Kind, &r.Admins,
			&since, &login, &member, &joined) {
			break
		}
		if r.Name != cur.Name {
			if err := flush(); err != nil {
				iter.Close()
				return err
			}
			cur, members = fixHeader(r), nil
			sort.Strings(cur.Admins)
		}
		if login != "" && member != nil && since.Equal(cur.CreatedAt) {
			members = append(members, chat.Member{UserRef: *member, Joined: joined})
		}
	}
	if err := iter.Close(); err != nil {
		return s.fail("read rooms", err)
	}
	return flush()
}

// EachConversation calls each with the id of every conversation that
// holds messages (rooms and DMs), in token order.
func (s *Store) EachConversation(ctx context.Context, each func(id string) error) error {
	q, err := s.query(ctx, selectAllConversations)
	if err != nil {
		return err
	}
	iter := q.PageSize(1000).Iter()
	var id string
	for iter.Scan(&id) {
		if err := each(id); err != nil {
			iter.Close()
			return err
		}
	}
	if err := iter.Close(); err != nil {
		return s.fail("list conversations", err)
	}
	return nil
}

// Buckets are the day buckets of conversation, oldest first.
func (s *Store) Buckets(ctx context.Context, conversation string) ([]int, error) {
	q, err := s.query(ctx, selectBucketsAsc, conversation)
	if err != nil {
		return nil, err
	}
	iter := q.PageSize(1000).Iter()
	var (
		out []int
		b   int
	)
	for iter.Scan(&b) {
		out = append(out, b)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("list buckets of "+conversation, err)
	}
	return out, nil
}

// EachMessage calls each with the messages of conv's day bucket, oldest
// first, with their reactions, page by page (n at a time), skipping
// those an earlier room of the same name left.
func (s *Store) EachMessage(ctx context.Context, conv chat.Conversation, bucket, n int, each func([]chat.Message) error) error {
	after := floorOf(conv)
	for {
		q, err := s.query(ctx, selectMessagesUp, conv.ID, bucket, gocql.UUID(after), n)
		if err != nil {
			return err
		}
		page, err := s.scanMessages(q.Iter(), conv.ID, "read messages")
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		if err := s.addReactions(ctx, conv, page); err != nil {
			return err
		}
		for i := range page {
			sort.Slice(page[i].Reactions, func(a, b int) bool {
				ra, rb := page[i].Reactions[a], page[i].Reactions[b]
				if ra.Emoji != rb.Emoji {
					return ra.Emoji < rb.Emoji
				}
				return ra.Reactor.Login < rb.Reactor.Login
			})
		}
		if err := each(page); err != nil {
			return err
		}
		if len(page) < n {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// RestoreUser writes the account u with its password hash ("": none,
// so only a reset link opens it) if its login is free, lists it for the
// administrators' search and the directory (a bot: among the site's
// bots, with no token), and reports whether it was
// written now (false: a re-run found it). Another account under the
// login (another creation time or spelling) is chat.ErrUserExists.
func (s *Store) RestoreUser(ctx context.Context, u chat.User, hash string) (restored bool, err error) {
	u.CreatedAt = u.CreatedAt.UTC().Truncate(time.Millisecond)
	var status, statusAt any
	if u.Status != chat.AccountActive {
		status, statusAt = u.Status, u.CreatedAt
	}
	var kind any = gocql.UnsetValue
	if u.Kind != chat.KindPerson {
		kind = u.Kind
	}
	applied, err := s.lwt(ctx, "restore user "+u.Login, restoreUser,
		[]any{u.Login, u.DisplayLogin, hash, u.Firstname, u.Lastname, u.Email, u.Bio, u.CreatedAt, status, statusAt, kind}, nil,
		func(ctx context.Context) (bool, error) {
			got, err := s.User(ctx, u.Login)
			if err != nil {
				return false, err
			}
			return got.CreatedAt.Equal(u.CreatedAt) && got.DisplayLogin == u.DisplayLogin && got.Kind == u.Kind, nil
		})
	if err != nil {
		return false, err
	}
	if !applied {
		got, err := s.User(ctx, u.Login)
		if err != nil {
			return false, err
		}
		if !got.CreatedAt.Equal(u.CreatedAt) || got.DisplayLogin != u.DisplayLogin || got.Kind != u.Kind {
			return false, fmt.Errorf("store: restore user %q: another account has the login: %w", u.Login, chat.ErrUserExists)
		}
	}
	// What follows the row is written again by a re-run, so an import
	// killed in between completes it.
	if u.Status != chat.AccountDeleted {
		if err := s.indexPerson(ctx, u.Login, u.Firstname, u.Lastname, u.Email); err != nil {
			return false, err
		}
	}
	if u.IsBot() {
		// Listed as CreateBot lists one (and, as there, not in the
		// directory of people).
		if err := s.exec(ctx, "restore bot "+u.Login, restoreBot, botsPart, u.Login, restoredBy, u.CreatedAt); err != nil {
			return false, err
		}
	} else if u.Status != chat.AccountDeleted {
		if err := s.RecordPerson(ctx, u.Ref()); err != nil {
			return false, err
		}
	}
	if err := s.markClosed(ctx, u.Login, u.Status); err != nil {
		return false, err
	}
	// Their DM entries are written where this version reads them: there
	// is no list of an older version to move (a move would copy each
	// entry again, at its own timestamp, doubling its members' list).
	if err := s.exec(ctx, "restore user "+u.Login, updateDMsMoved, u.Login); err != nil {
		return false, err
	}
	return applied, nil
}

// RestoreRoom creates the room r with its creation time, creator, kind,
// banner and admins, and its members with their join times, and lists
// it in each member's rooms. A room of that name and creation time
// already there is completed (a re-run); another room of that name is
// chat.ErrRoomExists.
func (s *Store) RestoreRoom(ctx context.Context, r chat.Room, members []chat.Member) error {
	r.CreatedAt = r.CreatedAt.UTC().Truncate(time.Millisecond)
	var admins any
	if len(r.Admins) > 0 {
		admins = r.Admins
	}
	var creator *chat.Member
	for i := range members {
		if members[i].Login == r.CreatorLogin {
			creator = &members[i]
		}
	}
	stmts := []batchStmt{{restoreRoom, []any{r.DisplayName, r.CreatedAt, r.Banner, r.Creator, r.CreatorLogin, r.Kind, admins,
		gocql.TimeUUID(), r.Name}}}
	if creator != nil {
		stmts = append(stmts, batchStmt{restoreMember, []any{creator.UserRef, joinedValue(creator.Joined), r.Name, r.CreatedAt, creator.Login}})
	}
	same := func(ctx context.Context) (bool, error) {
		got, err := s.header(ctx, r.Name, true)
		if errors.Is(err, chat.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return got.CreatorLogin == r.CreatorLogin && got.CreatedAt.Equal(r.CreatedAt), nil
	}
	applied, err := s.lwtBatch(ctx, "restore room "+r.Name, stmts, nil, same)
	if err != nil {
		return err
	}
	if !applied {
		if ok, err := same(ctx); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("store: restore room %q: %w", r.DisplayName, chat.ErrRoomExists)
			}
			return err
		}
	}
	for lo := 0; lo < len(members); lo += restoreBatch {
		batch := []batchStmt{{restoreMembersGuard, []any{gocql.TimeUUID(), r.Name, r.CreatedAt}}}
		for _, m := range members[lo:min(lo+restoreBatch, len(members))] {
			batch = append(batch, batchStmt{restoreMember, []any{m.UserRef, joinedValue(m.Joined), r.Name, r.CreatedAt, m.Login}})
		}
		ok, err := s.lwtBatch(ctx, "restore members of "+r.Name, batch, nil, same)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("store: restore members of %q: the room was deleted meanwhile: %w", r.Name, chat.ErrNotFound)
		}
	}
	q, err := s.serialRead(ctx, countMembers, r.Name, r.CreatedAt)
	if err != nil {
		return err
	}
	var n int
	if err := q.Scan(&n); err != nil {
		return s.fail("count members of "+r.Name, err)
	}
	if _, err := s.lwt(ctx, "count members of "+r.Name, restoreMemberCount,
		[]any{n, gocql.TimeUUID(), r.Name, r.CreatedAt}, nil, same); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, m := range members {
		g.Go(func() error { return s.addUserRoom(gctx, m.Login, r) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return s.recordRoomName(ctx, r)
}

func joinedValue(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// RestoreMessages writes msgs of in (one conversation, any order) with
// their ids, edits, files and reactions, recording their buckets first,
// and moves the conversation's head to the newest. Writing them again
// writes the same cells.
//
// The rows of a partition (a day of the conversation, in chat_room_messages
// and in message_reactions) go in single-partition unlogged batches, each
// one mutation to Cassandra, which an import writes where a post would
// send a statement per row (see restoreRows), a few batches at a time.
func (s *Store) RestoreMessages(ctx context.Context, in chat.Place, msgs []chat.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	conv := in.Conversation()
	newest := msgs[0].ID
	var buckets []int
	byBucket := map[int][]chat.Message{}
	for _, m := range msgs {
		if m.ID.After(newest) {
			newest = m.ID
		}
		b := chat.BucketOf(m.ID)
		if _, ok := byBucket[b]; !ok {
			buckets = append(buckets, b)
		}
		byBucket[b] = append(byBucket[b], m)
	}
	var batches [][]batchStmt
	for _, bucket := range buckets {
		if err := s.recordBucket(ctx, conv, bucket); err != nil {
			return err
		}
		var rows, reactions partitionBatches
		for _, m := range byBucket[bucket] {
			var file any = gocql.UnsetValue
			if m.Attachment != nil {
				file = udtOf(m.Attachment)
			}
			var edited any = gocql.UnsetValue
			if !m.Edited.IsZero() {
				edited = gocql.UUID(m.Edited)
			}
			rows.add(batchStmt{restoreMessage, []any{conv.ID, bucket, gocql.UUID(m.ID), m.Author, m.Content, m.System, file, edited}},
				len(m.Content))
			for _, r := range m.Reactions {
				reactions.add(batchStmt{insertReaction, []any{conv.ID, bucket, gocql.UUID(m.ID), r.Emoji, r.Reactor.Login, r.Reactor,
					gocql.UUID(r.Change), writeTime(r.Change)}}, len(r.Emoji))
			}
		}
		batches = append(append(batches, rows.done...), reactions.done...)
	}
	if err := s.eachConcurrently(ctx, len(batches), restoreWrites, func(ctx context.Context, i int) error {
		return s.execBatch(ctx, "restore messages in "+conv.ID, batches[i])
	}); err != nil {
		return err
	}
	if err := s.bumpVersion(ctx, conv.ID); err != nil {
		return err
	}
	return s.setHead(ctx, conv.ID, newest)
}

const (
	// restoreRows and restoreBytes bound one single-partition batch of
	// restored rows: its statements, and the bytes of their text. Such a
	// batch is one mutation, which Cassandra's batch size thresholds
	// leave alone, but a mutation must stay far below the commit log's
	// segment.
	restoreRows  = 100
	restoreBytes = 256 << 10
	// restoreWrites bounds the batches of one RestoreMessages in flight.
	restoreWrites = 4
)

// partitionBatches cuts the rows of one partition into batches of at
// most restoreRows rows and restoreBytes bytes.
type partitionBatches struct {
	done  [][]batchStmt
	bytes int
}

func (p *partitionBatches) add(st batchStmt, size int) {
	last := len(p.done) - 1
	if last < 0 || len(p.done[last]) == restoreRows || p.bytes+size > restoreBytes {
		p.done = append(p.done, nil)
		p.bytes, last = 0, last+1
	}
	p.done[last] = append(p.done[last], st)
	p.bytes += size
}

// execBatch runs stmts (idempotent, no conditions) as one unlogged batch,
// or as a statement when there is one.
func (s *Store) execBatch(ctx context.Context, op string, stmts []batchStmt) error {
	if len(stmts) == 1 {
		return s.exec(ctx, op, stmts[0].stmt, stmts[0].values...)
	}
	sess, err := s.db()
	if err != nil {
		return err
	}
	batch := sess.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
	batch.SetConsistency(s.cfg.Consistency)
	for _, st := range stmts {
		batch.Entries = append(batch.Entries, gocql.BatchEntry{Stmt: st.stmt, Args: st.values, Idempotent: true})
	}
	if err := sess.ExecuteBatch(batch); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// OpenFile is the ready file id with a reader of its bytes (one chunk
// held at a time); chat.ErrNotFound if there is none.
func (s *Store) OpenFile(ctx context.Context, id chat.ID) (chat.StoredFile, io.ReadCloser, error) {
	a, err := s.Attachment(ctx, id)
	if err != nil {
		return chat.StoredFile{}, nil, err
	}
	f := chat.StoredFile{ID: a.ID, Conversation: a.Conversation, Uploader: a.Uploader, Name: a.Name, Size: a.Size,
		ContentType: a.ContentType, SHA256: a.SHA256, Width: a.Width, Height: a.Height, PreviewID: a.PreviewID,
		PreviewWidth: a.PreviewWidth, PreviewHeight: a.PreviewHeight}
	return f, s.OpenAttachment(ctx, a), nil
}

// RestoreFile writes the file f with its id from body, chunk by chunk
// (as an upload does: the pending row first, so a kill leaves what the
// sweeper finds), and makes it ready; body must hold f.Size bytes whose
// sha256 is f.SHA256, or nothing is kept and the error says so. A file
// already ready under the id is left (a re-run).
func (s *Store) RestoreFile(ctx context.Context, f chat.StoredFile, body io.Reader) error {
	if got, err := s.Attachment(ctx, f.ID); err == nil && got.Size == f.Size {
		return nil
	}
	a := chat.Attachment{ID: f.ID, Conversation: f.Conversation, Uploader: f.Uploader, Name: f.Name, ChunkSize: ChunkSize,
		Status: StatusPending}
	most := chunkLimit(f.Size)
	if err := s.exec(ctx, "record pending restore", insertPendingUpload, chat.BucketOf(a.ID), gocql.UUID(a.ID), a.Conversation, most); err != nil {
		return err
	}
	if err := s.exec(ctx, "list attachment", insertConversationAttachment, a.Conversation, gocql.UUID(a.ID), most); err != nil {
		return err
	}
	if err := s.writeAttachmentRow(ctx, a); err != nil {
		return err
	}
	buf, err := s.chunkBuffer(ctx)
	if err != nil {
		return err
	}
	defer s.releaseChunkBuffer(buf)
	hash := sha256.New()
	sniffed := chat.SniffContentType(nil)
	for {
		n, rerr := fill(body, buf)
		if n > 0 {
			a.Size += int64(n)
			if a.Size > f.Size {
				rerr = fmt.Errorf("store: restore file %s: more than its %d bytes", f.ID, f.Size)
			} else {
				if a.Chunks == 0 {
					sniffed = chat.SniffContentType(buf[:n])
				}
				hash.Write(buf[:n])
				if err := s.exec(ctx, "restore chunk", insertChunk, gocql.UUID(a.ID), a.Chunks, buf[:n]); err != nil {
					rerr = err
				}
				a.Chunks++
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			s.discardUpload(ctx, a, a.Chunks)
			return rerr
		}
	}
	if a.Size != f.Size || !bytes.Equal(hash.Sum(nil), f.SHA256) {
		s.discardUpload(ctx, a, a.Chunks)
		return fmt.Errorf("store: restore file %s: its bytes are not the file's (%d of %d bytes, or another sha256)", f.ID, a.Size, f.Size)
	}
	// The type is the bytes', as an upload's is (SniffContentType): an
	// archive's word that a file is a PDF or an image is not believed.
	a.SHA256, a.ContentType, a.Width, a.Height = f.SHA256, sniffed, f.Width, f.Height
	if !chat.RasterImage(sniffed) {
		a.Width, a.Height = 0, 0
	}
	a.PreviewID, a.PreviewWidth, a.PreviewHeight = f.PreviewID, f.PreviewWidth, f.PreviewHeight
	return s.finishAttachment(ctx, a)
}

// RestoreDMEntry records m as the last message of d in each member's
// list, as RecordDMMessage does, but only where the entry does not
// name m already: the members' list is a list of cells, and writing it
// again at the same timestamp would double it (a re-run of an import).
func (s *Store) RestoreDMEntry(ctx context.Context, d chat.DM, m chat.Message) error {
	conv := chat.DMPrefix + d.Address
	for _, member := range d.Members {
		q, err := s.query(ctx, selectDMLast, member.Login, conv)
		if err != nil {
			return err
		}
		var last chat.ID
		err = q.Scan((*gocql.UUID)(&last))
		if err != nil && !errors.Is(err, gocql.ErrNotFound) {
			return s.fail("read the dm entry of "+member.Login, err)
		}
		if last == m.ID {
			continue
		}
		args := []any{writeTime(m.ID), d.Members, gocql.UUID(m.ID), m.Author, excerptOf(m.Content), member.Login, conv}
		if err := s.writeDMEntry(ctx, updateDMEntry, updateDMList, args); err != nil {
			return s.fail("list dm of "+member.Login, err)
		}
	}
	return nil
}

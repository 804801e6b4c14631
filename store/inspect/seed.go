// This file owns the load commands' raw writes and reads: the baselines
// that measure what the driver alone costs (a message inserted, a chunk
// written and read), and the seeds that make in seconds what the
// application would take hours to (a room of 10,000 members, a search
// index of a million messages).

package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/chat"
)

const (
	insertMessage = `INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message)
	VALUES (?, ?, ?, ?, ?, ?)`
	insertChunk      = `INSERT INTO attachment_chunks (attachment_id, chunk_no, data) VALUES (?, ?, ?)`
	selectChunk      = `SELECT data FROM attachment_chunks WHERE attachment_id = ? AND chunk_no = ?`
	selectMembers    = `SELECT login, member FROM rooms WHERE room_name = ?`
	selectHeader     = `SELECT creation_date, members FROM rooms WHERE room_name = ? LIMIT 1`
	updateMembers    = `UPDATE rooms SET version = now(), members = ? WHERE room_name = ? IF creation_date = ? AND members = ?`
	updateMember     = `UPDATE rooms SET member = ? WHERE room_name = ? AND since = ? AND login = ?`
	updateCreated    = `UPDATE rooms SET creation_date = ? WHERE room_name = ? IF creation_date = ?`
	insertPlacesFrom = `INSERT INTO search_settings (name, month) VALUES ('places_from', 0)`
)

// InsertMessage writes a message of author in room now, as one insert
// with no read and nothing else: the same table, partition and
// consistency as a post, none of its work.
func (db *DB) InsertMessage(ctx context.Context, room string, author chat.UserRef, content string) error {
	now := time.Now().UTC()
	y, m, d := now.Date()
	return db.s.Query(insertMessage, room, y*10000+int(m)*100+d, gocql.UUIDFromTime(now), author, content, false).
		WithContext(ctx).Idempotent(true).Exec()
}

// InsertChunk writes chunk no of attachment id.
func (db *DB) InsertChunk(ctx context.Context, id chat.ID, no int, data []byte) error {
	return db.s.Query(insertChunk, gocql.UUID(id), no, data).WithContext(ctx).Exec()
}

// Chunk reads chunk no of attachment id.
func (db *DB) Chunk(ctx context.Context, id chat.ID, no int) ([]byte, error) {
	var b []byte
	err := db.s.Query(selectChunk, gocql.UUID(id), no).WithContext(ctx).Scan(&b)
	return b, notFound(err)
}

// MemberRow is a row of a room's partition that names a member.
type MemberRow struct {
	Login  string
	Member chat.UserRef
}

// MemberRows are the rows of room's partition that name a member.
func (db *DB) MemberRows(ctx context.Context, room string) ([]MemberRow, error) {
	iter := db.s.Query(selectMembers, room).WithContext(ctx).PageSize(5000).Iter()
	var (
		out []MemberRow
		r   MemberRow
	)
	for iter.Scan(&r.Login, &r.Member) {
		if r.Login != "" {
			out = append(out, r)
		}
		r = MemberRow{}
	}
	return out, iter.Close()
}

// FillMembers adds n made-up participants to room (member(i) is the
// i-th), batch at a time, each batch one LWT (every write to a room's
// partition is one).
func (db *DB) FillMembers(ctx context.Context, room string, n, batch int, member func(i int) chat.UserRef) error {
	var (
		created time.Time
		members int
	)
	if err := db.s.Query(selectHeader, room).WithContext(ctx).Scan(&created, &members); err != nil {
		return fmt.Errorf("fill %s: %w", room, err)
	}
	for start := 0; start < n; start += batch {
		b := db.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
		b.SerialConsistency(gocql.Serial)
		added := min(start+batch, n) - start
		b.Query(updateMembers, members+added, room, created, members)
		members += added
		for i := start; i < min(start+batch, n); i++ {
			m := member(i)
			b.Query(updateMember, m, room, created, m.Login)
		}
		if err := db.cas(b); err != nil {
			return fmt.Errorf("fill %s: %w", room, err)
		}
	}
	return nil
}

// Backdate moves the creation date of room r (created at from, with
// members) back to to: the header and the members' rows, which carry it
// as their incarnation (schema/016_room_members.cql), in one LWT.
func (db *DB) Backdate(ctx context.Context, room string, from, to time.Time, members []chat.UserRef) error {
	b := db.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	b.Query(updateCreated, to, room, from)
	for _, m := range members {
		b.Query(updateMember, m, room, to, m.Login)
	}
	if err := db.cas(b); err != nil {
		return fmt.Errorf("backdate %s: %w", room, err)
	}
	return nil
}

// cas runs an LWT batch; not applied is an error.
func (db *DB) cas(b *gocql.Batch) error {
	applied, iter, err := db.s.ExecuteBatchCAS(b)
	if iter != nil {
		iter.Close()
	}
	if err != nil || !applied {
		return fmt.Errorf("applied %v: %w", applied, err)
	}
	return nil
}

// Seed is a kind of row a search seed writes.
type Seed int

// The rows of a search seed, with their columns in order.
const (
	// SeedMessage: room, bucket, message id, author, content.
	SeedMessage Seed = iota
	// SeedBucket: room, bucket.
	SeedBucket
	// SeedTerm: conversation, term, month, message id.
	SeedTerm
	// SeedWord: conversation, month, word, term.
	SeedWord
	// SeedPlace: term, month, conversation.
	SeedPlace
)

var seedStatements = [...]string{
	SeedMessage: `INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message) VALUES (?, ?, ?, ?, ?, false)`,
	SeedBucket:  `INSERT INTO messages_bucket (room_name, time_bucket) VALUES (?, ?)`,
	SeedTerm:    `INSERT INTO message_terms (conversation, term, month, message_id) VALUES (?, ?, ?, ?)`,
	SeedWord:    `INSERT INTO conversation_words (conversation, month, word, term) VALUES (?, ?, ?, ?)`,
	SeedPlace:   `INSERT INTO term_places (term, month, conversation) VALUES (?, ?, ?)`,
}

// SeedRows writes rows of kind as one unlogged batch (the caller keeps
// each batch to a partition or a few).
func (db *DB) SeedRows(ctx context.Context, kind Seed, rows [][]any) error {
	b := db.s.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
	for _, r := range rows {
		b.Query(seedStatements[kind], bind(r)...)
	}
	return db.s.ExecuteBatch(b)
}

// PlacesComplete records that every posting's place is written (as a
// seed that writes them all does), so search reads the places.
func (db *DB) PlacesComplete(ctx context.Context) error {
	return db.s.Query(insertPlacesFrom).WithContext(ctx).Exec()
}

// This file owns the search index's backfill: every message stored before
// the index existed (or one whose index write was lost) is indexed by
// walking each conversation's day buckets, oldest first, recording after
// each bucket how far it got, so a stopped run resumes there.

package store

import (
	"context"
	"github.com/killrchat/killrchat/chat"
	"time"
)

const (
	selectAllRooms      = `SELECT DISTINCT room_name, display_name, creation_date FROM rooms`
	selectAllDMs        = `SELECT conversation FROM dm_lists`
	selectBucketMsgs    = `SELECT message_id, author, content, system_message, attachment, edited FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`
	selectBackfillDone  = `SELECT conversation, done_bucket FROM index_backfill WHERE job = ?`
	insertBackfillDone  = `INSERT INTO index_backfill (job, conversation, done_bucket) VALUES (?, ?, ?)`
	selectBucketsUpTo   = `SELECT time_bucket FROM messages_bucket WHERE room_name = ? AND time_bucket > ? AND time_bucket <= ? ORDER BY time_bucket ASC`
	backfillParallelism = 4
	// backfillGroup is how many messages of a bucket are indexed together
	// (see IndexMessages: their rows of one partition are one mutation).
	backfillGroup = 100
)

// Backfill says what IndexBackfill does.
type Backfill struct {
	// Job names the run's progress: the same job resumes, another starts
	// from the beginning.
	Job string
	// Rate bounds the messages indexed per second (0: as fast as it goes).
	Rate float64
	// Until is the newest day bucket (yyyyMMdd) to index; 0 is today.
	// Messages posted since the indexer runs need no backfill.
	Until int
	// Progress, if set, is called every couple of seconds and at the end.
	Progress func(BackfillStats)
}

// BackfillStats counts what a backfill did.
type BackfillStats struct {
	Conversations, Done, Buckets, Messages, Rooms int
	Elapsed                                       time.Duration
}

// IndexBackfill indexes every stored message of every room and DM up to
// opts.Until, and lists every room in room_names. Every write is
// idempotent, so running it again, or over messages already indexed,
// leaves the same index. It stops at the first error (a rerun with the
// same job resumes after the last finished bucket) or when ctx ends.
func (s *Store) IndexBackfill(ctx context.Context, opts Backfill) (BackfillStats, error) {
	start := time.Now()
	var st BackfillStats
	if opts.Until == 0 {
		opts.Until = chat.TimeBucket(s.Now())
	}
	convs, err := s.allConversations(ctx, &st)
	if err != nil {
		return st, err
	}
	st.Conversations = len(convs)
	done, err := s.backfillDone(ctx, opts.Job)
	if err != nil {
		return st, err
	}
	pace := newPacer(opts.Rate)
	lastReport := time.Now()
	report := func(final bool) {
		if opts.Progress != nil && (final || time.Since(lastReport) > 2*time.Second) {
			st.Elapsed = time.Since(start)
			opts.Progress(st)
			lastReport = time.Now()
		}
	}
	for _, conv := range convs {
		from, ok := done[conv.ID]
		if !ok {
			from = 0
		}
		if err := s.backfillConversation(ctx, opts, conv, from, &st, pace, report); err != nil {
			return st, err
		}
		st.Done++
		report(false)
	}
	report(true)
	if len(done) == 0 {
		// A run from the start wrote the places of every month.
		if err := s.PlacesComplete(ctx); err != nil {
			return st, err
		}
	}
	return st, nil
}

// allConversations lists every room (listing it in room_names on the
// way) and every DM. It reads the whole tables: an offline job, paged.
func (s *Store) allConversations(ctx context.Context, st *BackfillStats) ([]chat.Conversation, error) {
	var out []chat.Conversation
	q, err := s.query(ctx, selectAllRooms)
	if err != nil {
		return nil, err
	}
	iter := q.PageSize(500).Iter()
	var r chat.Room
	for iter.Scan(&r.Name, &r.DisplayName, &r.CreatedAt) {
		if r.CreatedAt.IsZero() {
			continue // a deleted room's rows, not yet cleaned up
		}
		if r.DisplayName == "" {
			r.DisplayName = r.Name
		}
		if err := s.recordRoomName(ctx, r); err != nil {
			iter.Close()
			return nil, err
		}
		st.Rooms++
		out = append(out, r.Conversation())
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("list rooms", err)
	}
	q, err = s.query(ctx, selectAllDMs)
	if err != nil {
		return nil, err
	}
	iter = q.PageSize(1000).Iter()
	seen := map[string]bool{}
	var id string
	for iter.Scan(&id) {
		if !seen[id] {
			seen[id] = true
			out = append(out, chat.Conversation{ID: id, Since: chat.DMEpoch})
		}
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("list dms", err)
	}
	return out, nil
}

func (s *Store) backfillDone(ctx context.Context, job string) (map[string]int, error) {
	q, err := s.query(ctx, selectBackfillDone, job)
	if err != nil {
		return nil, err
	}
	iter := q.PageSize(5000).Iter()
	out := map[string]int{}
	var conv string
	var bucket int
	for iter.Scan(&conv, &bucket) {
		out[conv] = bucket
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read backfill progress", err)
	}
	return out, nil
}

// backfillConversation indexes conv's buckets after the bucket from, up
// to opts.Until, oldest first, recording each one once it is done.
func (s *Store) backfillConversation(ctx context.Context, opts Backfill, conv chat.Conversation, from int, st *BackfillStats, pace *pacer, report func(bool)) error {
	q, err := s.query(ctx, selectBucketsUpTo, conv.ID, from, opts.Until)
	if err != nil {
		return err
	}
	var buckets []int
	iter := q.PageSize(1000).Iter()
	var b int
	for iter.Scan(&b) {
		buckets = append(buckets, b)
	}
	if err := iter.Close(); err != nil {
		return s.fail("list buckets of "+conv.ID, err)
	}
	for _, bucket := range buckets {
		_, err := s.IndexBucket(ctx, conv, bucket, func(ctx context.Context, k int) error {
			for range k {
				if err := pace.wait(ctx); err != nil {
					return err
				}
			}
			st.Messages += k
			report(false)
			return nil
		})
		if err != nil {
			return err
		}
		if err := s.exec(ctx, "record backfill of "+conv.ID, insertBackfillDone, opts.Job, conv.ID, bucket); err != nil {
			return err
		}
		st.Buckets++
	}
	return nil
}

// pacer spaces calls to wait at a rate per second (none when 0).
type pacer struct {
	every time.Duration
	next  time.Time
}

func newPacer(rate float64) *pacer {
	if rate <= 0 {
		return &pacer{}
	}
	return &pacer{every: time.Duration(float64(time.Second) / rate)}
}

func (p *pacer) wait(ctx context.Context) error {
	if p.every == 0 {
		return ctx.Err()
	}
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	d := p.next.Sub(now)
	p.next = p.next.Add(p.every)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// IndexBucket indexes every message of conv's day bucket (see
// IndexMessages), backfillGroup at a time, backfillParallelism groups at
// once, and returns how many it indexed. wait, if set, is called before
// each group with its size: it paces the work, and its error stops it.
// The backfill calls it, and the app's indexer for a bucket whose
// messages it could not queue.
func (s *Store) IndexBucket(ctx context.Context, conv chat.Conversation, bucket int, wait func(ctx context.Context, n int) error) (int, error) {
	mq, err := s.query(ctx, selectBucketMsgs, conv.ID, bucket)
	if err != nil {
		return 0, err
	}
	floor := floorOf(conv)
	msgs := mq.PageSize(500).Iter()
	errs := make(chan error, backfillParallelism)
	inFlight, indexed := 0, 0
	var first error
	var group []chat.Message
	dispatch := func() {
		if wait != nil {
			if err := wait(ctx, len(group)); err != nil {
				first, group = err, nil
				return
			}
		}
		if inFlight == backfillParallelism {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
			inFlight--
		}
		inFlight++
		indexed += len(group)
		g := group
		group = nil
		go func() { errs <- s.IndexMessages(ctx, g) }()
	}
	for m, ok := scanMessage(msgs, conv.ID); ok && first == nil; m, ok = scanMessage(msgs, conv.ID) {
		if !idBefore(floor, m.ID) {
			continue // left by an earlier room of the same name
		}
		group = append(group, m)
		if len(group) == backfillGroup {
			dispatch()
		}
	}
	if len(group) > 0 && first == nil {
		dispatch()
	}
	for ; inFlight > 0; inFlight-- {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if err := msgs.Close(); err != nil && first == nil {
		first = s.fail("read messages of "+conv.ID, err)
	}
	return indexed, first
}

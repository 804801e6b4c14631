// This file owns each instance's search indexer: it writes each posted
// message's terms after the post has answered, paced so that the index never takes
// the post's share of Cassandra, and catches up from the day buckets on
// what it could not queue.

package store

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/killrchat/killrchat/chat"
	"golang.org/x/time/rate"
)

const (
	// indexQueue bounds the posted messages waiting to be indexed; past
	// it a message's day bucket is remembered and indexed again later
	// (catchUp).
	indexQueue = 10_000
	// indexWorkers index messages at once.
	indexWorkers = 4
	// indexBatch is the most messages a worker indexes in one go: what the
	// queue holds when the worker comes back to it, so a busy instance
	// writes fewer, fuller batches (IndexMessages) and a quiet one
	// writes each message at once.
	indexBatch = 256
	// indexTimeout bounds one batch's index writes.
	indexTimeout = 10 * time.Second
	// DefaultIndexRate is how many messages an instance indexes a
	// second at most (the handlers' Config.SearchIndexRate).
	DefaultIndexRate = 200
	// maxBehind bounds the day buckets remembered for catching up; past
	// it they are logged for index-backfill.
	maxBehind = 10_000
	// catchUpEvery is how often an idle indexer looks for a bucket to
	// catch up on.
	catchUpEvery = 2 * time.Second
	// catchUpTimeout bounds the indexing of one day bucket.
	catchUpTimeout = 10 * time.Minute
)

// Indexer writes messages to the search index off the post's path:
// a post stores the message and its head (2 statements) and answers; the
// index rows follow from a queue, at most a rate a second, so a burst of
// posts is not slowed by its index (on one Cassandra, indexing a message
// costs several times what storing it does). The rows are idempotent, so
// a message indexed twice is indexed once. When the queue is full, the
// message's day bucket is remembered and the whole bucket is indexed
// again once the queue is empty: the index lags behind a sustained
// overload instead of slowing it, and catches up after. What a crash
// loses (the queue, the buckets behind) index-backfill adds.
//
// The message lifecycle (edits, deletes) calls reindex: the old text
// leaves the index, the new one enters it. Until then, every search
// result is checked against the stored message (Search), so a
// changed or deleted message never shows.
type Indexer struct {
	db    *Store
	log   *slog.Logger
	jobs  chan indexJob
	off   bool          // index nothing
	limit *rate.Limiter // messages a second; nil: unpaced

	mu      sync.Mutex
	pending int
	idle    *sync.Cond
	behind  map[behindKey]chat.Conversation
}

// behindKey is a day bucket of a conversation with messages not queued.
type behindKey struct {
	conv   string
	since  int64
	bucket int
}

// indexJob is a message of conv to index (add) or to take out (remove).
type indexJob struct {
	conv        chat.Conversation
	add, remove *chat.Message
}

// NewIndexer starts the workers until closing closes; perSecond 0 is
// DefaultIndexRate, a negative one unpaced, and off indexes nothing (see
// Indexer).
func NewIndexer(db *Store, log *slog.Logger, perSecond float64, off bool, closing <-chan struct{}) *Indexer {
	ix := &Indexer{db: db, log: log, off: off, jobs: make(chan indexJob, indexQueue), behind: map[behindKey]chat.Conversation{}}
	if perSecond == 0 {
		perSecond = DefaultIndexRate
	}
	if perSecond > 0 {
		ix.limit = rate.NewLimiter(rate.Limit(perSecond), indexBatch)
	}
	ix.idle = sync.NewCond(&ix.mu)
	for i := range indexWorkers {
		go ix.work(closing, i == 0)
	}
	return ix
}

// Index queues m, a message of conv, to be indexed; it never waits.
func (ix *Indexer) Index(conv chat.Conversation, m chat.Message) {
	ix.queue(indexJob{conv: conv, add: &m})
}

// Reindex is the message lifecycle's hook: old (nil for none) leaves the
// index and updated (nil for a delete) enters it.
func (ix *Indexer) Reindex(conv chat.Conversation, old, updated *chat.Message) {
	ix.queue(indexJob{conv: conv, add: updated, remove: old})
}

func (ix *Indexer) queue(j indexJob) {
	if ix.off {
		return
	}
	ix.mu.Lock()
	ix.pending++
	ix.mu.Unlock()
	select {
	case ix.jobs <- j:
	default:
		ix.done()
		if j.add != nil {
			ix.fallBehind(j.conv, *j.add)
		}
		if j.remove != nil {
			ix.log.Warn("search index: queue full, not removed; the stored message is checked at search time", "message", j.remove.ID.String())
		}
	}
}

// fallBehind remembers m's day bucket, to index it whole later.
func (ix *Indexer) fallBehind(conv chat.Conversation, m chat.Message) {
	k := behindKey{conv: conv.ID, since: conv.Since.UnixMilli(), bucket: chat.BucketOf(m.ID)}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if _, ok := ix.behind[k]; ok {
		return
	}
	if len(ix.behind) >= maxBehind {
		ix.log.Warn("search index: too far behind; run index-backfill", "conversation", conv.ID, "bucket", k.bucket)
		return
	}
	ix.behind[k] = conv
	ix.log.Info("search index: queue full; the bucket will be indexed when it empties", "conversation", conv.ID, "bucket", k.bucket)
}

func (ix *Indexer) work(closing <-chan struct{}, catchUp bool) {
	var tick <-chan time.Time
	if catchUp {
		t := time.NewTicker(catchUpEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		var j indexJob
		select {
		case <-closing:
			return
		case <-tick:
			ix.catchUp(closing)
			continue
		case j = <-ix.jobs:
		}
		jobs := []indexJob{j}
	drain:
		for len(jobs) < indexBatch {
			select {
			case j := <-ix.jobs:
				jobs = append(jobs, j)
			default:
				break drain
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), indexTimeout)
		go func() {
			select {
			case <-closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		var adds []chat.Message
		flush := func() {
			if len(adds) == 0 {
				return
			}
			if ix.limit != nil {
				_ = ix.limit.WaitN(context.Background(), len(adds))
			}
			if err := ix.db.IndexMessages(ctx, adds); err != nil {
				ix.log.Warn("search index: not written; run index-backfill", "messages", len(adds), "first", adds[0].ID.String(), "err", err)
			}
			adds = nil
		}
		for _, j := range jobs {
			if j.remove != nil {
				// What came before is written first, then the old text
				// goes out, then the new one comes in.
				flush()
				if err := ix.db.UnindexMessage(ctx, *j.remove); err != nil {
					ix.log.Warn("search index: not removed; the stored message is checked at search time", "message", j.remove.ID.String(), "err", err)
				}
			}
			if j.add != nil {
				adds = append(adds, *j.add)
			}
		}
		flush()
		cancel()
		for range jobs {
			ix.done()
		}
	}
}

// catchUp indexes one day bucket the queue could not take, when the queue
// is empty: every message in it, at the indexer's pace.
func (ix *Indexer) catchUp(closing <-chan struct{}) {
	if len(ix.jobs) > 0 {
		return
	}
	ix.mu.Lock()
	var k behindKey
	var conv chat.Conversation
	found := false
	for k, conv = range ix.behind {
		delete(ix.behind, k)
		found = true
		break
	}
	ix.mu.Unlock()
	if !found {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), catchUpTimeout)
	defer cancel()
	go func() {
		select {
		case <-closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	n, err := ix.db.IndexBucket(ctx, conv, k.bucket, func(ctx context.Context, n int) error {
		if ix.limit == nil {
			return nil
		}
		return ix.limit.WaitN(ctx, n)
	})
	if err != nil {
		ix.log.Warn("search index: catching up failed; run index-backfill", "conversation", conv.ID, "bucket", k.bucket, "err", err)
		return
	}
	ix.log.Info("search index: caught up", "conversation", conv.ID, "bucket", k.bucket, "messages", n)
}

func (ix *Indexer) done() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.pending--
	if ix.pending == 0 {
		ix.idle.Broadcast()
	}
}

// Flush waits until every message queued so far is indexed (tests search
// right after posting).
func (ix *Indexer) Flush() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for ix.pending > 0 {
		ix.idle.Wait()
	}
}

// Behind is how many day buckets wait to be caught up on.
func (ix *Indexer) Behind() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return len(ix.behind)
}

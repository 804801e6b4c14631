// This file owns the group commit of posts: the posts of one
// conversation that arrive while writes of its messages are under way
// are stored together in the next one, so a busy room pays for one
// statement per group of posts, not 3 per post, and a post is answered
// after one round trip (issue 38).

package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

// maxGroup is the most posts one write of a conversation carries; more
// wait for the next one. It bounds a batch's size (a message's content is
// at most a few KB).
const maxGroup = 64

// messageWrites is how many writes of a conversation's messages may be
// under way at once. With one, a post that came while a write was under
// way waited for it to answer, then for its own: on a 2-core machine,
// 16 posters at once (e2e/load post) were bound by those waits with a
// fifth of the CPU idle. With two, a post waits only while two are under
// way; when the node is slow, posts still pile up and go together.
const messageWrites = 2

// groups coalesces the writes of posts per conversation: at most
// messageWrites writes of a conversation's messages are under way, each
// in a slot of its own (see writerKey); posts that arrive while they are
// wait, in arrival order, to go together in the next one. A lone post is
// written at once: nothing waits on a timer. One write is one statement,
// a batch: the messages, the mark of the slot in their day's partition
// (writers) and the conversation's head, so a post is answered after one
// round trip; a post stored near the end of its day is also counted
// (countChange), after it, before it is answered (see countedDay).
type groups struct {
	mu    sync.Mutex
	convs map[string]*convGroup
}

// convGroup is one conversation's state in groups.
type convGroup struct {
	// storing is how many writes of messages are under way (at most
	// messageWrites), slots which slots they hold; toStore wait for the
	// next one.
	storing int
	slots   [messageWrites]bool
	toStore []*groupedPost
}

// groupedPost is one post waiting in, or written by, a group.
type groupedPost struct {
	conv chat.Conversation
	m    chat.Message
	// stored is closed when the write of m's group is answered (and the
	// group counted, if it had to be), storeErr set before.
	stored   chan struct{}
	storeErr error
}

// postGrouped stores m with the posts of its conversation that come
// meanwhile, as saveMessage promises for one message: its bucket recorded
// first, then in one batch the message, its slot's mark in its day's
// partition and the conversation's head (the newest message of those
// stored together). afterStore, if not nil, runs once m is stored; its
// error is returned. A failure of the write fails each post it carries;
// ctx ending while m still waits for its write takes m out (nothing of
// it is written).
func (s *Store) postGrouped(ctx context.Context, conv chat.Conversation, m chat.Message, afterStore func() error) error {
	p := &groupedPost{conv: conv, m: m, stored: make(chan struct{})}
	g := &s.groups
	g.mu.Lock()
	if g.convs == nil {
		g.convs = map[string]*convGroup{}
	}
	c := g.convs[conv.ID]
	if c == nil {
		c = &convGroup{}
		g.convs[conv.ID] = c
	}
	c.toStore = append(c.toStore, p)
	if c.storing < messageWrites {
		c.storing++
		slot := slices.Index(c.slots[:], false)
		c.slots[slot] = true
		go s.storeLoop(context.WithoutCancel(ctx), conv.ID, c, slot)
	}
	g.mu.Unlock()

	select {
	case <-p.stored:
	case <-ctx.Done():
		if s.dropWaiting(c, p) {
			return fmt.Errorf("store: post message in %s: %w", conv.ID, ctx.Err())
		}
		<-p.stored // taken by a write already: its answer is the post's
	}
	if p.storeErr != nil {
		return p.storeErr
	}
	if afterStore != nil {
		return afterStore()
	}
	return nil
}

// storeLoop writes conversation's waiting messages, up to maxGroup at a
// time, until none wait, in slot: one write after the other, so the
// slot's mark only moves forward.
func (s *Store) storeLoop(ctx context.Context, conversation string, c *convGroup, slot int) {
	g := &s.groups
	for {
		g.mu.Lock()
		if len(c.toStore) == 0 {
			c.storing--
			c.slots[slot] = false
			if c.storing == 0 && s.groups.convs[conversation] == c {
				delete(s.groups.convs, conversation)
			}
			g.mu.Unlock()
			return
		}
		n := min(len(c.toStore), maxGroup)
		ps := slices.Clone(c.toStore[:n])
		c.toStore = slices.Delete(c.toStore, 0, n)
		g.mu.Unlock()

		err := s.storeGroup(ctx, ps, slot)
		if err == nil && s.countedDay(ps) {
			s.countChange(ctx, conversation)
		}
		for _, p := range ps {
			p.storeErr = err
			close(p.stored)
		}
	}
}

// countedDayMargin is how near the end of its day a post is counted as
// well as marked: a reader reads the marks of its own day (and of the
// next hour's), so a post stored into an earlier day than a reader's,
// which only its count shows, must be counted. With instances' clocks
// within half of it of one another, a post not counted is stored in a
// day no reader has left yet (docs/data-model.md, "The newest page in
// memory").
const countedDayMargin = 2 * time.Minute

// countedDay says whether a group just stored must be counted too: one of
// its messages is of a day that ends within countedDayMargin of now.
func (s *Store) countedDay(ps []*groupedPost) bool {
	soon := chat.TimeBucket(s.Now().Add(countedDayMargin))
	for _, p := range ps {
		if chat.BucketOf(p.m.ID) != soon {
			return true
		}
	}
	return false
}

// dropWaiting takes p out of the posts waiting in c if no write has
// taken it yet, and says whether it did.
func (s *Store) dropWaiting(c *convGroup, p *groupedPost) bool {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	i := slices.Index(c.toStore, p)
	if i < 0 {
		return false
	}
	c.toStore = slices.Delete(c.toStore, i, i+1)
	return true
}

// storeGroup records the buckets of ps's messages and stores the
// messages, one statement per bucket, in bucket order, each with slot's
// mark in its partition; the newest bucket's also sets the head.
func (s *Store) storeGroup(ctx context.Context, ps []*groupedPost, slot int) error {
	byBucket := map[int][]*groupedPost{}
	var buckets []int
	newest := ps[0].m.ID
	for _, p := range ps {
		b := chat.BucketOf(p.m.ID)
		if _, ok := byBucket[b]; !ok {
			buckets = append(buckets, b)
		}
		byBucket[b] = append(byBucket[b], p)
		if p.m.ID.After(newest) {
			newest = p.m.ID
		}
		if err := s.recordBucket(ctx, p.conv, b); err != nil {
			return err
		}
	}
	slices.Sort(buckets)
	for i, b := range buckets {
		head := chat.ID{}
		if i == len(buckets)-1 {
			head = newest
		}
		if err := s.insertMessages(ctx, b, byBucket[b], slot, head); err != nil {
			return err
		}
	}
	return nil
}

// insertMessages writes the messages of ps, all of bucket, in one
// statement, a batch: the messages and slot's mark, one partition, so
// they are applied together and a reader sees both or neither; and the
// head, if not zero, in the conversation's row of conversation_heads. A
// batch that fails may have set the head (a head past every message
// stored only costs a count that finds nothing unread).
func (s *Store) insertMessages(ctx context.Context, bucket int, ps []*groupedPost, slot int, head chat.ID) error {
	room := ps[0].m.Room
	sess, err := s.db()
	if err != nil {
		return err
	}
	b := sess.NewBatch(gocql.UnloggedBatch).WithContext(ctx).SpeculativeExecutionPolicy(s.speculative)
	b.SetConsistency(s.cfg.Consistency)
	b.Entries = make([]gocql.BatchEntry, 0, len(ps)+2)
	for _, p := range ps {
		b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: insertMessage, Args: messageValues(bucket, p.m), Idempotent: true})
	}
	b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: markWriter,
		Args: []any{s.markTime(), s.writerKey(slot), gocql.UUID(s.ids.Next(s.Now())), room, bucket}, Idempotent: true})
	if head != (chat.ID{}) {
		b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: updateHead, Args: []any{writeTime(head), gocql.UUID(head), room}, Idempotent: true})
	}
	if err := sess.ExecuteBatch(b); err != nil {
		return s.fail(fmt.Sprintf("post %d messages in %s", len(ps), room), err)
	}
	return nil
}

// writerKey names a slot of this store's writes in a day's writers: the
// store's own id (random, made when it was) and the slot.
func (s *Store) writerKey(slot int) string {
	s.writerOnce.Do(func() { s.writer = rand.Text()[:12] })
	return s.writer + "/" + strconv.Itoa(slot)
}

// markTime is the write time of a mark: the clock's microseconds, and
// always above the last one this store gave, so a slot's marks, written
// one after the other, never go back.
func (s *Store) markTime() int64 {
	for {
		last := s.lastMark.Load()
		t := max(s.Now().UnixMicro(), last+1)
		if s.lastMark.CompareAndSwap(last, t) {
			return t
		}
	}
}

// messageValues are insertMessage's values for m in bucket.
func messageValues(bucket int, m chat.Message) []any {
	// No attachment is left unset, not null: a null would write a tombstone.
	var file any = gocql.UnsetValue
	if m.Attachment != nil {
		file = udtOf(m.Attachment)
	}
	return []any{m.Room, bucket, gocql.UUID(m.ID), m.Author, m.Content, m.System, file}
}

// This file owns the group commit of posts: the posts of one
// conversation that arrive while writes of its messages are under way
// are stored together in the next one, so a busy room pays for a few
// statements per group of posts, not 3 per post (issue 38).

package store

import (
	"context"
	"fmt"
	"slices"
	"sync"

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

// coverWrites is how many covers (a head and a count) of a conversation
// may be under way at once: a group's cover starts as soon as its
// messages are stored, beside the previous group's if that one is still
// under way, so that a post waits for no other cover than its own unless
// the node is slow (then covers wait, and the next one covers them all).
const coverWrites = 2

// groups coalesces the writes of posts per conversation, in two stages:
// the messages (storeGroup), with at most messageWrites under way per
// conversation, then what covers them (the head and the change count),
// with at most coverWrites under way. Posts that arrive while a write of
// their conversation's messages is under way wait, in arrival order, to
// go together in the next one; posts stored while covers are under way
// wait to go together in the next cover. A lone post is written at once:
// nothing waits on a timer.
type groups struct {
	mu    sync.Mutex
	convs map[string]*convGroup
}

// convGroup is one conversation's state in groups.
type convGroup struct {
	// storing is how many writes of messages are under way (at most
	// messageWrites); toStore wait for the next one.
	storing int
	toStore []*groupedPost
	// covering is how many covers are under way (at most coverWrites);
	// toCover, stored, wait for the next one.
	covering int
	toCover  []*groupedPost
}

// groupedPost is one post waiting in, or written by, a group.
type groupedPost struct {
	conv chat.Conversation
	m    chat.Message
	// stored is closed when the write of m's group is answered, storeErr
	// set before: a caller that reads the room after the message
	// (ConfirmPost) may start then.
	stored   chan struct{}
	storeErr error
	// done is closed when the post is answered (its message stored, then
	// the head and the count written after it), err set before.
	done chan struct{}
	err  error
}

// postGrouped stores m with the posts of its conversation that come
// meanwhile and waits for it to be covered, as saveMessage promises for
// one message: its bucket recorded first, the message stored, then the
// conversation's head (the newest message of those it covers) and its
// change count (one increment for them all) written at once. afterStore,
// if not nil, runs once m is stored, beside the head and the count; its
// error is returned first. A failure of a write fails each post it
// carries; ctx ending while m still waits for its write takes m out
// (nothing of it is written).
func (s *Store) postGrouped(ctx context.Context, conv chat.Conversation, m chat.Message, afterStore func() error) error {
	p := &groupedPost{conv: conv, m: m, stored: make(chan struct{}), done: make(chan struct{})}
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
		go s.storeLoop(context.WithoutCancel(ctx), conv.ID, c)
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
	var after error
	if p.storeErr == nil && afterStore != nil {
		after = afterStore()
	}
	<-p.done
	if after != nil {
		return after
	}
	return p.err
}

// storeLoop writes conversation's waiting messages, up to maxGroup at a
// time, until none wait; each group stored goes on to be covered.
func (s *Store) storeLoop(ctx context.Context, conversation string, c *convGroup) {
	g := &s.groups
	for {
		g.mu.Lock()
		if len(c.toStore) == 0 {
			c.storing--
			s.forgetIdle(conversation, c)
			g.mu.Unlock()
			return
		}
		n := min(len(c.toStore), maxGroup)
		ps := slices.Clone(c.toStore[:n])
		c.toStore = slices.Delete(c.toStore, 0, n)
		g.mu.Unlock()

		err := s.storeGroup(ctx, ps)
		for _, p := range ps {
			p.storeErr = err
			close(p.stored)
		}
		if err != nil {
			answer(ps, err)
			continue
		}
		g.mu.Lock()
		c.toCover = append(c.toCover, ps...)
		if c.covering < coverWrites {
			c.covering++
			go s.coverLoop(ctx, conversation, c)
		}
		g.mu.Unlock()
	}
}

// coverLoop writes the head and the count of conversation for the posts
// stored and waiting for them, until none wait: at once, after their
// messages, so a head never names a message that is not stored and a
// change count never counts one that is not. The head is the newest
// message of those covered. A failed head fails each post covered; a
// failed count fails none (see countChange).
func (s *Store) coverLoop(ctx context.Context, conversation string, c *convGroup) {
	g := &s.groups
	for {
		g.mu.Lock()
		if len(c.toCover) == 0 {
			c.covering--
			s.forgetIdle(conversation, c)
			g.mu.Unlock()
			return
		}
		ps := c.toCover
		c.toCover = nil
		g.mu.Unlock()

		newest := ps[0].m.ID
		for _, p := range ps[1:] {
			if p.m.ID.After(newest) {
				newest = p.m.ID
			}
		}
		headSet := make(chan error, 1)
		go func() { headSet <- s.setHead(ctx, conversation, newest) }()
		s.countChange(ctx, conversation)
		answer(ps, <-headSet)
	}
}

// answer answers each of ps with err.
func answer(ps []*groupedPost, err error) {
	for _, p := range ps {
		p.err = err
		close(p.done)
	}
}

// forgetIdle drops c, conversation's state, once no write of it is under
// way or waits (groups.mu held).
func (s *Store) forgetIdle(conversation string, c *convGroup) {
	if c.storing == 0 && c.covering == 0 && len(c.toStore) == 0 && len(c.toCover) == 0 && s.groups.convs[conversation] == c {
		delete(s.groups.convs, conversation)
	}
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
// messages, one statement per bucket, in bucket order.
func (s *Store) storeGroup(ctx context.Context, ps []*groupedPost) error {
	byBucket := map[int][]*groupedPost{}
	var buckets []int
	for _, p := range ps {
		b := chat.BucketOf(p.m.ID)
		if _, ok := byBucket[b]; !ok {
			buckets = append(buckets, b)
		}
		byBucket[b] = append(byBucket[b], p)
		if err := s.recordBucket(ctx, p.conv, b); err != nil {
			return err
		}
	}
	slices.Sort(buckets)
	for _, b := range buckets {
		if err := s.insertMessages(ctx, b, byBucket[b]); err != nil {
			return err
		}
	}
	return nil
}

// insertMessages writes the messages of ps, all of bucket, in one
// statement: their partition is one, so a batch of them is one mutation,
// applied whole or not at all.
func (s *Store) insertMessages(ctx context.Context, bucket int, ps []*groupedPost) error {
	room := ps[0].m.Room
	if len(ps) == 1 {
		q, err := s.query(ctx, insertMessage, messageValues(bucket, ps[0].m)...)
		if err != nil {
			return err
		}
		if err := q.Exec(); err != nil {
			return s.fail("post message in "+room, err)
		}
		return nil
	}
	sess, err := s.db()
	if err != nil {
		return err
	}
	b := sess.NewBatch(gocql.UnloggedBatch).WithContext(ctx).SpeculativeExecutionPolicy(s.speculative)
	b.SetConsistency(s.cfg.Consistency)
	b.Entries = make([]gocql.BatchEntry, 0, len(ps))
	for _, p := range ps {
		b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: insertMessage, Args: messageValues(bucket, p.m), Idempotent: true})
	}
	if err := sess.ExecuteBatch(b); err != nil {
		return s.fail(fmt.Sprintf("post %d messages in %s", len(ps), room), err)
	}
	return nil
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

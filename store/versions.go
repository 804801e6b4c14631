// This file owns the version of each conversation's newest page: its
// change count (conversation_versions), one increment after every change
// of its messages other than a post is stored (and after a post stored
// near the end of its day), and the marks posts leave in their day's
// partition (writers, see insertMessages). A room page reads both before
// it serves the conversation's newest page from memory (service/cache's
// Pages, docs/data-model.md "The newest page in memory").

package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	bumpVersion   = `UPDATE conversation_versions SET changes = changes + 1 WHERE conversation = ?`
	selectVersion = `SELECT changes FROM conversation_versions WHERE conversation = ?`
)

// bumpVersion counts one change of conversation, made after the change is
// stored: a count read after this increment is answered comes with a page
// read after it, which holds the change. An increment applied twice (a
// retry) only makes a kept page be read again.
func (s *Store) bumpVersion(ctx context.Context, conversation string) error {
	return s.exec(ctx, "count a change of "+conversation, bumpVersion, conversation)
}

// countChange counts a stored change of conversation (bumpVersion). Its
// failure does not fail the change, which is stored: a post answered 503
// after its message was stored is sent again by its client and stored
// twice (a counter write timed out whenever a node was killed, in
// e2e/chaos). The count is tried again in the background; meanwhile the
// change's hub event frees the page kept on every instance, so only a read
// on another instance before that event can miss it, as during any fault.
func (s *Store) countChange(ctx context.Context, conversation string) {
	err := s.bumpVersion(ctx, conversation)
	if err == nil {
		return
	}
	go func() {
		wait := time.Second
		for range recountTries {
			time.Sleep(wait)
			wait *= 2
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = s.bumpVersion(rctx, conversation)
			cancel()
			if err == nil {
				return
			}
		}
		s.log.Warn("store: a change is not counted; pages kept elsewhere learn of it from its event or their TTL",
			"conversation", conversation, "err", err)
	}()
}

// recountTries is how often a failed count is tried again (after 1, 2, 4,
// 8 and 16 s).
const recountTries = 5

// Changes is conversation's change count: it differs from one read
// earlier whenever a message was taken back, edited, deleted or reacted
// to since, or posted near the end of its day (0 for a conversation with
// none yet). One statement, one row.
func (s *Store) Changes(ctx context.Context, conversation string) (int64, error) {
	q, err := s.query(ctx, selectVersion, conversation)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := q.Scan(&n); err != nil {
		if errors.Is(err, gocql.ErrNotFound) {
			return 0, nil
		}
		return 0, s.fail("read the change count of "+conversation, err)
	}
	return n, nil
}

// Version is the state of conversation's newest page (chat.PageVersion):
// it differs from one read earlier whenever a change of the page was
// stored since, a post included. It reads the change count and, at once,
// the marks of the days the newest page reads first (today's, and
// tomorrow's within the hour before it starts, as MessagesBefore does):
// two or three statements, one row each.
func (s *Store) Version(ctx context.Context, conversation string) (chat.PageVersion, error) {
	now := s.Now()
	days := daysDown(now.Add(time.Hour), now, 0)
	marks := make([]string, len(days))
	errs := make(chan error, len(days))
	for i, day := range days {
		go func() {
			var err error
			marks[i], err = s.marks(ctx, conversation, day)
			errs <- err
		}()
	}
	n, err := s.Changes(ctx, conversation)
	for range days {
		if e := <-errs; err == nil {
			err = e
		}
	}
	if err != nil {
		return chat.PageVersion{}, err
	}
	return chat.PageVersion{Changes: n, Day: days[len(days)-1], Writers: strings.Join(marks, ";")}, nil
}

// marks are the marks of the writes of conversation's messages of day, in
// the order of their writers' names ("" for none).
func (s *Store) marks(ctx context.Context, conversation string, day int) (string, error) {
	q, err := s.query(ctx, selectWriters, conversation, day)
	if err != nil {
		return "", err
	}
	var writers map[string]gocql.UUID
	if err := q.Scan(&writers); err != nil {
		if errors.Is(err, gocql.ErrNotFound) {
			return "", nil
		}
		return "", s.fail("read the marks of "+conversation, err)
	}
	names := make([]string, 0, len(writers))
	for k := range writers {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, k := range names {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(writers[k].String())
		b.WriteByte(',')
	}
	return b.String(), nil
}

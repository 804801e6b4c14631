// This file owns each conversation's change count (conversation_versions):
// one increment after every change of its messages is stored, read by a
// room page before it serves the conversation's newest page from memory
// (service/cache's Pages, docs/data-model.md "The newest page in memory").

package store

import (
	"context"
	"errors"
	"time"

	"github.com/gocql/gocql"
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

// Version is conversation's change count: it differs from one read
// earlier whenever a message was posted, taken back, edited, deleted or
// reacted to since (0 for a conversation with none yet). One statement,
// one row.
func (s *Store) Version(ctx context.Context, conversation string) (int64, error) {
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

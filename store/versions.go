// This file owns each conversation's change count (conversation_versions):
// one increment after every change of its messages is stored, read by a
// room page before it serves the conversation's newest page from memory
// (service/cache's Pages, docs/data-model.md "The newest page in memory").

package store

import (
	"context"
	"errors"

	"github.com/gocql/gocql"
)

const (
	bumpVersion   = `UPDATE conversation_versions SET changes = changes + 1 WHERE conversation = ?`
	selectVersion = `SELECT changes FROM conversation_versions WHERE conversation = ?`
)

// bumpVersion counts one change of conversation, made after the change is
// stored: a count read after this increment is answered comes with a page
// read after it, which holds the change. An increment applied twice (a
// retry) only makes a kept page be read again. A failure is returned: the
// change is stored, but the pages kept on every instance would not know
// of it until their TTL (the caller says the write failed, as for any
// other statement of it).
func (s *Store) bumpVersion(ctx context.Context, conversation string) error {
	return s.exec(ctx, "count a change of "+conversation, bumpVersion, conversation)
}

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

// This file owns notification levels: how much each of a person's
// conversations tells them (issue 19). A level lives beside the person's
// read marker of the conversation (schema 011), so reading the markers
// reads the levels too.

package store

import (
	"context"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const updateLevel = `UPDATE read_markers SET level = ? WHERE login = ? AND conversation = ?`

// SetLevel sets login's level in conversation (one write, no read; the
// caller checks that login takes part in it).
func (s *Store) SetLevel(ctx context.Context, login, conversation string, level chat.Level) error {
	if _, err := chat.ParseLevel(string(level)); err != nil {
		return err
	}
	sess, err := s.db()
	if err != nil {
		return err
	}
	// Beside the person's marker (their pages read it) and in the
	// conversation's levels (push reads them), in one logged batch.
	b := sess.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: updateLevel, Args: []any{string(level), login, conversation}, Idempotent: true},
		gocql.BatchEntry{Stmt: insertConvLvl, Args: []any{conversation, login, string(level)}, Idempotent: true})
	if err := sess.ExecuteBatch(b); err != nil {
		return s.fail("set the level of "+conversation, err)
	}
	return nil
}

// This file owns notification levels: how much each of a person's
// conversations tells them (issue 19). A level lives beside the person's
// read marker of the conversation (schema 011), so reading the markers
// reads the levels too.
package store

import (
	"context"
	"strings"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

// Level is how much a conversation tells a person.
type Level string

// The levels: every message, only messages that mention the person, or
// nothing (its unread badge becomes a quiet dot).
const (
	LevelEverything Level = "everything"
	LevelMentions   Level = "mentions"
	LevelNothing    Level = "nothing"
)

// Levels are the levels in the order a menu offers them.
var Levels = []Level{LevelEverything, LevelMentions, LevelNothing}

const updateLevel = `UPDATE read_markers SET level = ? WHERE login = ? AND conversation = ?`

// DefaultLevel is a conversation's level until its person sets one:
// everything for a DM, mentions for a room.
func DefaultLevel(conversation string) Level {
	if strings.HasPrefix(conversation, chat.DMPrefix) {
		return LevelEverything
	}
	return LevelMentions
}

// ParseLevel reads a level from a form, or returns a chat.ValidationError.
func ParseLevel(s string) (Level, error) {
	for _, l := range Levels {
		if string(l) == s {
			return l, nil
		}
	}
	return "", chat.ValidationError{"level": "Choose everything, mentions or nothing."}
}

// LevelOf is login's level in conversation as m read it.
func (m Markers) LevelOf(conversation string) Level {
	if l, ok := m.Level[conversation]; ok {
		return l
	}
	return DefaultLevel(conversation)
}

// SetLevel sets login's level in conversation (one write, no read; the
// caller checks that login takes part in it).
func (s *Store) SetLevel(ctx context.Context, login, conversation string, level Level) error {
	if _, err := ParseLevel(string(level)); err != nil {
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

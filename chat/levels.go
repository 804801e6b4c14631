// This file owns notification levels: how much a conversation tells a
// person, and the read and mention markers they are kept with.

package chat

import "strings"

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

// DefaultLevel is a conversation's level until its person sets one:
// everything for a DM, mentions for a room.
func DefaultLevel(conversation string) Level {
	if strings.HasPrefix(conversation, DMPrefix) {
		return LevelEverything
	}
	return LevelMentions
}

// ParseLevel reads a level from a form, or returns a ValidationError.
func ParseLevel(s string) (Level, error) {
	for _, l := range Levels {
		if string(l) == s {
			return l, nil
		}
	}
	return "", ValidationError{"level": "Choose everything, mentions or nothing."}
}

// LevelOf is login's level in conversation as m read it.
func (m Markers) LevelOf(conversation string) Level {
	if l, ok := m.Level[conversation]; ok {
		return l
	}
	return DefaultLevel(conversation)
}

// Markers is what one partition read says of a person's conversations:
// the read marker in each (Read), and the newest message that mentions
// them in each (Mention; see RecordMentions).
type Markers struct {
	Read, Mention map[string]ID
	// Level holds the levels the person set (see LevelOf); PersonalState
	// reads them, ReadMarkers does not.
	Level map[string]Level
}

// UnreadMention reports whether the person's newest mention in conversation is
// past their marker there.
func (m Markers) UnreadMention(conversation string) bool {
	mention, ok := m.Mention[conversation]
	return ok && mention.After(m.Read[conversation])
}

// UnreadState is a person's unread messages and unread mentions, by
// conversation id.
type UnreadState struct {
	Unread, Mentions map[string]int
}

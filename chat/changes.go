// This file owns the changes of a message: edits, deletes and reactions,
// who may make them, and how reactions are shown.

package chat

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

const (
	// MaxReactionText is the longest reaction, in characters: one emoji
	// (which may be several code points) or a short word.
	MaxReactionText = 16
	// MaxReactions is how many distinct reactions a message takes (the
	// store refuses more) and shows.
	MaxReactions = 20
	// ChangeRetention is how long the change log keeps a change (the
	// table's TTL): a stream that resumes from further back reloads.
	ChangeRetention = 30 * 24 * time.Hour
)

// Kinds of change.
const (
	ChangeEdit     = "edit"
	ChangeDelete   = "delete"
	ChangeReaction = "reaction"
)

// Reaction is one person's reaction to a message.
type Reaction struct {
	Emoji   string
	Reactor UserRef
	// Change is the id of the change that added it: the newest action of
	// a person on an emoji wins, here as in Cassandra.
	Change ID
}

// Change is one edit, delete or reaction of a message, as the change log
// holds it for a resumed stream.
type Change struct {
	ID      ID
	Message ID
	Kind    string
	// Content is an edit's new text.
	Content string
	// Emoji, Reactor and Added say who added (or took back) which reaction.
	Emoji   string
	Reactor UserRef
	Added   bool
}

// CanEdit returns ErrNotAuthor unless login wrote m, and a system message
// is nobody's to edit.
func CanEdit(m Message, login string) error {
	if m.System || m.Author.Login != login {
		return fmt.Errorf("store: edit %s by %q: %w", m.ID, login, ErrNotAuthor)
	}
	return nil
}

// CanDelete says whether login may delete m: its author may (a system
// message has none), and so may a moderator of its room (its creator or
// one of its admins, as the caller read the room).
func CanDelete(m Message, login string, moderator bool) error {
	if (m.Author.Login == login && !m.System) || moderator {
		return nil
	}
	return fmt.Errorf("store: delete %s by %q: %w", m.ID, login, ErrNotAuthor)
}

// CheckReaction cleans a reaction and returns it, or a ValidationError
// unless it is one line of 1 to MaxReactionText visible characters with
// no control character. Cleaning makes reactions that look alike one
// reaction: format characters (zero-width space, word joiner, bidi
// controls, BOM) and other invisible ones are dropped, except a zero-width
// joiner inside an emoji sequence (👩‍💻) and the tags of a flag (🏴 +
// tags), then the text is put in NFC and its edges trimmed.
func CheckReaction(text string) (string, error) {
	if !utf8.ValidString(text) {
		return "", ValidationError{"emoji": "Not valid text."}
	}
	text = norm.NFC.String(dropInvisible(text))
	text, problem := cleanText(text, textRule{required: true, max: MaxReactionText, empty: "Pick a reaction."})
	if problem == "" && strings.ContainsAny(text, "\t") {
		problem = "Must be on one line."
	}
	if problem != "" {
		return "", ValidationError{"emoji": problem}
	}
	return text, nil
}

// dropInvisible is text without the characters that show nothing but
// would make a reaction differ from its look-alike: format characters
// (Cf) and other default-ignorable code points, and variation selectors
// that follow no symbol. It keeps what emoji need: a zero-width joiner
// between two symbols (👩‍💻, 🏳️‍🌈: the one before may end in a variation
// selector or a skin tone), a variation selector after a symbol, and the
// tag characters that follow a black flag (subdivision flags).
func dropInvisible(text string) string {
	runes := []rune(text)
	out := make([]rune, 0, len(runes))
	for i, r := range runes {
		var prev, next rune
		if len(out) > 0 {
			prev = out[len(out)-1]
		}
		if i+1 < len(runes) {
			next = runes[i+1]
		}
		switch {
		case r == '\u200D':
			if emojiPart(prev) && unicode.Is(unicode.So, next) {
				out = append(out, r)
			}
		case r >= '\U000E0020' && r <= '\U000E007F':
			if prev == '\U0001F3F4' || (prev >= '\U000E0020' && prev <= '\U000E007E') {
				out = append(out, r)
			}
		case unicode.Is(unicode.Variation_Selector, r):
			if unicode.Is(unicode.So, prev) || (prev >= '0' && prev <= '9') || prev == '#' || prev == '*' {
				out = append(out, r)
			}
		case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		default:
			out = append(out, r)
		}
	}
	return string(out)
}

// emojiPart reports whether r may end an emoji that a zero-width joiner
// continues: a symbol, a variation selector or a skin tone.
func emojiPart(r rune) bool {
	return unicode.Is(unicode.So, r) || unicode.Is(unicode.Variation_Selector, r) || (r >= '\U0001F3FB' && r <= '\U0001F3FF')
}

// ReactionGroup is the people who reacted to a message with one emoji.
type ReactionGroup struct {
	Emoji  string
	People []UserRef
}

// Has reports whether login is among the group's people.
func (g ReactionGroup) Has(login string) bool {
	for _, p := range g.People {
		if p.Login == login {
			return true
		}
	}
	return false
}

// GroupReactions groups a message's reactions by emoji, in the order each
// emoji was first used, keeping the first MaxReactions emojis: no read
// stands before a reaction, so the bound is kept where reactions are shown.
func GroupReactions(rs []Reaction) []ReactionGroup {
	var out []ReactionGroup
	index := map[string]int{}
	for _, r := range sortedByChange(rs) {
		i, ok := index[r.Emoji]
		if !ok {
			if len(out) == MaxReactions {
				continue
			}
			i = len(out)
			index[r.Emoji] = i
			out = append(out, ReactionGroup{Emoji: r.Emoji})
		}
		out[i].People = append(out[i].People, r.Reactor)
	}
	return out
}

// sortedByChange is a copy of rs, oldest change first.
func sortedByChange(rs []Reaction) []Reaction {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b Reaction) int {
		switch {
		case b.Change.After(a.Change):
			return -1
		case a.Change.After(b.Change):
			return 1
		}
		return 0
	})
	return out
}

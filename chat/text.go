// This file owns how user text is cleaned before it is stored: line ends
// made "\n", edges trimmed, and the checks every stored text passes (valid
// UTF-8, no control characters, something visible, a length bound, and for
// one-line fields no line breaks and no bidi overrides). Logins and room
// names are stricter still (ASCII, see ValidName) and keyed by NameKey.

package chat

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// textRule is what one kind of field accepts.
type textRule struct {
	// multiline fields (message content, bio) keep "\n" and "\t"; one-line
	// fields (first and last name, banner) refuse every line break, and
	// also refuse bidi overrides and isolates, which could make a name
	// shown beside others read as something else.
	multiline bool
	// required fields must hold at least one visible character; an
	// optional one may be empty, but not made only of invisible
	// characters (which would look empty and not be).
	required bool
	// max is the longest text, in characters, after cleaning.
	max int
	// empty is the sentence shown when a required field has nothing
	// visible ("Required." if unset).
	empty string
}

var (
	nameRule    = textRule{required: true, max: 50}
	bannerRule  = textRule{max: 200}
	bioRule     = textRule{multiline: true, max: 500}
	contentRule = textRule{multiline: true, required: true, max: MaxContent, empty: "Write something first."}
)

// cleanText returns s with its line ends normalised ("\r\n" and a lone
// "\r" become "\n": a browser's EventSource also ends a line at a lone
// "\r", so none may reach a stored text) and its edges trimmed, or a
// sentence saying why s is refused. The result of an accepted text is
// accepted again unchanged.
func cleanText(s string, rule textRule) (string, string) {
	if !utf8.ValidString(s) {
		return "", "Not valid text."
	}
	s = strings.TrimSpace(normalizeNewlines(s))
	visible := false
	for _, r := range s {
		switch {
		case !rule.multiline && isLineBreak(r):
			return "", "Must be on one line."
		case unicode.IsControl(r) && !(rule.multiline && (r == '\n' || r == '\t')):
			return "", fmt.Sprintf("Control characters (such as %U) are not allowed.", r)
		case !rule.multiline && isBidiControl(r):
			return "", fmt.Sprintf("Text direction controls (such as %U) are not allowed here.", r)
		case !visible && !isInvisible(r):
			visible = true
		}
	}
	switch {
	case !visible && rule.required && rule.empty != "":
		return "", rule.empty
	case !visible && rule.required:
		return "", "Required."
	case !visible && s != "":
		return "", "Only invisible characters: write something, or leave it empty."
	}
	if n := utf8.RuneCountInString(s); n > rule.max {
		return "", fmt.Sprintf("At most %d characters (this has %d).", rule.max, n)
	}
	return s, ""
}

// checkField cleans *s by rule in place, or records why it is refused.
func checkField(v ValidationError, field string, s *string, rule textRule) {
	clean, problem := cleanText(*s, rule)
	if problem != "" {
		v[field] = problem
		return
	}
	*s = clean
}

// normalizeNewlines turns "\r\n" and every lone "\r" into "\n".
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// isLineBreak reports whether r ends a line somewhere: "\n", "\r",
// vertical tab, form feed, NEL, and the Unicode line and paragraph
// separators.
func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// isBidiControl reports whether r is a bidi embedding, override or isolate
// (U+202A–U+202E, U+2066–U+2069). The marks LRM, RLM and ALM stay allowed:
// they only nudge neutral characters and cannot reorder a whole name.
func isBidiControl(r rune) bool {
	return (r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069')
}

// isInvisible reports whether r shows nothing on its own: white space,
// controls, format characters (zero-width space, joiners, word joiner,
// BOM, soft hyphen, bidi controls, tags), the other default-ignorable code
// points (Hangul fillers, combining grapheme joiner), variation selectors
// and the blank Braille pattern, which fonts draw empty.
func isInvisible(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) ||
		unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r) ||
		r == '\u2800'
}

// NameKey is the key under which a login or room name is stored, looked up
// and linked: its lower-case form, so names are unique whatever their case.
// A string that is not a valid name is returned unchanged (and so is found
// nowhere). Valid names are ASCII, so no Unicode case folding (such as the
// Kelvin sign to "k") can make an invalid name valid.
func NameKey(name string) string {
	if !ValidName(name) {
		return name
	}
	return strings.ToLower(name)
}

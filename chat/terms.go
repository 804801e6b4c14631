// This file owns the search tokeniser: the one function that turns text
// into the terms a message is indexed under and a query looks for, so the
// writer and the reader can never disagree.

package chat

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// maxTermBytes is the longest word indexed, in bytes after folding: longer
// ones are hashes, URLs' innards or noise, and would bloat the index.
const maxTermBytes = 40

// Word is one indexed form of a word: Form as folded (the prefix search
// matches it) and Term, what the message is indexed under (Form stemmed).
type Word struct {
	Form, Term string
}

// TermSpan is a word of a text: its bytes [Start, End) in the text as
// written, and the forms it is indexed under (several for an identifier
// such as deploy_pipeline: the whole and its parts).
type TermSpan struct {
	Start, End int
	Words      []Word
}

// stopWords are dropped at write and query time: they are in nearly every
// message, so they would make the biggest partitions and narrow nothing.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by for from if in into is it its
		no not of on or so such that the their then there these they this to was were will with
		i me my we our you your he him his she her them do does did have has had been am`) {
		stopWords[w] = true
	}
}

// folder folds case, width and diacritics: "Café" and "CAFE" are "cafe",
// "ｔｅｓｔ" is "test". A transformer is not safe for concurrent use, so
// each call makes its own chain (cheap: no allocation until used). ASCII
// text, most of what is indexed, has no diacritics nor widths: folding it
// is lower-casing it, without the chain (which cost an import most of its
// own CPU).
func fold(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	return foldUnicode(s)
}

func foldUnicode(s string) string {
	t := transform.Chain(norm.NFKD, runes.Remove(runes.In(unicode.Mn)), cases.Fold(), norm.NFC)
	out, _, err := transform.String(t, s)
	if err != nil {
		return strings.ToLower(s)
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isCJK reports whether r is written without spaces between words: such
// runs are indexed as overlapping bigrams.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_'
}

func isApostrophe(r rune) bool { return r == '\'' || r == '’' }

// TermSpans splits text into words (Unicode letters, digits and marks;
// "_" and an apostrophe between letters join), folds case and diacritics,
// drops stop words and words over 40 bytes, and stems English. An
// identifier (TestFoo, deploy_pipeline) is indexed whole and by its parts;
// a run of CJK characters by its overlapping bigrams (one character alone
// by itself). Spans come in text order.
func TermSpans(text string) []TermSpan {
	var out []TermSpan
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case isCJK(r):
			end := i
			for end < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[end:])
				if !isCJK(r2) {
					break
				}
				end += s2
			}
			if words := cjkWords(fold(text[i:end])); len(words) > 0 {
				out = append(out, TermSpan{Start: i, End: end, Words: words})
			}
			i = end
		case isWordRune(r):
			end := i
			for end < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[end:])
				if isWordRune(r2) && !isCJK(r2) {
					end += s2
					continue
				}
				// An apostrophe joins only letters: "don't", "O’Brien".
				if isApostrophe(r2) && end+s2 < len(text) {
					if next, _ := utf8.DecodeRuneInString(text[end+s2:]); unicode.IsLetter(next) && !isCJK(next) {
						end += s2
						continue
					}
				}
				break
			}
			start, stop := i, end
			for start < stop && text[start] == '_' {
				start++
			}
			for stop > start && text[stop-1] == '_' {
				stop--
			}
			if words := latinWords(text[start:stop]); len(words) > 0 {
				out = append(out, TermSpan{Start: start, End: stop, Words: words})
			}
			i = end
		default:
			i += size
		}
	}
	return out
}

// Terms is the distinct terms of text, in order of first appearance.
func Terms(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, sp := range TermSpans(text) {
		for _, w := range sp.Words {
			if !seen[w.Term] {
				seen[w.Term] = true
				out = append(out, w.Term)
			}
		}
	}
	return out
}

// latinWords indexes one word as written: folded and stemmed, or, for an
// identifier, whole (folded, not stemmed) and by each part.
func latinWords(raw string) []Word {
	if raw == "" {
		return nil
	}
	whole := strings.ReplaceAll(fold(raw), "’", "'")
	if len(whole) > maxTermBytes {
		return nil
	}
	parts := identifierParts(raw)
	if len(parts) < 2 {
		if w, ok := stemmed(whole); ok {
			return []Word{w}
		}
		return nil
	}
	out := []Word{{Form: whole, Term: whole}}
	for _, p := range parts {
		if w, ok := stemmed(fold(p)); ok && w.Term != whole {
			out = append(out, w)
		}
	}
	return out
}

// stemmed is a folded word with its English stem, or false for a stop word.
func stemmed(form string) (Word, bool) {
	if form == "" || stopWords[form] {
		return Word{}, false
	}
	if !isLatin(form) {
		return Word{Form: form, Term: form}, true
	}
	return Word{Form: form, Term: english.Stem(form, true)}, true
}

// isLatin reports whether a folded word is only a–z, digits and
// apostrophes: the English stemmer is for those alone.
func isLatin(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '\'') {
			return false
		}
	}
	return true
}

// identifierParts splits a code identifier at "_" and where lower case
// turns upper (TestFoo → Test, Foo; HTTPServer → HTTP, Server). A plain
// word is one part.
func identifierParts(raw string) []string {
	var parts []string
	for _, chunk := range strings.Split(raw, "_") {
		rs := []rune(chunk)
		start := 0
		for k := 1; k < len(rs); k++ {
			lowerToUpper := unicode.IsLower(rs[k-1]) && unicode.IsUpper(rs[k])
			acronymEnd := k+1 < len(rs) && unicode.IsUpper(rs[k-1]) && unicode.IsUpper(rs[k]) && unicode.IsLower(rs[k+1])
			if lowerToUpper || acronymEnd {
				parts = append(parts, string(rs[start:k]))
				start = k
			}
		}
		if start < len(rs) {
			parts = append(parts, string(rs[start:]))
		}
	}
	return parts
}

// cjkWords is a folded CJK run's overlapping bigrams, or the character
// alone for a run of one.
func cjkWords(run string) []Word {
	rs := []rune(run)
	if len(rs) == 1 {
		return []Word{{Form: run, Term: run}}
	}
	out := make([]Word, 0, len(rs)-1)
	for k := 0; k+1 < len(rs); k++ {
		bi := string(rs[k : k+2])
		out = append(out, Word{Form: bi, Term: bi})
	}
	return out
}

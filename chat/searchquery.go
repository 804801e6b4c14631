// This file owns the search query language and what it means for one
// message: which messages match, and which words of one to mark.

package chat

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// minPrefix is the shortest prefix a query may end with "*": shorter ones
// expand to too many words.
const minPrefix = 3

// A search's statements grow with its terms (each reads its places and
// postings in every month searched), so a query is bounded: only its
// first MaxSearchQuery characters are read, and only its first
// MaxSearchTerms terms and prefixes searched; the rest is ignored, and
// said so (SearchQuery.Cut, Ignored).
const (
	MaxSearchQuery = 500
	MaxSearchTerms = 16
)

// SearchQuery is a parsed search: every Term must be in the message, each
// Prefix must begin one of its words, each Phrase must be in its text, From
// (if set) is its author and In (if set) names its conversation as typed
// ("#room" or "@login").
type SearchQuery struct {
	Terms    []string
	Prefixes []string
	Phrases  []string
	From     string
	In       string
	// Cut says the query was longer than MaxSearchQuery characters and
	// only its beginning (CutSearch) was read; Ignored counts the terms, prefixes
	// and phrases beyond MaxSearchTerms (or a phrase's words beyond it)
	// that were left out.
	Cut     bool
	Ignored int
}

// FromTerm is the term a message is indexed under for its author: no word
// can contain ':', so it never meets a term of the text.
func FromTerm(login string) string { return "from:" + login }

// ParseSearch reads a query: words (all must match), "exact phrases",
// word* (a prefix of at least 3 characters), from:login and in:#room or
// in:@login. It returns a ValidationError (field "q") for a query with
// nothing to look for, a short prefix, or a malformed from: or in:, and a
// MalformedError for one that is not UTF-8 text.
func ParseSearch(raw string) (SearchQuery, error) {
	if !utf8.ValidString(raw) {
		return SearchQuery{}, MalformedError("The search is not valid text.")
	}
	var q SearchQuery
	raw, q.Cut = CutSearch(raw)
	seen := map[string]bool{}
	room := func() bool { return len(q.Terms)+len(q.Prefixes) < MaxSearchTerms }
	addTerms := func(text string) {
		for _, t := range Terms(text) {
			switch {
			case seen[t]:
			case !room():
				q.Ignored++
			default:
				seen[t] = true
				q.Terms = append(q.Terms, t)
			}
		}
	}
	for _, tok := range splitQuery(raw) {
		switch {
		case tok.phrase && len(q.Phrases) == MaxSearchTerms:
			q.Ignored++
		case tok.phrase:
			if p := phraseText(tok.text); p != "" {
				q.Phrases = append(q.Phrases, p)
				addTerms(tok.text)
			}
		case hasFold(tok.text, "from:"):
			login := strings.ToLower(strings.TrimPrefix(tok.text[len("from:"):], "@"))
			if !ValidName(login) {
				return SearchQuery{}, ValidationError{"q": "from: takes a login, as in from:ada."}
			}
			q.From = login
		case hasFold(tok.text, "in:"):
			in := tok.text[len("in:"):]
			if len(in) < 2 || (in[0] != '#' && in[0] != '@') || !ValidName(in[1:]) {
				return SearchQuery{}, ValidationError{"q": "in: takes a room or a person, as in in:#lobby or in:@ada."}
			}
			q.In = in[:1] + strings.ToLower(in[1:])
		case strings.HasSuffix(tok.text, "*"):
			p := fold(strings.TrimRight(tok.text, "*"))
			if len(p) < minPrefix || strings.IndexFunc(p, func(r rune) bool { return !isWordRune(r) }) >= 0 {
				return SearchQuery{}, ValidationError{"q": "A prefix search needs at least 3 letters before the *, as in depl*."}
			}
			if !room() {
				q.Ignored++
				continue
			}
			q.Prefixes = append(q.Prefixes, p)
		default:
			addTerms(tok.text)
		}
	}
	if len(q.Terms) == 0 && len(q.Prefixes) == 0 && q.From == "" {
		return SearchQuery{}, ValidationError{"q": "Type a word to search for (words as common as \"the\" are not searched)."}
	}
	return q, nil
}

// CutSearch is the part of a query that is read: raw trimmed, and if
// longer than MaxSearchQuery characters, its beginning, ended before the
// word the cut would split (unless that word is all there is); and
// whether anything was cut.
func CutSearch(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if utf8.RuneCountInString(raw) <= MaxSearchQuery {
		return raw, false
	}
	end, n := 0, 0
	for i := range raw {
		if n == MaxSearchQuery {
			end = i
			break
		}
		n++
	}
	cut := raw[:end]
	if next, _ := utf8.DecodeRuneInString(raw[end:]); !unicode.IsSpace(next) {
		if i := strings.LastIndexFunc(cut, unicode.IsSpace); i > 0 {
			cut = cut[:i]
		}
	}
	return strings.TrimSpace(cut), true
}

func hasFold(s, prefix string) bool {
	return len(s) > len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

type queryToken struct {
	text   string
	phrase bool
}

// splitQuery cuts a query at spaces, keeping "quoted phrases" whole (a
// quote left open runs to the end).
func splitQuery(raw string) []queryToken {
	var out []queryToken
	for raw = strings.TrimSpace(raw); raw != ""; raw = strings.TrimSpace(raw) {
		if raw[0] == '"' {
			end := strings.IndexByte(raw[1:], '"')
			if end < 0 {
				out = append(out, queryToken{text: raw[1:], phrase: true})
				break
			}
			out = append(out, queryToken{text: raw[1 : 1+end], phrase: true})
			raw = raw[end+2:]
			continue
		}
		end := strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
		if end < 0 {
			end = len(raw)
		}
		out = append(out, queryToken{text: raw[:end]})
		raw = raw[end:]
	}
	return out
}

// phraseText is text folded with its spaces collapsed: a phrase and a
// message are compared in this form.
func phraseText(text string) string {
	return strings.Join(strings.Fields(fold(text)), " ")
}

// IndexedText is what a message is searchable by: its text and the name
// of its file.
func IndexedText(m Message) string {
	if m.Attachment != nil && m.Attachment.Name != "" {
		return m.Content + "\n" + m.Attachment.Name
	}
	return m.Content
}

// Matches reports whether m, as it is now, answers q: the index may be
// behind an edit, so every result is checked against the message itself.
// System messages are never results.
func (q SearchQuery) Matches(m Message) bool {
	if m.System || (q.From != "" && m.Author.Login != q.From) {
		return false
	}
	text := IndexedText(m)
	terms, forms := map[string]bool{}, []string{}
	for _, sp := range TermSpans(text) {
		for _, w := range sp.Words {
			terms[w.Term] = true
			forms = append(forms, w.Form)
		}
	}
	for _, t := range q.Terms {
		if !terms[t] {
			return false
		}
	}
	for _, p := range q.Prefixes {
		found := false
		for _, f := range forms {
			if strings.HasPrefix(f, p) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if len(q.Phrases) > 0 {
		folded := phraseText(text)
		for _, p := range q.Phrases {
			if !strings.Contains(folded, p) {
				return false
			}
		}
	}
	return true
}

// Marks are the byte ranges of content to highlight for q: every word
// indexed under one of its terms or beginning with one of its prefixes.
func (q SearchQuery) Marks(content string) [][2]int {
	want := map[string]bool{}
	for _, t := range q.Terms {
		want[t] = true
	}
	var out [][2]int
	for _, sp := range TermSpans(content) {
		for _, w := range sp.Words {
			if want[w.Term] || hasAnyPrefix(w.Form, q.Prefixes) {
				out = append(out, [2]int{sp.Start, sp.End})
				break
			}
		}
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// SearchStats says what one search read: statements sent and index rows
// read. The load command reports them.
type SearchStats struct {
	Statements, Postings, Checked int
}

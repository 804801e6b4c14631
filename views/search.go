// This file owns the view models of search and the one function that
// cuts a result's text into plain and highlighted pieces.

package views

import (
	"net/url"

	"github.com/killrchat/killrchat/chat"
)

// SearchView is the search page: the query, the error it had if any, the
// viewer's recent searches and a page of results.
type SearchView struct {
	Query, Error string
	// Notice says what of the query was ignored (too long, too many
	// words), beside its results.
	Notice string
	Recent []string
	// Searched says a query ran (so "no results" can be said).
	Searched bool
	Results  []SearchResult
	// More links to the next page of results; "" on the last.
	More string
}

// SearchResult is a message found: where, by whom, its text in pieces
// (the matched words marked) and its permalink.
type SearchResult struct {
	ID     chat.ID
	Author chat.UserRef
	Place  string
	Link   string
	Text   []TextPiece
}

// TextPiece is a run of a result's text, marked or not.
type TextPiece struct {
	Text string
	Mark bool
}

// Highlight cuts text at marks (byte ranges, in order, not overlapping):
// the pieces are escaped when rendered like any text, and <mark> is the
// only markup a result adds.
func Highlight(text string, marks [][2]int) []TextPiece {
	var out []TextPiece
	at := 0
	for _, m := range marks {
		if m[0] < at || m[1] > len(text) || m[0] >= m[1] {
			continue
		}
		if m[0] > at {
			out = append(out, TextPiece{Text: text[at:m[0]]})
		}
		out = append(out, TextPiece{Text: text[m[0]:m[1]], Mark: true})
		at = m[1]
	}
	if at < len(text) {
		out = append(out, TextPiece{Text: text[at:]})
	}
	return out
}

// urlQuery escapes s for a URL's query string.
func urlQuery(s string) string { return url.QueryEscape(s) }

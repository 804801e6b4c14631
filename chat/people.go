package chat

import "strings"

// FoldName is a name as the people directory sorts and finds it: case,
// width and accents folded ("Émilie" is "emilie"), spaces trimmed.
func FoldName(s string) string { return fold(strings.TrimSpace(s)) }

// PeopleCursor is where a page of the people directory ends: the last
// login shown from the logins, and the last name term and its login
// shown from the names (a search reads both).
type PeopleCursor struct {
	Login     string `json:"l,omitempty"`
	NameTerm  string `json:"t,omitempty"`
	NameLogin string `json:"n,omitempty"`
}

// This file owns mentions: where a message names a member, and a mention
// as the mentioned person lists it.

package chat

import (
	"regexp"
	"strings"
)

// MentionSpan is where a message's text mentions a member: the byte range
// [Start, End) of "@login" as typed, and the member's login.
type MentionSpan struct {
	Start, End int
	Login      string
}

// MentionSpans returns every mention of a member in content, in order
// (repeats included), so that a reader shows exactly what Mentioned
// records. Trailing ".", "_" and "-" end a sentence, not a login.
func MentionSpans(content string, members map[string]UserRef) []MentionSpan {
	if strings.IndexByte(content, '@') < 0 || len(members) == 0 {
		return nil // most messages mention no one: no regexp to run
	}
	var out []MentionSpan
	for _, loc := range mentionToken.FindAllStringSubmatchIndex(content, -1) {
		raw := strings.TrimRight(content[loc[2]:loc[3]], "._-")
		login := strings.ToLower(raw)
		if _, ok := members[login]; ok {
			out = append(out, MentionSpan{Start: loc[2] - 1, End: loc[2] + len(raw), Login: login})
		}
	}
	return out
}

// Mentioned returns the logins of members that content mentions, each
// once, in order of first mention (author included if they mention
// themselves). An "@login" in Markdown code (a fenced block or a `span`)
// is not a mention: the page shows it as code.
func Mentioned(content string, members map[string]UserRef) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range MentionSpans(withoutCode(content), members) {
		if !seen[m.Login] {
			seen[m.Login] = true
			out = append(out, m.Login)
		}
	}
	return out
}

// Mention is a message that mentions someone.
type Mention struct {
	MessageID    ID
	Conversation string
	Author       UserRef
	Excerpt      string
}

// mentionToken is "@" and a login-shaped word, not inside an e-mail
// address or another word.
var mentionToken = regexp.MustCompile(`(?:^|[^\w@.+-])@([a-zA-Z0-9][a-zA-Z0-9_.-]{1,40})`)

// MentionCandidates are the logins that contents name after "@", each
// once: who they mention if they are members.
func MentionCandidates(contents []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range contents {
		if strings.IndexByte(c, '@') < 0 {
			continue
		}
		for _, loc := range mentionToken.FindAllStringSubmatchIndex(c, -1) {
			login := strings.ToLower(strings.TrimRight(c[loc[2]:loc[3]], "._-"))
			if !seen[login] && ValidName(login) && len(out) < maxMentionLookups {
				seen[login] = true
				out = append(out, login)
			}
		}
	}
	return out
}

// withoutCode is content with its Markdown code (fenced blocks and code
// spans) blanked out, byte for byte, as the page's renderer reads them in
// the common cases.
func withoutCode(content string) string {
	if !strings.ContainsAny(content, "`~") {
		return content
	}
	b := []byte(content)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	// Fenced blocks: from a line opening with ``` or ~~~ to the line that
	// closes it with at least as many of the same, or the end.
	var fence string
	start := 0
	for lineStart := 0; lineStart < len(b); {
		end := strings.IndexByte(content[lineStart:], '\n')
		if end < 0 {
			end = len(content)
		} else {
			end += lineStart + 1
		}
		line := strings.TrimLeft(content[lineStart:end], " ")
		switch {
		case fence == "" && (strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~")):
			n := len(line) - len(strings.TrimLeft(line, line[:1]))
			fence, start = strings.Repeat(line[:1], n), lineStart
		case fence != "" && strings.HasPrefix(strings.TrimSpace(line), fence):
			blank(start, end)
			fence = ""
		}
		lineStart = end
	}
	if fence != "" {
		blank(start, len(b))
	}
	// Code spans: a run of backticks up to the next run of the same length.
	s := string(b)
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		n := len(s[i:]) - len(strings.TrimLeft(s[i:], "`"))
		closing := -1
		for j := i + n; j < len(s); {
			k := strings.IndexByte(s[j:], '`')
			if k < 0 {
				break
			}
			k += j
			m := len(s[k:]) - len(strings.TrimLeft(s[k:], "`"))
			if m == n {
				closing = k
				break
			}
			j = k + m
		}
		if closing < 0 {
			i += n
			continue
		}
		blank(i, closing+n)
		i = closing + n
	}
	return string(b)
}

// maxMentionLookups bounds the logins one lookup of a room's members
// reads (see Mentionable).
const maxMentionLookups = 100

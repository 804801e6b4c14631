// This file owns Slack's mrkdwn as incoming webhooks send it, turned
// into the Markdown messages are written in: *bold* is **bold**,
// ~strike~ is ~~strike~~, _italic_ stays, <url|label> is [label](url),
// <url> an autolink, <@login> a mention where the id is a login,
// <!here> and <!channel> plain words, and Slack's three escaped
// characters (&amp; &lt; &gt;) are themselves again.

package chat

import (
	"regexp"
	"strings"
)

var (
	slackAngle  = regexp.MustCompile(`<([^<>\n]+)>`)
	slackBold   = regexp.MustCompile(`(^|[\s(\[{"'])\*([^*\n]+?)\*($|[\s)\]}"'.,;:!?])`)
	slackStrike = regexp.MustCompile(`(^|[\s(\[{"'])~([^~\n]+?)~($|[\s)\]}"'.,;:!?])`)
	// slackCode is a code span or block: left as it is.
	slackCode = regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
)

// SlackToMarkdown is text in Slack's mrkdwn written as this project's
// Markdown.
func SlackToMarkdown(text string) string {
	// Code is left alone: cut it out, convert the rest, put it back.
	var codes []string
	text = slackCode.ReplaceAllStringFunc(text, func(c string) string {
		codes = append(codes, c)
		return "\x00" + string(rune('a'+len(codes)-1)) + "\x00"
	})
	text = slackAngle.ReplaceAllStringFunc(text, slackLink)
	text = slackBold.ReplaceAllString(text, "$1**$2**$3")
	text = slackStrike.ReplaceAllString(text, "$1~~$2~~$3")
	text = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(text)
	for i, c := range codes {
		text = strings.Replace(text, "\x00"+string(rune('a'+i))+"\x00", strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(c), 1)
	}
	return text
}

// slackLink is one <…> of mrkdwn as Markdown.
func slackLink(m string) string {
	inner := m[1 : len(m)-1]
	target, label, _ := strings.Cut(inner, "|")
	switch {
	case strings.HasPrefix(target, "@"):
		id := target[1:]
		if ValidName(id) {
			return "@" + NameKey(id)
		}
		if label != "" {
			return "@" + label
		}
		return id
	case strings.HasPrefix(target, "#"):
		if label != "" {
			return "#" + label
		}
		return target
	case strings.HasPrefix(target, "!"):
		word, _, _ := strings.Cut(target[1:], "^")
		if label != "" {
			return label
		}
		return "@" + word
	case strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:"):
		if label == "" {
			return "<" + target + ">"
		}
		return "[" + escapeLinkLabel(label) + "](" + strings.ReplaceAll(strings.ReplaceAll(target, "(", "%28"), ")", "%29") + ")"
	}
	return m
}

// escapeLinkLabel keeps a label's brackets from ending it early.
func escapeLinkLabel(s string) string {
	return strings.NewReplacer(`[`, `\[`, `]`, `\]`).Replace(s)
}

// EscapeMarkdown is text that Markdown shows as it is (a Slack message
// sent with "mrkdwn": false).
func EscapeMarkdown(text string) string {
	var b strings.Builder
	for _, r := range text {
		if strings.ContainsRune("\\`*_{}[]()<>#+-.!|~&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

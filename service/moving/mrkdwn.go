// This file owns the conversion of Slack's mrkdwn to the Markdown that
// KillrChat renders: bold, italic and strike-through markers, links,
// mentions of people and channels, and the broadcasts (<!here>), left
// alone inside code.

package moving

import (
	"html"
	"regexp"
	"strings"
)

// slackNames resolves Slack's ids in text: a user's id to a login, a
// channel's id to a room name (false for one not imported).
type slackNames struct {
	user    func(id string) (string, bool)
	channel func(id string) (string, bool)
}

var (
	// <…> is Slack's escape for links, mentions and broadcasts.
	slackAngle = regexp.MustCompile(`<([^<>\n]+)>`)
	// Slack's *bold*, _italic_ and ~strike~ start and end at a word's
	// edge.
	slackBold   = regexp.MustCompile(`(^|[\s(>])\*([^*\n]+)\*([\s).,;:!?]|$)`)
	slackItalic = regexp.MustCompile(`(^|[\s(>])_([^_\n]+)_([\s).,;:!?]|$)`)
	slackStrike = regexp.MustCompile(`(^|[\s(>])~([^~\n]+)~([\s).,;:!?]|$)`)
)

// convertMrkdwn turns Slack's text into KillrChat's Markdown.
func convertMrkdwn(text string, names slackNames) string {
	var b strings.Builder
	// Code (``` blocks and `spans`) is kept as it is, but for Slack's
	// HTML escapes, which it applies everywhere.
	for text != "" {
		i := strings.IndexByte(text, '`')
		if i < 0 {
			b.WriteString(convertPlain(text, names))
			break
		}
		b.WriteString(convertPlain(text[:i], names))
		text = text[i:]
		fence := "`"
		if strings.HasPrefix(text, "```") {
			fence = "```"
		}
		end := strings.Index(text[len(fence):], fence)
		if end < 0 {
			b.WriteString(convertPlain(text, names))
			break
		}
		code := text[len(fence) : len(fence)+end]
		code = html.UnescapeString(code)
		if fence == "```" && !strings.HasPrefix(code, "\n") {
			code = "\n" + code // Slack allows code on the fence's line
		}
		if fence == "```" && !strings.HasSuffix(code, "\n") {
			code += "\n"
		}
		b.WriteString(fence + code + fence)
		text = text[len(fence)+end+len(fence):]
	}
	return b.String()
}

func convertPlain(text string, names slackNames) string {
	text = slackAngle.ReplaceAllStringFunc(text, func(m string) string {
		inner := m[1 : len(m)-1]
		target, label, _ := strings.Cut(inner, "|")
		switch {
		case strings.HasPrefix(target, "@"):
			if login, ok := names.user(target[1:]); ok {
				return "@" + login
			}
			if label != "" {
				return "@" + label
			}
			return "@unknown"
		case strings.HasPrefix(target, "#"):
			// A link to the room would need the site's address (Markdown
			// links here are absolute): its name says where.
			if room, ok := names.channel(target[1:]); ok {
				return "#" + room
			}
			if label != "" {
				return "#" + label
			}
			return "#unknown-channel"
		case strings.HasPrefix(target, "!"):
			word := strings.TrimPrefix(target, "!")
			switch {
			case word == "here" || word == "channel" || word == "everyone":
				return "@" + word
			case strings.HasPrefix(word, "subteam^"):
				if label != "" {
					return label
				}
				return "@team"
			case label != "":
				return label
			}
			return ""
		case strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:"):
			if label == "" || label == target {
				return strings.TrimPrefix(target, "mailto:")
			}
			return "[" + strings.NewReplacer(`[`, `\[`, `]`, `\]`).Replace(html.UnescapeString(label)) + "](" + target + ")"
		}
		if label != "" {
			return label
		}
		return target
	})
	text = slackBold.ReplaceAllString(text, "$1**$2**$3")
	text = slackItalic.ReplaceAllString(text, "$1*$2*$3")
	text = slackStrike.ReplaceAllString(text, "$1~~$2~~$3")
	return html.UnescapeString(text)
}

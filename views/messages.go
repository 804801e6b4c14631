// This file owns how a message's text and a list of messages are laid out:
// web addresses turned into links, messages of one author grouped, and the
// day separators between days.

package views

import (
	"context"
	"io"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/killrchat/killrchat/chat"
)

// urlCandidate finds what may be a web address: http:// or https:// and
// everything up to white space or a character that never appears raw in a
// URL people paste (<, >, ", `). The end is trimmed by linkEnd.
var urlCandidate = regexp.MustCompile("(?i)\\bhttps?://[^\\s<>\"`]+")

// linkEnd trims what usually follows an address in a sentence: a period,
// a comma, a closing quote, or a ")" that closes a parenthesis opened
// before the address rather than inside it.
func linkEnd(s string) string {
	for len(s) > 0 {
		last := s[len(s)-1]
		switch {
		case strings.IndexByte(".,:;!?'*", last) >= 0:
			s = s[:len(s)-1]
		case last == ')' && strings.Count(s, "(") < strings.Count(s, ")"):
			s = s[:len(s)-1]
		case last == ']' && strings.Count(s, "[") < strings.Count(s, "]"):
			s = s[:len(s)-1]
		default:
			return s
		}
	}
	return s
}

// textPart is a run of message text, or a link when href is set.
type textPart struct {
	text, href string
}

// splitLinks cuts a message into plain text and http(s) links. Only
// addresses with a host become links; nothing else in the text is ever
// markup.
func splitLinks(s string) []textPart {
	if !strings.Contains(s, "://") {
		return []textPart{{text: s}} // no address: no regexp to run
	}
	var parts []textPart
	last := 0
	for _, loc := range urlCandidate.FindAllStringIndex(s, -1) {
		start := loc[0]
		if start < last {
			continue
		}
		raw := linkEnd(s[start:loc[1]])
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || !(strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")) {
			continue
		}
		if start > last {
			parts = append(parts, textPart{text: s[last:start]})
		}
		parts = append(parts, textPart{text: raw, href: raw})
		last = start + len(raw)
	}
	if last < len(s) {
		parts = append(parts, textPart{text: s[last:]})
	}
	return parts
}

// linkRel is what every link in a message carries: people post them, so
// they get no referrer, no opener and no ranking credit.
const linkRel = "noopener noreferrer nofollow ugc"

// messageText writes a message's Markdown as HTML (see markdown.go), with its web addresses as
// links that open in a new tab and "@login" of a member of the
// conversation (see WithMembers) as a link to that person's profile.
func messageText(s string) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		html, err := markdownHTML(s, membersOf(ctx), viewerOf(ctx), recorderOf(ctx))
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, html)
		return err
	})
}

// mentionHTML is text escaped, with each mention of a member as a link of
// class "mention" carrying the login in data-login. When the viewer is
// known (a page rendered for one person) their own mentions also get
// class "mention-me"; a message rendered once for every live stream knows
// no viewer, and app.js adds the class from <body data-viewer>.
func mentionHTML(text string, members map[string]chat.UserRef, viewer string) string {
	return markSpans(text, chat.MentionSpans(text, members), func(m chat.MentionSpan, said string) string {
		class := "mention"
		if m.Login == viewer {
			class += " mention-me"
		}
		return `<a href="/users/` + templ.EscapeString(m.Login) + `" class="` + class + `" data-login="` +
			templ.EscapeString(m.Login) + `">` + said + `</a>`
	})
}

// markSpans is text escaped, each span (in order, not overlapping) replaced
// by mark of the span and its escaped text.
func markSpans(text string, spans []chat.MentionSpan, mark func(m chat.MentionSpan, said string) string) string {
	if len(spans) == 0 {
		return templ.EscapeString(text)
	}
	var b strings.Builder
	last := 0
	for _, m := range spans {
		b.WriteString(templ.EscapeString(text[last:m.Start]))
		b.WriteString(mark(m, templ.EscapeString(text[m.Start:m.End])))
		last = m.End
	}
	b.WriteString(templ.EscapeString(text[last:]))
	return b.String()
}

// mentionExcerpt writes a mention's excerpt (on /mentions, inside the link
// to the message) escaped, with the viewer's own "@login" marked.
func mentionExcerpt(text string) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		viewer := viewerOf(ctx)
		var spans []chat.MentionSpan
		if viewer != "" {
			spans = chat.MentionSpans(text, map[string]chat.UserRef{viewer: {Login: viewer}})
		}
		html := markSpans(text, spans, func(_ chat.MentionSpan, said string) string {
			return `<mark class="mention-me">` + said + `</mark>`
		})
		_, err := io.WriteString(w, html)
		return err
	})
}

type membersKey struct{}
type viewerKey struct{}

// WithMembers returns a context in which messages are rendered for a
// conversation with these members: their "@login" become links. Handlers
// set it once they have read the conversation, so every message rendered
// for the request (page, fragment, live event) links the same mentions.
func WithMembers(ctx context.Context, members map[string]chat.UserRef) context.Context {
	return context.WithValue(ctx, membersKey{}, members)
}

// AddMembers is the members ctx renders with, and members: a new map.
func AddMembers(ctx context.Context, members map[string]chat.UserRef) map[string]chat.UserRef {
	had := membersOf(ctx)
	if len(had) == 0 {
		return members
	}
	out := make(map[string]chat.UserRef, len(had)+len(members))
	for l, p := range had {
		out[l] = p
	}
	for l, p := range members {
		out[l] = p
	}
	return out
}

func membersOf(ctx context.Context) map[string]chat.UserRef {
	m, _ := ctx.Value(membersKey{}).(map[string]chat.UserRef)
	return m
}

// WithViewer returns a context in which content is rendered for one
// person: their own mentions are highlighted. Never set it for a message
// rendered once for every reader.
func WithViewer(ctx context.Context, login string) context.Context {
	return context.WithValue(ctx, viewerKey{}, login)
}

type closedKey struct{}

// WithClosed gives the components the accounts that are closed: login
// to chat.AccountDeactivated or chat.AccountDeleted. Their messages
// carry a mark ("deactivated"), or "deleted user" for a name.
func WithClosed(ctx context.Context, closed map[string]string) context.Context {
	return context.WithValue(ctx, closedKey{}, closed)
}

func closedOf(ctx context.Context, login string) string {
	m, _ := ctx.Value(closedKey{}).(map[string]string)
	noteAnswer(ctx, askClosed, login, m[login])
	return m[login]
}

type botsKey struct{}

// WithBots gives the components the bots' logins: their names carry a
// "bot" mark.
func WithBots(ctx context.Context, bots map[string]bool) context.Context {
	return context.WithValue(ctx, botsKey{}, bots)
}

// isBot reports whether login is a bot's, as WithBots gave them.
func isBot(ctx context.Context, login string) bool {
	m, _ := ctx.Value(botsKey{}).(map[string]bool)
	noteAnswer(ctx, askBot, login, boolAnswer(m[login]))
	return m[login]
}

func viewerOf(ctx context.Context) string {
	v, _ := ctx.Value(viewerKey{}).(string)
	return v
}

// groupGap is how far apart two messages of one author may be to be shown
// as one group (name and time once).
const groupGap = 5 * time.Minute

// listItem is one row of a message list: a message, with whether it
// continues the group of the one before, or a day separator before it.
type listItem struct {
	msg chat.Message
	// cont: same author as the message before, within groupGap, same day.
	cont bool
	// day is the label of a separator to show before the message, or "".
	day string
	// last marks the newest message, which carries the #latest anchor.
	last bool
}

// layoutMessages groups msgs (oldest first) and puts day separators
// between days (UTC: the server does not know the reader's zone; app.js
// redoes both in local time, also where an older page meets the list).
func layoutMessages(msgs []chat.Message, now time.Time) []listItem {
	items := make([]listItem, 0, len(msgs))
	for i, m := range msgs {
		it := listItem{msg: m, last: i == len(msgs)-1}
		if i == 0 || !sameDay(msgs[i-1].Time(), m.Time()) {
			it.day = dayLabel(m.Time(), now)
		} else {
			it.cont = continues(msgs[i-1], m)
		}
		items = append(items, it)
	}
	return items
}

// continues says whether m is shown in the group of prev.
func continues(prev, m chat.Message) bool {
	return !prev.System && !m.System && prev.Author.Login == m.Author.Login &&
		m.Time().Sub(prev.Time()) < groupGap && sameDay(prev.Time(), m.Time())
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.UTC().Date()
	by, bm, bd := b.UTC().Date()
	return ay == by && am == bm && ad == bd
}

// dayLabel names the UTC day of t as people say it, seen from now.
func dayLabel(t, now time.Time) string {
	switch {
	case sameDay(t, now):
		return "Today"
	case sameDay(t, now.AddDate(0, 0, -1)):
		return "Yesterday"
	}
	return t.UTC().Format("Monday, 2 January 2006")
}

// dayKey is the UTC day of t, the separator's data-day.
func dayKey(t time.Time) string { return t.UTC().Format("2006-01-02") }

// isoTime is the machine-readable time of a message.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// fullTime is the time shown on hovering a message.
func fullTime(t time.Time) string { return t.UTC().Format("Monday, 2 January 2006, 15:04 UTC") }

package missed

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email"
)

// item is one message as an email shows it.
type item struct {
	Author, Time, Text, Link string
}

// letter is what the email's two bodies are made of.
type letter struct {
	Greeting, Intro, Where string
	Items                  []item
	Hidden                 bool
	Settings, Unsubscribe  string
}

var htmlBody = template.Must(template.New("missed").Parse(`<!DOCTYPE html>
<html><body style="font-family: sans-serif">
<p>{{.Greeting}}</p>
<p>{{.Intro}}</p>
{{range .Items}}<div style="margin: 1em 0; padding-left: .75em; border-left: 3px solid #ccc">
<p><strong>{{.Author}}</strong> <span style="color: #666">{{.Time}}</span></p>
{{if not $.Hidden}}<p style="white-space: pre-wrap">{{.Text}}</p>{{end}}
<p><a href="{{.Link}}">Open this message</a></p>
</div>
{{end}}<p style="color: #666; font-size: small">You get this email because you were away. <a href="{{.Settings}}">Choose what KillrChat emails you</a>, or <a href="{{.Unsubscribe}}">stop these emails</a>.</p>
</body></html>
`))

// compose builds p's email from what is stored now: false when nothing
// is left to send (every message read, deleted or seen; the person's
// setting off, their address no longer verified, or they left).
func (n *Notifier) compose(ctx context.Context, p chat.PendingEmail) (email.Mail, bool, error) {
	u, err := n.db.User(ctx, p.Login)
	if errors.Is(err, chat.ErrNotFound) {
		return email.Mail{}, false, nil
	}
	if err != nil {
		return email.Mail{}, false, err
	}
	if !u.Active() || !u.EmailVerified() || u.Mail.NotifyOr() == chat.EmailOff {
		return email.Mail{}, false, nil
	}
	place, where, path, ok, err := n.placeOf(ctx, p)
	if err != nil || !ok {
		return email.Mail{}, false, err
	}
	marker, level, err := n.db.MarkerAndLevel(ctx, u.Login, p.Conversation)
	if err != nil {
		return email.Mail{}, false, err
	}
	if level == chat.LevelNothing {
		return email.Mail{}, false, nil
	}
	ids := slices.Clone(p.Messages)
	slices.SortFunc(ids, func(a, b chat.ID) int { return a.Compare(b) })
	now := n.cfg.Now()
	l := letter{Greeting: "Hello " + u.Name() + ",", Where: where, Hidden: n.cfg.HideText || u.Mail.HideText,
		Settings:    n.cfg.SiteURL + "/profile/notifications#email-heading",
		Unsubscribe: n.cfg.SiteURL + "/email/unsubscribe/" + email.UnsubscribeToken(n.cfg.UnsubscribeKey, u.Login)}
	for _, id := range ids {
		if !id.After(marker) {
			continue // read
		}
		if n.presence != nil && n.presence.SeenWithin(u.Login, now.Sub(id.Time())) {
			continue // they were here since it was posted
		}
		m, err := n.db.Message(ctx, place, id)
		if errors.Is(err, chat.ErrNotFound) {
			continue // deleted
		}
		if err != nil {
			return email.Mail{}, false, err
		}
		name := m.Author.Name()
		if name == "" {
			name = m.Author.Login
		}
		l.Items = append(l.Items, item{Author: name, Time: m.Time().UTC().Format("Mon 2 Jan 15:04 UTC"), Text: plainText(m),
			Link: n.cfg.SiteURL + path + "?at=" + id.String() + "#msg-" + id.String()})
	}
	if len(l.Items) == 0 {
		return email.Mail{}, false, nil
	}
	subject := "New messages in " + where
	l.Intro = "While you were away:"
	if len(l.Items) == 1 {
		subject = l.Items[0].Author + " wrote in " + where
	} else {
		l.Intro = strconv.Itoa(len(l.Items)) + " messages while you were away:"
	}
	var text strings.Builder
	text.WriteString(l.Greeting + "\n\n" + l.Intro + " (" + where + ")\n\n")
	for _, it := range l.Items {
		text.WriteString(it.Author + ", " + it.Time + ":\n")
		if !l.Hidden {
			text.WriteString(it.Text + "\n")
		}
		text.WriteString(it.Link + "\n\n")
	}
	text.WriteString("-- \nYou get this email because you were away. Choose what KillrChat emails you: " + l.Settings +
		"\nStop these emails: " + l.Unsubscribe + "\n")
	l.Intro += " (" + where + ")"
	var html bytes.Buffer
	if err := htmlBody.Execute(&html, l); err != nil {
		return email.Mail{}, false, err
	}
	thread := threadID(u.Login, p.Conversation) + "@" + n.sender.Domain()
	return email.Mail{
		To: u.Email, Subject: "[KillrChat] " + oneLine(subject), Text: text.String(), HTML: html.String(),
		MessageID:   "missed." + strconv.FormatInt(p.Due.UnixMilli(), 10) + "." + strconv.Itoa(p.Attempts) + "." + thread,
		InReplyTo:   thread,
		References:  thread,
		Unsubscribe: l.Unsubscribe,
		Date:        now,
	}, true, nil
}

// placeOf is p's conversation as a place to read messages from, its name
// in the email, and its page's path; false when it is gone, or the
// person is no longer in it.
func (n *Notifier) placeOf(ctx context.Context, p chat.PendingEmail) (chat.Place, string, string, bool, error) {
	if address, ok := strings.CutPrefix(p.Conversation, chat.DMPrefix); ok {
		d, err := n.db.DM(ctx, address)
		if errors.Is(err, chat.ErrNotFound) {
			return nil, "", "", false, nil
		}
		if err != nil {
			return nil, "", "", false, err
		}
		var names []string
		for _, m := range d.Others(p.Login) {
			names = append(names, m.Name())
		}
		return d, "a direct message with " + strings.Join(names, ", "), "/dm/" + d.Address, true, nil
	}
	r, err := n.db.Room(ctx, p.Conversation)
	if errors.Is(err, chat.ErrNotFound) {
		return nil, "", "", false, nil
	}
	if err != nil {
		return nil, "", "", false, err
	}
	in, err := n.db.MembersOf(ctx, r, []string{p.Login})
	if err != nil {
		return nil, "", "", false, err
	}
	if _, ok := in[p.Login]; !ok {
		return nil, "", "", false, nil
	}
	return r, "#" + r.DisplayName, "/rooms/" + url.PathEscape(r.Name), true, nil
}

// plainText is a message's text as the email shows it.
func plainText(m chat.Message) string {
	text := m.Content
	if m.Attachment != nil && strings.TrimSpace(text) == "" {
		text = "(sent a file: " + m.Attachment.Name + ")"
	}
	if r := []rune(text); len(r) > 2000 {
		text = string(r[:2000]) + "…"
	}
	return text
}

// oneLine makes s fit a header: no line breaks, at most 150 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 150 {
		s = string(r[:149]) + "…"
	}
	return s
}

// This file owns the conversations and messages of a Slack import:
// channels made rooms, DMs and group DMs made DMs, and each day's
// messages converted (authors, times, edits, threads, reactions, files,
// system lines) and written a day at a time.

package moving

import (
	"context"
	"crypto/sha256"
	"errors"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/killrchat/killrchat/chat"
)

// conversations makes the rooms and DMs: public channels open rooms,
// private channels closed rooms, DMs and group DMs of up to 8 people
// DMs (a larger group DM becomes a closed room).
func (s *slackImport) conversations(ctx context.Context) error {
	taken := map[string]bool{}
	type list struct {
		file   string
		kind   string
		folder func(slackChannel) string
	}
	byName := func(c slackChannel) string { return c.Name }
	for _, l := range []list{{"channels.json", chat.KindOpen, byName}, {"groups.json", chat.KindClosed, byName},
		{"mpims.json", "group", byName}, {"dms.json", "dm", func(c slackChannel) string { return c.ID }}} {
		if err := eachElement(s, l.file, MaxSlackListBytes, func(c slackChannel) error {
			return s.conversation(ctx, c, l.kind, l.folder(c), taken)
		}); err != nil {
			return err
		}
	}
	return nil
}

func (s *slackImport) conversation(ctx context.Context, c slackChannel, kind, folder string, taken map[string]bool) error {
	var members []string
	for _, id := range c.Members {
		if u, ok := s.users[id]; ok && !slices.Contains(members, u.Login) {
			members = append(members, u.Login)
		}
	}
	sort.Strings(members)
	if kind == "dm" || (kind == "group" && len(members) <= 8) {
		address, err := chat.DMAddress(members)
		if err != nil {
			s.report.Skipped["a DM without two known people"]++
			return nil
		}
		d := chat.DM{Address: address}
		for _, l := range members {
			d.Members = append(d.Members, s.userByLogin(l))
		}
		s.convs = append(s.convs, slackConversation{folder: folder, place: d, url: "/dm/" + address, members: members})
		s.report.DMs++
		return nil
	}
	if kind == "group" {
		kind = chat.KindClosed
	}
	if len(members) == 0 {
		s.report.Skipped["a channel without a known member"]++
		return nil
	}
	creator := members[0]
	if u, ok := s.users[c.Creator]; ok && slices.Contains(members, u.Login) {
		creator = u.Login
	}
	banner := oneLine(c.Purpose.Value, 200)
	if banner == "" {
		banner = oneLine(c.Topic.Value, 200)
	}
	banner = oneLine(convertMrkdwn(banner, s.names()), 200)
	if c.IsArchived {
		banner = oneLine("Archived in Slack. "+banner, 200)
	}
	all := map[string]chat.UserRef{}
	var rows []chat.Member
	for _, l := range members {
		all[l] = s.userByLogin(l)
		rows = append(rows, chat.Member{UserRef: all[l]})
	}
	base, why := loginOf(c.Name, c.ID)
	for n := 1; ; n++ {
		name := withSuffix(base, n)
		if taken[name] {
			why = "another channel has it"
			continue
		}
		r := chat.Room{Name: name, DisplayName: name, Banner: banner, Creator: all[creator], CreatorLogin: creator,
			CreatedAt: time.Unix(c.Created, 0).UTC(), Kind: kind}
		err := s.t.RestoreRoom(ctx, r, rows)
		if errors.Is(err, chat.ErrRoomExists) {
			why = "a room of this site has the name"
			continue
		}
		if err != nil {
			return err
		}
		taken[name] = true
		if name != c.Name {
			s.report.Renames = append(s.report.Renames, Rename{What: "channel " + c.ID, From: c.Name, To: name, Why: why})
		}
		s.rooms[c.ID] = name
		s.convs = append(s.convs, slackConversation{folder: folder, place: chat.RoomWithAll{Room: r, Participants: all}, url: "/rooms/" + name, members: members})
		s.report.Rooms++
		return nil
	}
}

func (s *slackImport) userByLogin(login string) chat.UserRef {
	for _, u := range s.users {
		if u.Login == login {
			return u
		}
	}
	return chat.UserRef{Login: login}
}

func (s *slackImport) names() slackNames {
	return slackNames{
		user: func(id string) (string, bool) {
			u, ok := s.users[id]
			return u.Login, ok
		},
		channel: func(id string) (string, bool) {
			r, ok := s.rooms[id]
			return r, ok
		},
	}
}

// parent is a thread's first message, as its replies quote it.
type parent struct {
	id      chat.ID
	author  string
	excerpt string
}

// messages writes a conversation's days, oldest first, and then starts
// its imported members' read markers at its newest message.
func (s *slackImport) messages(ctx context.Context, c slackConversation) error {
	var days []string
	for rel := range s.files {
		if dir, base := path.Split(rel); dir == c.folder+"/" && slackDay.MatchString(base) {
			days = append(days, rel)
		}
	}
	sort.Strings(days)
	w := &conversationWriter{t: s.t, in: c.place}
	parents := map[string]parent{}
	var newest chat.ID
	for _, day := range days {
		done := s.opts.Journal != nil && s.opts.Journal.Done(day)
		err := eachElement(s, day, MaxSlackDayBytes, func(m slackMessage) error {
			if _, person := s.users[m.User]; !person && m.BotID != "" {
				if err := s.integration(ctx, m.BotID); err != nil {
					return err
				}
			}
			msg, ok := s.message(c, m, parents)
			if !ok {
				return nil
			}
			if msg.ID.After(newest) {
				newest = msg.ID
			}
			s.counted(1, len(msg.Reactions))
			if done {
				return nil
			}
			return w.add(ctx, msg)
		})
		s.read(int64(s.files[day].UncompressedSize64))
		if err != nil {
			if ctx.Err() != nil || !strings.HasSuffix(err.Error(), "malformed") {
				return err
			}
			// What the day held before the fault is written; the rest of
			// it is reported, and the next days go on.
			s.skipped("the rest of a malformed day file (" + day + ")")
		}
		if err := w.flush(ctx); err != nil {
			return err
		}
		if !done && s.opts.Journal != nil {
			if err := s.opts.Journal.Mark(day); err != nil {
				return err
			}
		}
		s.progress(false)
	}
	if newest.IsZero() {
		return nil
	}
	for _, l := range c.members {
		if s.imports[l] {
			if err := s.t.MarkRead(ctx, l, c.place.Conversation().ID, newest); err != nil {
				return err
			}
		}
	}
	return nil
}

// author is who wrote m: a user of users.json, or a bot by its bot id,
// under the name a bot's message was posted as (Slack's username), as a
// hook's posts show theirs.
func (s *slackImport) author(m slackMessage) (chat.UserRef, bool) {
	if u, ok := s.users[m.User]; ok {
		return u, true
	}
	if m.BotID == "" {
		return chat.UserRef{}, false
	}
	s.botMu.Lock()
	b, ok := s.bots[m.BotID]
	s.botMu.Unlock()
	if ok && m.Subtype == "bot_message" {
		if name := oneLine(m.Username, 60); name != "" {
			b.Firstname, b.Lastname = name, ""
		}
	}
	return b, ok
}

// integration makes the bot account of a bot id that users.json does not
// have (an integration, an incoming webhook): a login made of the id, so
// that every run makes the same one, and the name "Slack integration"
// (its messages show the names they were posted as).
func (s *slackImport) integration(ctx context.Context, botID string) error {
	s.botMu.Lock()
	defer s.botMu.Unlock()
	if _, ok := s.bots[botID]; ok {
		return nil
	}
	base, _ := loginOf("slack-"+botID, botID)
	for n := 1; ; n++ {
		login := withSuffix(base, n)
		acct := chat.User{Login: login, DisplayLogin: login, Firstname: "Slack integration", Lastname: oneLine(botID, 30),
			Bio: "A Slack integration, imported.", CreatedAt: time.Unix(0, 0).UTC(), Kind: chat.KindBot}
		_, err := s.t.RestoreUser(ctx, acct, "")
		if errors.Is(err, chat.ErrUserExists) {
			continue
		}
		if err != nil {
			return err
		}
		s.bots[botID] = acct.Ref()
		s.mu.Lock()
		s.report.People++
		s.report.Bots++
		s.mu.Unlock()
		return nil
	}
}

func (s *slackImport) progress(force bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.Progress == nil || (!force && time.Since(s.last) < time.Second) {
		return
	}
	s.last = time.Now()
	s.opts.Progress(s.report.Counts, s.done, s.total)
}

// skipped, counted and read note what conversations written at once
// did.
func (s *slackImport) skipped(why string) {
	s.mu.Lock()
	s.report.Skipped[why]++
	s.mu.Unlock()
}

func (s *slackImport) counted(messages, reactions int) {
	s.mu.Lock()
	s.report.Messages += messages
	s.report.Reactions += reactions
	s.mu.Unlock()
}

func (s *slackImport) read(bytes int64) {
	s.mu.Lock()
	s.done += bytes
	s.mu.Unlock()
}

// slackTime is a Slack ts ("1512085950.000216") as a time, to the
// microsecond.
func slackTime(ts string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(ts, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || n <= 0 || len(frac) > 6 {
		return time.Time{}, false
	}
	micro := 0
	if frac != "" {
		if micro, err = strconv.Atoi(frac + strings.Repeat("0", 6-len(frac))); err != nil {
			return time.Time{}, false
		}
	}
	return time.Unix(n, int64(micro)*1000).UTC(), true
}

// slackID is the id of what happened at ts in conversation conv: its
// time is ts's (two messages of one second stay apart and in order), its
// clock and node are made from conv, ts and what, so the same message
// has the same id on every run.
func slackID(t time.Time, conv, ts, what string) chat.ID {
	h := sha256.Sum256([]byte(conv + "\x00" + ts + "\x00" + what))
	return chat.NewID(chat.TicksOf(t), uint16(h[0])<<8|uint16(h[1]), [6]byte(h[2:8]))
}

// systemLines are the subtypes shown as system lines, and what they say
// after the person's name.
var systemLines = map[string]string{
	"channel_join": " joins the room", "group_join": " joins the room",
	"channel_leave": " leaves the room", "group_leave": " leaves the room",
	"channel_archive": " archived the channel in Slack", "group_archive": " archived the channel in Slack",
	"channel_unarchive": " unarchived the channel in Slack", "group_unarchive": " unarchived the channel in Slack",
}

// droppedSubtypes are left out on purpose, with why.
var droppedSubtypes = map[string]string{
	"tombstone": "deleted in Slack", "message_deleted": "deleted in Slack", "message_changed": "a change record",
	"pinned_item": "a pin", "unpinned_item": "a pin", "reminder_add": "a reminder", "bot_add": "an integration change",
	"bot_remove": "an integration change", "channel_convert_to_private": "a channel change", "huddle_thread": "a huddle",
}

// message converts m; false when it is left out (the reason counted).
func (s *slackImport) message(c slackConversation, m slackMessage, parents map[string]parent) (chat.Message, bool) {
	skip := func(why string) (chat.Message, bool) {
		s.skipped(why)
		return chat.Message{}, false
	}
	if m.Type != "" && m.Type != "message" {
		return skip("not a message (type " + oneLine(m.Type, 30) + ")")
	}
	t, ok := slackTime(m.TS)
	if !ok {
		return skip("a message without a valid ts")
	}
	conv := c.place.Conversation()
	if t.Before(conv.Since) {
		return skip("a message older than its channel")
	}
	author, ok := s.author(m)
	if !ok {
		return skip("an author not in users.json")
	}
	msg := chat.Message{ID: slackID(t, conv.ID, m.TS, ""), Room: conv.ID, Author: author}
	switch {
	case systemLines[m.Subtype] != "":
		msg.System, msg.Content = true, author.Name()+systemLines[m.Subtype]
		return msg, true
	case m.Subtype == "channel_topic" || m.Subtype == "group_topic":
		msg.System, msg.Content = true, oneLine(author.Name()+" set the topic: "+convertMrkdwn(m.Topic, s.names()), chat.MaxContent)
		return msg, true
	case m.Subtype == "channel_purpose" || m.Subtype == "group_purpose":
		msg.System, msg.Content = true, oneLine(author.Name()+" set the purpose: "+convertMrkdwn(m.Purpose, s.names()), chat.MaxContent)
		return msg, true
	case m.Subtype == "channel_name" || m.Subtype == "group_name":
		msg.System, msg.Content = true, oneLine(author.Name()+" renamed the channel in Slack to "+m.Name, chat.MaxContent)
		return msg, true
	case droppedSubtypes[m.Subtype] != "":
		return skip(droppedSubtypes[m.Subtype])
	case m.Subtype == "", m.Subtype == "bot_message", m.Subtype == "me_message", m.Subtype == "thread_broadcast",
		m.Subtype == "file_share", m.Subtype == "file_comment":
	default:
		return skip("a message of the unknown subtype " + strconv.Quote(oneLine(m.Subtype, 40)))
	}
	text := convertMrkdwn(m.Text, s.names())
	if m.Subtype == "me_message" && text != "" {
		text = "*" + text + "*"
	}
	for _, f := range m.Files {
		name := oneLine(f.Name, 200)
		if name == "" {
			name = oneLine(f.Title, 200)
		}
		link := f.Permalink
		if link == "" {
			link = f.URLPrivate
		}
		line := "📎 " + escapeLinkText(name)
		if f.Mode == "tombstone" || f.Mode == "hidden_by_limit" {
			line += " (not in the export)"
		} else if strings.HasPrefix(link, "https://") || strings.HasPrefix(link, "http://") {
			line = "📎 [" + escapeLinkText(name) + "](" + strings.ReplaceAll(link, ")", "%29") + ")"
		}
		text = strings.TrimSpace(text + "\n" + line)
	}
	if m.ThreadTS != "" && m.ThreadTS != m.TS {
		if p, ok := parents[m.ThreadTS]; ok {
			text = chat.Quote(p.excerpt, p.author, c.url+"/messages/"+p.id.String()) + text
		} else {
			text = "> (a reply in a thread whose first message is not in the export)\n\n" + text
		}
	}
	if utf8.RuneCountInString(text) > chat.MaxContent {
		text = string([]rune(text)[:chat.MaxContent-1]) + "…"
		s.skipped("the end of a message longer than " + strconv.Itoa(chat.MaxContent) + " characters")
	}
	content, err := chat.CheckContent(text)
	if err != nil {
		return skip("a message with no text to show")
	}
	msg.Content = content
	if m.ThreadTS == m.TS && len(parents) < maxThreadParents {
		excerpt := content
		if utf8.RuneCountInString(excerpt) > 200 {
			excerpt = string([]rune(excerpt)[:200]) + "…"
		}
		parents[m.TS] = parent{id: msg.ID, author: author.Name(), excerpt: excerpt}
	}
	if m.Edited != nil {
		if et, ok := slackTime(m.Edited.TS); ok && !et.Before(t) {
			msg.Edited = slackID(et, conv.ID, m.TS, "edit")
		} else {
			msg.Edited = slackID(t, conv.ID, m.TS, "edit")
		}
	}
	msg.Reactions = s.reactions(conv, m, t)
	return msg, true
}

func escapeLinkText(s string) string {
	return strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`).Replace(s)
}

// reactions are m's reactions, each person's with an id of its own.
func (s *slackImport) reactions(conv chat.Conversation, m slackMessage, t time.Time) []chat.Reaction {
	var out []chat.Reaction
	seen := map[string]bool{}
	for _, r := range m.Reactions {
		emoji, err := chat.CheckReaction(slackEmoji(r.Name))
		if err != nil {
			s.skipped("a reaction that is not one here")
			continue
		}
		if !seen[emoji] && len(seen) == chat.MaxReactions {
			s.skipped("a reaction past the " + strconv.Itoa(chat.MaxReactions) + " a message takes")
			continue
		}
		seen[emoji] = true
		for _, id := range r.Users {
			u, ok := s.users[id]
			if !ok {
				s.skipped("a reaction of someone not in users.json")
				continue
			}
			dup := false
			for _, o := range out {
				dup = dup || (o.Emoji == emoji && o.Reactor.Login == u.Login)
			}
			if dup {
				continue
			}
			out = append(out, chat.Reaction{Emoji: emoji, Reactor: u, Change: slackID(t, conv.ID, m.TS, "reaction "+emoji+" "+u.Login)})
		}
	}
	return out
}

// slackEmojis are Slack's names of the common reactions.
var slackEmojis = map[string]string{
	"+1": "👍", "thumbsup": "👍", "-1": "👎", "thumbsdown": "👎", "heart": "❤️", "smile": "😄", "joy": "😂",
	"tada": "🎉", "eyes": "👀", "fire": "🔥", "rocket": "🚀", "white_check_mark": "✅", "heavy_check_mark": "✔️",
	"raised_hands": "🙌", "clap": "👏", "pray": "🙏", "thinking_face": "🤔", "laughing": "😆", "grinning": "😀",
	"slightly_smiling_face": "🙂", "wave": "👋", "100": "💯", "ok_hand": "👌", "x": "❌", "warning": "⚠️",
	"star": "⭐", "sob": "😭", "muscle": "💪", "sunglasses": "😎", "wink": "😉", "sweat_smile": "😅",
	"heart_eyes": "😍", "confused": "😕", "cry": "😢", "rage": "😡", "party_popper": "🎉", "bulb": "💡",
	"question": "❓", "exclamation": "❗", "point_up": "☝️", "see_no_evil": "🙈", "sparkles": "✨", "zap": "⚡",
}

// slackEmoji is the reaction for a Slack emoji name: the emoji itself
// for the common ones, else the name as Slack writes it (":parrot:").
func slackEmoji(name string) string {
	name, _, _ = strings.Cut(name, "::") // a skin tone
	if e, ok := slackEmojis[name]; ok {
		return e
	}
	text := ":" + name + ":"
	if utf8.RuneCountInString(text) > chat.MaxReactionText {
		text = string([]rune(text)[:chat.MaxReactionText-1]) + ":"
	}
	return text
}

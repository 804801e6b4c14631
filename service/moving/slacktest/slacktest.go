// Package slacktest writes Slack workspace exports as Slack documents
// them (https://slack.com/help/articles/220556107): users.json,
// channels.json, groups.json, dms.json, mpims.json at the top, and a
// folder per conversation of YYYY-MM-DD.json arrays of messages. Sample
// is a small workspace with every case an import must handle; Generate
// writes one of any size, a day file at a time, for load runs.
package slacktest

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"
)

// User is an entry of users.json.
type User struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Deleted   bool    `json:"deleted"`
	RealName  string  `json:"real_name"`
	IsBot     bool    `json:"is_bot"`
	IsAppUser bool    `json:"is_app_user"`
	Updated   int64   `json:"updated"`
	Profile   Profile `json:"profile"`
}

// Profile is a user's profile.
type Profile struct {
	RealName    string `json:"real_name"`
	DisplayName string `json:"display_name"`
	FirstName   string `json:"first_name,omitempty"`
	LastName    string `json:"last_name,omitempty"`
	Email       string `json:"email,omitempty"`
	Title       string `json:"title,omitempty"`
	// BotID is a bot user's bot (the bot_id of its messages).
	BotID string `json:"bot_id,omitempty"`
}

// Text is a topic or purpose.
type Text struct {
	Value   string `json:"value"`
	Creator string `json:"creator"`
	LastSet int64  `json:"last_set"`
}

// Channel is an entry of channels.json, groups.json, mpims.json or
// dms.json.
type Channel struct {
	ID         string   `json:"id"`
	Name       string   `json:"name,omitempty"`
	Created    int64    `json:"created"`
	Creator    string   `json:"creator,omitempty"`
	IsArchived bool     `json:"is_archived"`
	IsGeneral  bool     `json:"is_general,omitempty"`
	Members    []string `json:"members"`
	Topic      Text     `json:"topic"`
	Purpose    Text     `json:"purpose"`
}

// Edited says who edited a message, and when.
type Edited struct {
	User string `json:"user"`
	TS   string `json:"ts"`
}

// Reaction is an emoji and who reacted with it.
type Reaction struct {
	Name  string   `json:"name"`
	Users []string `json:"users"`
	Count int      `json:"count"`
}

// File is a message's file as an export lists it (its bytes are not in
// the export).
type File struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Title      string `json:"title"`
	Mimetype   string `json:"mimetype"`
	Size       int64  `json:"size"`
	URLPrivate string `json:"url_private"`
	Permalink  string `json:"permalink"`
}

// Message is an entry of a day file.
type Message struct {
	Type        string     `json:"type"`
	Subtype     string     `json:"subtype,omitempty"`
	User        string     `json:"user,omitempty"`
	BotID       string     `json:"bot_id,omitempty"`
	Username    string     `json:"username,omitempty"`
	Text        string     `json:"text"`
	TS          string     `json:"ts"`
	ThreadTS    string     `json:"thread_ts,omitempty"`
	ReplyCount  int        `json:"reply_count,omitempty"`
	Edited      *Edited    `json:"edited,omitempty"`
	Reactions   []Reaction `json:"reactions,omitempty"`
	Files       []File     `json:"files,omitempty"`
	Topic       string     `json:"topic,omitempty"`
	ParentUser  string     `json:"parent_user_id,omitempty"`
	UserProfile *Profile   `json:"user_profile,omitempty"`
}

// Export is a workspace export: its lists and, by folder, each day's
// messages.
type Export struct {
	Users    []User
	Channels []Channel
	Groups   []Channel
	DMs      []Channel
	MPIMs    []Channel
	// Days are the messages by folder ("general", a DM's id) and day
	// ("2020-03-02").
	Days map[string]map[string][]Message
	// Extra are more entries, by name, as they are (hostile tests).
	Extra map[string][]byte
}

// TS is Slack's ts of t: seconds, a dot, six digits of microseconds.
func TS(t time.Time) string { return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000) }

// Add puts m in folder's day file of its ts.
func (e *Export) Add(folder string, at time.Time, m Message) {
	if e.Days == nil {
		e.Days = map[string]map[string][]Message{}
	}
	if e.Days[folder] == nil {
		e.Days[folder] = map[string][]Message{}
	}
	if m.Type == "" {
		m.Type = "message"
	}
	if m.TS == "" {
		m.TS = TS(at)
	}
	day := at.UTC().Format("2006-01-02")
	e.Days[folder][day] = append(e.Days[folder][day], m)
}

// Write writes e as a zip to w.
func (e *Export) Write(w io.Writer) error {
	zw := zip.NewWriter(w)
	put := func(name string, v any) error { return putJSON(zw, name, v) }
	for name, v := range map[string]any{"users.json": e.Users, "channels.json": nonNil(e.Channels), "groups.json": nonNil(e.Groups),
		"dms.json": nonNil(e.DMs), "mpims.json": nonNil(e.MPIMs)} {
		if err := put(name, v); err != nil {
			return err
		}
	}
	folders := make([]string, 0, len(e.Days))
	for f := range e.Days {
		folders = append(folders, f)
	}
	sort.Strings(folders)
	for _, folder := range folders {
		days := make([]string, 0, len(e.Days[folder]))
		for d := range e.Days[folder] {
			days = append(days, d)
		}
		sort.Strings(days)
		for _, d := range days {
			if err := put(folder+"/"+d+".json", e.Days[folder][d]); err != nil {
				return err
			}
		}
	}
	for name, b := range e.Extra {
		f, err := zw.Create(name)
		if err != nil {
			return err
		}
		if _, err := f.Write(b); err != nil {
			return err
		}
	}
	return zw.Close()
}

func nonNil(c []Channel) []Channel {
	if c == nil {
		return []Channel{}
	}
	return c
}

// Day is the day Sample's messages are on: ten days ago, UTC (recent
// enough for the list of mentions, which reaches back twelve months).
var Day = time.Now().UTC().Truncate(24 * time.Hour).Add(-10 * 24 * time.Hour)

// Sample is a small workspace: five people (one whose name is no login,
// one whose name is another's in capitals, one deleted), a bot, public
// channels (one archived), a private channel, a DM and a group DM, with
// edits, a thread, reactions, a file, mentions, mrkdwn, two messages in
// one second, a message in every hour of Day, system lines, a subtype
// no import knows and a day file cut off halfway.
func Sample() *Export {
	created := Day.Add(-24 * time.Hour).Unix()
	person := func(id, name, first, last string) User {
		return User{ID: id, Name: name, RealName: first + " " + last, Updated: created,
			Profile: Profile{RealName: first + " " + last, FirstName: first, LastName: last, Email: name + "@example.com"}}
	}
	e := &Export{Users: []User{
		person("U01", "ada", "Ada", "Lovelace"),
		person("U02", "bob", "Bob", "Builder"),
		person("U03", "cleo", "Cleo", "Patra"),
		person("U04", "Dave Smith!", "Dave", "Smith"),
		person("U05", "ADA", "Ada", "Other"),
		{ID: "U06", Name: "eve", Deleted: true, RealName: "Eve Gone", Updated: created, Profile: Profile{RealName: "Eve Gone"}},
		{ID: "U07", Name: "deploybot", IsBot: true, RealName: "Deploy Bot", Updated: created, Profile: Profile{RealName: "Deploy Bot", BotID: "B07"}},
	}}
	all := []string{"U01", "U02", "U03", "U04", "U05"}
	e.Channels = []Channel{
		{ID: "C01", Name: "general", Created: created, Creator: "U01", IsGeneral: true, Members: append(all, "U07"),
			Purpose: Text{Value: "Everything, with *everyone*"}},
		{ID: "C02", Name: "random", Created: created, Creator: "U02", Members: []string{"U01", "U02"}, Topic: Text{Value: "Anything"}},
		{ID: "C03", Name: "old-stuff", Created: created, Creator: "U01", IsArchived: true, Members: []string{"U01"}},
	}
	e.Groups = []Channel{{ID: "G01", Name: "secret-plans", Created: created, Creator: "U01", Members: []string{"U01", "U02"},
		Purpose: Text{Value: "Shh"}}}
	e.DMs = []Channel{{ID: "D01", Created: created, Members: []string{"U01", "U02"}}}
	e.MPIMs = []Channel{{ID: "G02", Name: "mpdm-ada--bob--cleo-1", Created: created, Members: []string{"U01", "U02", "U03"}}}

	at := func(h, m, s, micro int) time.Time {
		return Day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(micro)*time.Microsecond)
	}
	// A message in every hour of the day, in #general.
	for h := range 24 {
		e.Add("general", at(h, 30, 0, 0), Message{User: all[h%4], Text: fmt.Sprintf("hour %02d report", h)})
	}
	e.Add("general", at(0, 5, 0, 0), Message{Subtype: "channel_join", User: "U04", Text: "<@U04> has joined the channel"})
	// Two in one second, the second first in the file.
	e.Add("general", at(1, 0, 7, 200), Message{User: "U02", Text: "second of the same second"})
	e.Add("general", at(1, 0, 7, 100), Message{User: "U01", Text: "first of the same second"})
	e.Add("general", at(2, 0, 0, 0), Message{User: "U01", Text: "*Bold* and _italic_ and ~gone~, see <#C02|random>, <!here>, <https://example.com|the site> and `*code*`",
		Reactions: []Reaction{{Name: "+1", Users: []string{"U02", "U03"}, Count: 2}, {Name: "tada", Users: []string{"U02"}, Count: 1}, {Name: "partyparrot", Users: []string{"U03"}, Count: 1}}})
	e.Add("general", at(3, 0, 0, 0), Message{User: "U03", Text: "Hey <@U02>, the plan is ready", Edited: &Edited{User: "U03", TS: TS(at(3, 5, 0, 0))}})
	parent := at(4, 0, 0, 0)
	e.Add("general", parent, Message{User: "U01", Text: "Shall we ship on Friday?", ThreadTS: TS(parent), ReplyCount: 2})
	e.Add("general", at(4, 10, 0, 0), Message{User: "U02", Text: "Yes, Friday it is", ThreadTS: TS(parent), ParentUser: "U01"})
	e.Add("general", at(4, 20, 0, 0), Message{User: "U03", Text: "Friday works for me", ThreadTS: TS(parent), ParentUser: "U01"})
	e.Add("general", at(5, 0, 0, 0), Message{User: "U01", Text: "the slides",
		Files: []File{{ID: "F01", Name: "plan.pdf", Title: "The plan", Mimetype: "application/pdf", Size: 12345,
			URLPrivate: "https://files.slack.com/files-pri/T01-F01/plan.pdf", Permalink: "https://example.slack.com/files/U01/F01/plan.pdf"}}})
	// A bot of users.json, by its bot id; an integration that has no
	// user (an incoming webhook), by its bot id and the name it posted as.
	e.Add("general", at(6, 0, 0, 0), Message{Subtype: "bot_message", BotID: "B07", Text: "Deployed build 42"})
	e.Add("general", at(6, 5, 0, 0), Message{Subtype: "bot_message", BotID: "B99", Username: "GitHub", Text: "Pull request 7 merged"})
	e.Add("general", at(6, 10, 0, 0), Message{Subtype: "sh_room_created", User: "U01", Text: "a huddle"})
	e.Add("general", at(6, 20, 0, 0), Message{Subtype: "pinned_item", User: "U01", Text: "pinned a message"})
	e.Add("random", at(7, 0, 0, 0), Message{User: "U02", Text: "anything at all, <@U01>"})
	e.Add("secret-plans", at(8, 0, 0, 0), Message{User: "U01", Text: "the secret is *zebra*"})
	e.Add("D01", at(9, 0, 0, 0), Message{User: "U01", Text: "psst, bob"})
	e.Add("D01", at(9, 1, 0, 0), Message{User: "U02", Text: "yes, ada?"})
	e.Add("mpdm-ada--bob--cleo-1", at(10, 0, 0, 0), Message{User: "U03", Text: "lunch, the three of us?"})
	// A day file cut off in its second message: the first is kept.
	fault := Day.Add(25 * time.Hour)
	e.Extra = map[string][]byte{"random/" + fault.Format("2006-01-02") + ".json": []byte(`[{"type":"message","user":"U02","text":"before the fault","ts":"` +
		TS(fault) + `"},{"type":"message","text":`)}
	return e
}

// Generate writes a workspace of users people, channels public
// channels of all of them, and messages messages spread over days days
// ending at Day, to w as a zip, one day file at a time (its memory is one
// day file's).
func Generate(w io.Writer, users, channels, messages, days int) error {
	zw := zip.NewWriter(w)
	put := func(name string, v any) error { return putJSON(zw, name, v) }
	created := Day.Add(-time.Duration(days+1) * 24 * time.Hour).Unix()
	var us []User
	var ids []string
	for i := range users {
		id := fmt.Sprintf("U%06d", i)
		us = append(us, User{ID: id, Name: fmt.Sprintf("person%d", i), Updated: created,
			Profile: Profile{RealName: fmt.Sprintf("Person %d", i), FirstName: "Person", LastName: fmt.Sprint(i)}})
		ids = append(ids, id)
	}
	var chs []Channel
	for c := range channels {
		chs = append(chs, Channel{ID: fmt.Sprintf("C%06d", c), Name: fmt.Sprintf("channel%d", c), Created: created, Creator: ids[0], Members: ids})
	}
	for name, v := range map[string]any{"users.json": us, "channels.json": chs, "groups.json": []Channel{}, "dms.json": []Channel{}, "mpims.json": []Channel{}} {
		if err := put(name, v); err != nil {
			return err
		}
	}
	perDay := max(messages/(channels*days), 1)
	left := messages
	start := Day.Add(-time.Duration(days-1) * 24 * time.Hour)
	for c := 0; c < channels && left > 0; c++ {
		for d := 0; d < days && left > 0; d++ {
			day := start.Add(time.Duration(d) * 24 * time.Hour)
			n := min(perDay, left)
			if c == channels-1 && d == days-1 {
				n = left
			}
			step := 24 * time.Hour / time.Duration(n+1)
			msgs := make([]Message, 0, n)
			for i := range n {
				at := day.Add(time.Duration(i+1) * step)
				msgs = append(msgs, Message{Type: "message", User: ids[i%len(ids)], TS: TS(at),
					Text: fmt.Sprintf("message %d of day %d in channel %d: words to index, like apple banana cherry", i, d, c)})
			}
			if err := put(fmt.Sprintf("channel%d/%s.json", c, day.Format("2006-01-02")), msgs); err != nil {
				return err
			}
			left -= n
		}
	}
	return zw.Close()
}

// putJSON writes v as the zip entry name.
func putJSON(zw *zip.Writer, name string, v any) error {
	f, err := zw.Create(name)
	if err != nil {
		return err
	}
	return json.NewEncoder(f).Encode(v)
}

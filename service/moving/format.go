// This file owns the export format: one JSON object a line, each with a
// "kind", in the order Export writes them (header, site, people, rooms,
// DMs, then each conversation's messages, end).

package moving

import (
	"time"

	"github.com/killrchat/killrchat/chat"
)

// Format names the export format in its header; Version is its version.
// A reader refuses another format, or a newer version.
const (
	Format  = "killrchat-export"
	Version = 1
)

// The kinds of line.
const (
	KindHeader  = "header"
	KindSite    = "site"
	KindPerson  = "person"
	KindRoom    = "room"
	KindDM      = "dm"
	KindMessage = "message"
	KindEnd     = "end"
)

// Header is the first line.
type Header struct {
	Kind    string `json:"kind"`
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Scope is "site", or "room" with Room its name.
	Scope string `json:"scope"`
	Room  string `json:"room,omitempty"`
	// Full: people's password hashes are in the lines.
	Full bool `json:"full"`
}

// Site is the site's administrators and settings.
type Site struct {
	Kind          string   `json:"kind"`
	Admins        []string `json:"admins"`
	SignupPolicy  string   `json:"signup_policy,omitempty"`
	SignupDomains []string `json:"signup_domains,omitempty"`
	RoomCreation  string   `json:"room_creation,omitempty"`
}

// Person is an account, with its read markers by conversation.
type Person struct {
	Kind         string    `json:"kind"`
	Login        string    `json:"login"`
	DisplayLogin string    `json:"display_login"`
	Firstname    string    `json:"firstname"`
	Lastname     string    `json:"lastname"`
	Email        string    `json:"email,omitempty"`
	Bio          string    `json:"bio,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	// Status is "" (active), "deactivated" or "deleted".
	Status string `json:"status,omitempty"`
	// AccountKind is "" (a person) or "bot" (chat.KindBot): a bot comes
	// back listed among the site's bots, without its token.
	AccountKind string `json:"account_kind,omitempty"`
	// PasswordHash is there only in a full backup.
	PasswordHash string             `json:"password_hash,omitempty"`
	Read         map[string]chat.ID `json:"read,omitempty"`
}

// Ref is who a line names.
type Ref struct {
	Login     string `json:"login"`
	Firstname string `json:"firstname,omitempty"`
	Lastname  string `json:"lastname,omitempty"`
}

func refOf(u chat.UserRef) Ref { return Ref{u.Login, u.Firstname, u.Lastname} }

func (r Ref) user() chat.UserRef {
	return chat.UserRef{Login: r.Login, Firstname: r.Firstname, Lastname: r.Lastname}
}

// Member is a member of a room.
type Member struct {
	Ref
	Joined *time.Time `json:"joined,omitempty"`
}

// Room is a room with its members, by login.
type Room struct {
	Kind        string    `json:"kind"`
	Name        string    `json:"name"`
	DisplayName string    `json:"display_name"`
	RoomKind    string    `json:"room_kind"`
	Banner      string    `json:"banner,omitempty"`
	Creator     Ref       `json:"creator"`
	CreatedAt   time.Time `json:"created_at"`
	Admins      []string  `json:"admins,omitempty"`
	Members     []Member  `json:"members"`
}

// DM is a direct conversation: its id and its members' logins.
type DM struct {
	Kind    string   `json:"kind"`
	ID      string   `json:"id"`
	Members []string `json:"members"`
}

// File is a message's file; its bytes are the tar entry "files/<id>"
// (and its preview's, "files/<preview>").
type File struct {
	ID            chat.ID `json:"id"`
	Name          string  `json:"name"`
	Size          int64   `json:"size"`
	ContentType   string  `json:"content_type"`
	PreviewID     chat.ID `json:"preview_id,omitzero"`
	PreviewWidth  int     `json:"preview_width,omitempty"`
	PreviewHeight int     `json:"preview_height,omitempty"`
}

// Reaction is one person's reaction, with the id of the change that
// added it.
type Reaction struct {
	Emoji  string  `json:"emoji"`
	By     Ref     `json:"by"`
	Change chat.ID `json:"change"`
}

// Message is a message of a conversation, in id order within it.
type Message struct {
	Kind         string     `json:"kind"`
	Conversation string     `json:"conversation"`
	ID           chat.ID    `json:"id"`
	Author       Ref        `json:"author"`
	Content      string     `json:"content"`
	System       bool       `json:"system,omitempty"`
	Edited       chat.ID    `json:"edited,omitzero"`
	File         *File      `json:"file,omitempty"`
	Reactions    []Reaction `json:"reactions,omitempty"`
}

// End is the last line: what the export holds. An export without it
// was cut short.
type End struct {
	Kind string `json:"kind"`
	Counts
}

// Counts are what an export or an import went through.
type Counts struct {
	People    int `json:"people"`
	Rooms     int `json:"rooms"`
	DMs       int `json:"dms"`
	Messages  int `json:"messages"`
	Reactions int `json:"reactions"`
	Files     int `json:"files"`
}

func messageLine(conv string, m chat.Message) Message {
	l := Message{Kind: KindMessage, Conversation: conv, ID: m.ID, Author: refOf(m.Author), Content: m.Content,
		System: m.System, Edited: m.Edited}
	if a := m.Attachment; a != nil {
		l.File = &File{ID: a.ID, Name: a.Name, Size: a.Size, ContentType: a.ContentType, PreviewID: a.PreviewID,
			PreviewWidth: a.PreviewWidth, PreviewHeight: a.PreviewHeight}
	}
	for _, r := range m.Reactions {
		l.Reactions = append(l.Reactions, Reaction{Emoji: r.Emoji, By: refOf(r.Reactor), Change: r.Change})
	}
	return l
}

func (l Message) message() chat.Message {
	m := chat.Message{ID: l.ID, Room: l.Conversation, Author: l.Author.user(), Content: l.Content, System: l.System, Edited: l.Edited}
	if f := l.File; f != nil {
		m.Attachment = &chat.AttachmentRef{ID: f.ID, Name: f.Name, Size: f.Size, ContentType: f.ContentType, PreviewID: f.PreviewID,
			PreviewWidth: f.PreviewWidth, PreviewHeight: f.PreviewHeight}
	}
	for _, r := range l.Reactions {
		m.Reactions = append(m.Reactions, chat.Reaction{Emoji: r.Emoji, Reactor: r.By.user(), Change: r.Change})
	}
	return m
}

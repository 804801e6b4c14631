package views

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/killrchat/killrchat/chat"
)

// Page is what the layout needs around every page.
type Page struct {
	Title string
	// User is the logged-in user; nil when logged out, or when who asks
	// could not be read (Unavailable).
	User *chat.UserRef
	// Unavailable marks the page of a 503: the sidebar offers neither
	// "Log in" nor "Sign up", which would say one was logged out.
	Unavailable bool
	// MyRooms is the sidebar's list of the user's rooms (their keys).
	MyRooms []string
	// RoomTitles maps a name of MyRooms to its display name.
	RoomTitles map[string]string
	// CSRF is the token that forms carry in the field _csrf.
	CSRF string
	// Notice is a one-line message shown on top of the main pane.
	Notice string
	// Room is the room open in the main pane, highlighted in the sidebar.
	Room string
	// Composer is set on a page with a message composer: the first link
	// of the page skips to it.
	Composer bool
	// DMs are the sidebar's recent direct messages, newest first.
	DMs []SidebarDM
	// Unread and Mentions are, by conversation id (a room's name, or a
	// DM's "dm:" id), how many messages and mentions the user has not read.
	Unread, Mentions map[string]int
	// Quiet are the conversations set to tell nothing (store.LevelNothing):
	// their badge is a dot, and they count in no total.
	Quiet map[string]bool
	// Levels are the levels the person set (see LevelOf).
	Levels map[string]chat.Level
}

// LevelOf is how much conversation tells the person: what they set, or
// the default (app.js reads it off the sidebar for notifications).
func (p Page) LevelOf(conversation string) chat.Level {
	if l, ok := p.Levels[conversation]; ok {
		return l
	}
	return chat.DefaultLevel(conversation)
}

// SidebarDM is a direct message as the sidebar lists it.
type SidebarDM struct {
	// ID is the conversation id ("dm:ada+bob"); URL its page.
	ID, URL string
	// Title names the other members.
	Title string
}

// UnreadLabel is what data-unread says: "0", the count, or "99+".
func UnreadLabel(n int) string {
	switch {
	case n <= 0:
		return "0"
	case n >= chat.MaxUnread:
		return "99+"
	}
	return strconv.Itoa(n)
}

// UnreadConversations is how many conversations have unread messages, for
// the "(N) " that starts the page title.
func (p Page) UnreadConversations() int { return p.positives(p.Unread) }

// MentionConversations is how many conversations have unread mentions.
func (p Page) MentionConversations() int { return p.positives(p.Mentions) }

// positives is how many counts of counts are above zero, quiet
// conversations left out.
func (p Page) positives(counts map[string]int) int {
	n := 0
	for conv, c := range counts {
		if c > 0 && !p.Quiet[conv] {
			n++
		}
	}
	return n
}

// MenuLabel is the accessible name of the phone's Menu button: "Menu",
// and what is unread ("Menu, 3 unread, 1 with mentions").
func (p Page) MenuLabel() string {
	return MenuLabel(p.UnreadConversations(), p.MentionConversations())
}

// MenuLabel is the Menu button's name for unread conversations, of
// which mentions mention the reader (app.js says the same).
func MenuLabel(unread, mentions int) string {
	l := "Menu"
	if unread > 0 {
		l += ", " + strconv.Itoa(unread) + " unread"
	}
	if mentions > 0 {
		l += ", " + strconv.Itoa(mentions) + " with mentions"
	}
	return l
}

// DocumentTitle is the page title, with "(N) " first when N
// conversations have unread messages.
func (p Page) DocumentTitle() string {
	t := p.Title + " · KillrChat"
	if n := p.UnreadConversations(); n > 0 {
		t = "(" + strconv.Itoa(n) + ") " + t
	}
	return t
}

// RoomTitle is the display name of name, one of p.MyRooms.
func (p Page) RoomTitle(name string) string {
	if t := p.RoomTitles[name]; t != "" {
		return t
	}
	return name
}

// Form carries what a person typed and what is wrong with it.
type Form struct {
	Values map[string]string
	Errors map[string]string
	// Error is a message for the whole form (such as "this login is taken").
	Error string
}

// Value is what was typed into field.
func (f Form) Value(field string) string { return f.Values[field] }

// Err is the error message of field, or "".
func (f Form) Err(field string) string { return f.Errors[field] }

// ErrorPage is a page for an error status.
type ErrorPage struct {
	Status  int
	Title   string
	Message string
}

// Profile is a public profile.
type Profile struct {
	User chat.User
	// Own is set when the viewer is the user.
	Own bool
	// MessageURL is the DM between the viewer and the user ("" on one's own).
	MessageURL string
}

// ProfileEdit is the form to edit one's own profile and password.
type ProfileEdit struct {
	User     chat.User
	Form     Form
	Password Form
	// Picture is the avatar upload's form (its errors); HasPicture says
	// whether there is one to remove.
	Picture    Form
	HasPicture bool
	Saved      string
	// Admin says they administer the site: the page links to /admin.
	Admin bool
}

// NewProfileEdit is the profile page of u with its forms empty but for
// the saved email and bio.
func NewProfileEdit(u chat.User, hasPicture bool) ProfileEdit {
	empty := func() Form { return Form{Values: map[string]string{}, Errors: map[string]string{}} }
	return ProfileEdit{
		User:       u,
		Form:       Form{Values: map[string]string{"email": u.Email, "bio": u.Bio}, Errors: map[string]string{}},
		Password:   empty(),
		Picture:    empty(),
		HasPicture: hasPicture,
	}
}

// RoomRow is one room in the list of all rooms.
type RoomRow struct {
	Room   chat.Room
	Joined bool
}

// RoomList is a page of all rooms.
type RoomList struct {
	// Name is the filter: rooms whose name starts with it ("" for all).
	Name string
	Rows []RoomRow
	// Next is the link to the next page, "" on the last page.
	Next string
}

// Home is the home page: the user's rooms.
type Home struct {
	Rooms []chat.RoomFor
}

// RoomView is the page of a conversation: a room or a DM.
type RoomView struct {
	// ID is the conversation id: the room's name or the DM's "dm:" id.
	ID string
	// URL is the conversation's address ("/rooms/lobby", "/dm/ada+bob"):
	// the composer, the live stream and older pages hang below it.
	URL string
	// Title is the room's display name or the DM's other members.
	Title string
	// Room is the room; zero for a DM.
	Room chat.Room
	// People are the room's first participants (by login, at most
	// ShownParticipants); the room's Members says how many there are.
	People []chat.UserRef
	// DM is the DM's header; nil for a room.
	DM          *DMHeader
	Viewer      chat.UserRef
	Participant bool
	Creator     bool
	// Moderator: the viewer is the room's creator or an admin, who may
	// delete any message.
	Moderator bool
	// Messages are the latest ones, oldest first.
	Messages []chat.Message
	// PageKey names Messages as a kept newest page (see
	// service/cache.Pages: with their number, the same key is the same
	// messages); 0 when they are not one. The list rendered of a kept
	// page is kept too (see keptList).
	PageKey uint64
	// Older is the link to the page before Messages, "" at the start.
	Older    string
	Composer Form
	// After is the id the live stream starts after, so nothing posted
	// between this render and the stream's start is missed.
	After string
	// Now is when the page is rendered: day separators say "Today".
	Now time.Time
	// FirstUnread is the first message the reader had not read when the
	// page opened (neither theirs nor a system message): the "New since
	// your last visit" divider goes above it. Zero for none.
	FirstUnread chat.ID
	// UnreadAbove links to the page of the first unread message when the
	// page does not reach back to it.
	UnreadAbove string
	// Highlight is the message a ?at= link opened the page around.
	Highlight chat.ID
	// Level is how much the conversation tells the viewer.
	Level chat.Level
	// Newer, on a page opened around a message with newer ones below it,
	// links to the latest messages; such a page has no live stream.
	Newer string
}

// DMHeader is what a DM page shows above its messages.
type DMHeader struct {
	// Members are every member, the viewer included, sorted by login.
	Members []chat.UserRef
}

// OlderMessages is a page of older messages.
type OlderMessages struct {
	// Room is the conversation id; URL its address; Title its display
	// name (see RoomView); DM is set for a DM.
	Room     string
	URL      string
	Title    string
	DM       bool
	Messages []chat.Message
	Older    string
	Now      time.Time
}

// Label names the conversation in sentences ("Message #lobby"): a room's
// name after '#', a DM's other members.
func (v RoomView) Label() string {
	if v.DM != nil {
		return v.Title
	}
	return "#" + v.Room.Name
}

// Label is RoomView.Label for a page of older messages.
func (v OlderMessages) Label() string {
	if v.DM {
		return v.Title
	}
	return "#" + v.Room
}

// Heading is the title of a full page of older messages.
func (v OlderMessages) Heading() string {
	if v.DM {
		return v.Title
	}
	return "#" + v.Title
}

// MessageID is the DOM id of a message element; the page and the live
// stream use the same one, so a message is never shown twice.
func MessageID(m chat.Message) string { return "msg-" + m.ID.String() }

// when formats a time for people, in UTC.
func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// clock formats a message time; app.js shows it in the reader's zone.
func clock(t time.Time) string { return t.UTC().Format("15:04 UTC") }

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// MentionList is a page of the viewer's mentions.
type MentionList struct {
	Items []MentionItem
	// Older is the link to the next, older page; "" on the last page.
	Older string
}

// MentionItem is a message that mentions the viewer, with where it was said.
type MentionItem struct {
	chat.Mention
	// Place names the conversation ("#room", or the DM's other members);
	// Link opens it around the message.
	Place, Link string
}

// DMList is the page of a person's direct messages, most recent first.
type DMList struct {
	Rows []DMRow
	Now  time.Time
}

// DMRow is one direct message in the list: who is in it and its last message.
type DMRow struct {
	// ID is the conversation id ("dm:ada+bob"); URL its page.
	ID, URL string
	// Title names the other members.
	Title   string
	Members []chat.UserRef
	// LastAuthor and LastExcerpt are the last message's author and first
	// characters; LastTime its time.
	LastAuthor  chat.UserRef
	LastExcerpt string
	LastTime    time.Time
	// Unread is how many messages the viewer has not read.
	Unread int
}

// NewDM is the form to start a direct message, with people to suggest.
type NewDM struct {
	Form        Form
	Suggestions []Suggestion
}

// Suggestion is a person to write to, and the DM that writing opens.
type Suggestion struct {
	Person chat.UserRef
	URL    string
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ShownParticipants is how many people a room's header lists (one line:
// the rest are a count that links to the members page, so the header
// does not grow with the room), and MembersPerPage how many the members
// page does.
const (
	ShownParticipants = 5
	MembersPerPage    = 100
)

// levelLabel says what a level tells, for its radio button.
func levelLabel(l chat.Level) string {
	switch l {
	case chat.LevelEverything:
		return "Every message"
	case chat.LevelMentions:
		return "Mentions of me"
	}
	return "Nothing (a quiet dot)"
}

// avatarColours is how many colours avatars take (.avatar-c0 … in app.css).
const avatarColours = 12

// avatarColour is the class of login's colour: a hash of the login, so a
// person keeps theirs everywhere.
func avatarColour(login string) string {
	h := uint32(2166136261)
	for i := 0; i < len(login); i++ {
		h = (h ^ uint32(login[i])) * 16777619
	}
	return "avatar-c" + strconv.Itoa(int(h%avatarColours))
}

// initials are the first letters of u's first and last names, or of the
// login when the names give none.
func initials(u chat.UserRef) string {
	var out []rune
	for _, part := range []string{u.Firstname, u.Lastname} {
		for _, r := range part {
			out = append(out, unicode.ToUpper(r))
			break
		}
	}
	if len(out) == 0 {
		for _, r := range u.Login {
			out = append(out, unicode.ToUpper(r))
			break
		}
	}
	return string(out)
}

// dmOther is the other member of a DM between two people ("dm:a+b"), for
// the sidebar's presence dot; "" for a group DM.
func dmOther(id string, me *chat.UserRef) string {
	address, ok := strings.CutPrefix(id, "dm:")
	if !ok || me == nil {
		return ""
	}
	logins := strings.Split(address, "+")
	if len(logins) != 2 {
		return ""
	}
	if logins[0] == me.Login {
		return logins[1]
	}
	return logins[0]
}

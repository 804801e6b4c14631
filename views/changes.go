package views

import (
	"strconv"
	"strings"

	"github.com/killrchat/killrchat/chat"
)

// MessageView is the page of one message (see MessagePage).
type MessageView struct {
	Message chat.Message
	// Title names its conversation.
	Title string
	// CanEdit and CanDelete say what the viewer may do with it.
	CanEdit, CanDelete bool
	// Form holds an edit or a reaction that was refused, with its error.
	Form Form
}

// commonEmoji are the reactions the menu of a message offers at one
// click; any other (up to 16 characters) is one form away.
var commonEmoji = []string{"👍", "❤️", "😂", "🎉", "😮", "👀"}

var zeroUUID chat.ID

// BodyID, EditedID and ReactionsID are the element ids of a message's
// text, "(edited)" mark and reactions, which live events replace.
func BodyID(id chat.ID) string      { return "body-" + id.String() }
func EditedID(id chat.ID) string    { return "edited-" + id.String() }
func ReactionsID(id chat.ID) string { return "reactions-" + id.String() }

// ConversationURL is the page of the conversation id: a room's
// ("/rooms/lobby") or a DM's ("/dm/ada+bob").
func ConversationURL(id string) string {
	if chat.IsDM(id) {
		return "/dm/" + strings.TrimPrefix(id, "dm:")
	}
	return roomHref(id)
}

// MessageURL is the address of m; its edit, delete and reactions hang
// below it.
func MessageURL(m chat.Message) string {
	return ConversationURL(m.Room) + "/messages/" + m.ID.String()
}

// Permalink is the link to m in its conversation, for its members: the
// page opens around it, highlighted.
func Permalink(m chat.Message) string {
	return ConversationURL(m.Room) + "?at=" + m.ID.String() + "#" + MessageID(m)
}

// reactorNames is who reacted, for a button's title.
func reactorNames(g chat.ReactionGroup) string {
	names := make([]string, len(g.People))
	for i, p := range g.People {
		names[i] = p.Name()
		if names[i] == "" {
			names[i] = p.Login
		}
	}
	return strings.Join(names, ", ")
}

// reactionsOf are m's reactions with emoji.
func reactionsOf(m chat.Message, emoji string) []chat.Reaction {
	var out []chat.Reaction
	for _, r := range m.Reactions {
		if r.Emoji == emoji {
			out = append(out, r)
		}
	}
	return out
}

func pressed(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func itoa(n int) string { return strconv.Itoa(n) }

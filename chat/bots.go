// This file owns bots as the domain sees them: accounts of the kind
// KindBot, created by site administrators, that authenticate by an API
// token (never a password) and carry a "bot" mark wherever their name
// shows.

package chat

import (
	"strings"
	"time"
)

// Account kinds: a person's row has none (KindPerson).
const (
	KindPerson = ""
	KindBot    = "bot"
)

// Audit actions of bots.
const (
	AuditCreateBot   = "create-bot"
	AuditRotateBot   = "rotate-bot-token"
	AuditRevokeBot   = "revoke-bot-token"
	AuditBotEndpoint = "bot-endpoint"
	BotTokenPrefix   = "kcb_"
	botTokenEncoded  = 43 // base64url of 32 bytes, no padding
)

// Bot is a bot as the administration page lists it.
type Bot struct {
	Login     string
	Firstname string
	Lastname  string
	CreatedBy string
	CreatedAt time.Time
	// HasToken says the bot holds a token (false once revoked);
	// TokenAt is when it was made.
	HasToken bool
	TokenAt  time.Time
	// HookRoom is the room of the incoming webhook this bot posts for
	// ("" for a bot of the API).
	HookRoom string
	// Endpoint is the bot's outgoing webhook ("" for none).
	Endpoint string
}

// Ref is the bot as denormalised into rooms and messages.
func (b Bot) Ref() UserRef {
	return UserRef{Login: b.Login, Firstname: b.Firstname, Lastname: b.Lastname}
}

// IsBot reports whether u is a bot's account.
func (u User) IsBot() bool { return u.Kind == KindBot }

// NewBot is the form that creates a bot: its login and display name.
type NewBot struct {
	Login, Firstname, Lastname string
}

// Validate cleans f in place and returns a ValidationError naming each
// bad field, or nil. A bot's last name may be empty.
func (f *NewBot) Validate() error {
	f.Login = strings.TrimSpace(f.Login)
	v := ValidationError{}
	if !ValidName(f.Login) {
		v["login"] = nameProblem
	}
	checkField(v, "firstname", &f.Firstname, nameRule)
	checkField(v, "lastname", &f.Lastname, textRule{max: nameRule.max})
	return v.Err()
}

// WellFormedBotToken reports whether s has the shape of a bot's API
// token, so a malformed one is refused before any read.
func WellFormedBotToken(s string) bool {
	rest, ok := strings.CutPrefix(s, BotTokenPrefix)
	if !ok || len(rest) != botTokenEncoded {
		return false
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Hook is a room's incoming webhook: what is posted to it shows in Room
// under Name, as the hook's own bot account Login.
type Hook struct {
	ID        string
	Room      string
	Name      string
	Login     string
	CreatedBy string
	CreatedAt time.Time
}

// Ref is the hook's author as its messages carry it: the hook's name,
// or the name a post gave (username) followed by "via" the hook's.
func (h Hook) Ref(username string) UserRef {
	if username == "" || username == h.Name {
		return UserRef{Login: h.Login, Firstname: h.Name}
	}
	return UserRef{Login: h.Login, Firstname: username, Lastname: "via " + h.Name}
}

// CheckHookName cleans a hook's (or a post's username) name in place,
// or records in v under field why it is refused.
func CheckHookName(v ValidationError, field string, name *string, required bool) {
	checkField(v, field, name, textRule{required: required, max: nameRule.max})
}

// Delivery is one message to deliver to a bot's outgoing webhook.
type Delivery struct {
	ID           ID
	Bot          string
	Conversation string
	// Body is the JSON delivered, as signed.
	Body     []byte
	Attempts int
	NextAt   time.Time
	// Lease is the current claim's id (zero: never claimed), held until
	// LeaseUntil.
	Lease      ID
	LeaseUntil time.Time
	Done       bool
	Replied    bool
}

// DeliveryHour is the queue partition of a delivery made at t.
func DeliveryHour(t time.Time) string { return t.UTC().Format("2006010215") }

// BotEndpoint is where a bot's outgoing webhook goes, and its signing
// secret.
type BotEndpoint struct {
	URL, Secret string
}

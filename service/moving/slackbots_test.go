package moving

import (
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// TestSlackAuthor: a message's author is its user, else its bot by bot
// id; a bot's message shows under the name it was posted as; a message
// of neither has no author (it is skipped and counted).
func TestSlackAuthor(t *testing.T) {
	ada := chat.UserRef{Login: "ada", Firstname: "Ada", Lastname: "Lovelace"}
	deploy := chat.UserRef{Login: "deploybot", Firstname: "Deploy", Lastname: "Bot"}
	s := &slackImport{users: map[string]chat.UserRef{"U01": ada, "U07": deploy}, bots: map[string]chat.UserRef{"B07": deploy}}
	for _, c := range []struct {
		name string
		m    slackMessage
		want chat.UserRef
		ok   bool
	}{
		{"a person", slackMessage{User: "U01", Text: "hi"}, ada, true},
		{"a bot by its user", slackMessage{User: "U07", Subtype: "bot_message", BotID: "B07"}, deploy, true},
		{"a bot by its bot id", slackMessage{Subtype: "bot_message", BotID: "B07"}, deploy, true},
		{"a bot under another name", slackMessage{Subtype: "bot_message", BotID: "B07", Username: "Deployer\n2"},
			chat.UserRef{Login: "deploybot", Firstname: "Deployer 2"}, true},
		{"an unknown bot", slackMessage{Subtype: "bot_message", BotID: "B99", Username: "GitHub"}, chat.UserRef{}, false},
		{"nobody", slackMessage{User: "U42"}, chat.UserRef{}, false},
	} {
		got, ok := s.author(c.m)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

package views

import (
	"context"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

func TestMessageTextMentions(t *testing.T) {
	members := map[string]chat.UserRef{"ada": {Login: "ada"}, "bob.b": {Login: "bob.b"}}
	mention := func(login, text, class string) string {
		return `<a href="/users/` + login + `" class="` + class + `" data-login="` + login + `">` + text + `</a>`
	}
	for _, tt := range []struct {
		name, in, viewer, want string
	}{
		{"Member", "hi @ada", "", "hi " + mention("ada", "@ada", "mention")},
		{"CaseKeptInText", "@ADA look", "", mention("ada", "@ADA", "mention") + " look"},
		{"NotAMember", "hi @eve", "", "hi @eve"},
		{"TrailingDot", "thanks @bob.b.", "", "thanks " + mention("bob.b", "@bob.b", "mention") + "."},
		{"NotInEmail", "mail ada@ada.example", "", "mail ada@ada.example"},
		{"Escaped", "<b>@ada</b> & \"x\"", "", "&lt;b&gt;" + mention("ada", "@ada", "mention") + "&lt;/b&gt; &amp; &#34;x&#34;"},
		{"Viewer", "@ada and @bob.b", "ada", mention("ada", "@ada", "mention mention-me") + " and " + mention("bob.b", "@bob.b", "mention")},
		{"NotInsideLink", "https://example.com/@ada", "", `<a href="https://example.com/@ada" rel="noopener noreferrer nofollow ugc" target="_blank">https://example.com/@ada</a>`},
		{"Repeated", "@ada @ada", "", mention("ada", "@ada", "mention") + " " + mention("ada", "@ada", "mention")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := WithMembers(context.Background(), members)
			if tt.viewer != "" {
				ctx = WithViewer(ctx, tt.viewer)
			}
			var b strings.Builder
			if err := messageText(tt.in).Render(ctx, &b); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Fatalf("messageText(%q)\n got %s\nwant %s", tt.in, b.String(), tt.want)
			}
		})
	}
	t.Run("NoMembersNoLinks", func(t *testing.T) {
		if got := render(t, "hi @ada"); got != "hi @ada" {
			t.Fatalf("got %s", got)
		}
	})
}

func TestMentionExcerpt(t *testing.T) {
	for _, tt := range []struct {
		name, in, viewer, want string
	}{
		{"Viewer", "hey @ada, look", "ada", `hey <mark class="mention-me">@ada</mark>, look`},
		{"CaseKept", "@ADA!", "ada", `<mark class="mention-me">@ADA</mark>!`},
		{"OthersPlain", "@bob and @ada", "ada", `@bob and <mark class="mention-me">@ada</mark>`},
		{"Escaped", "<i>@ada</i>", "ada", `&lt;i&gt;<mark class="mention-me">@ada</mark>&lt;/i&gt;`},
		{"NoViewer", "hey @ada", "", "hey @ada"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.viewer != "" {
				ctx = WithViewer(ctx, tt.viewer)
			}
			var b strings.Builder
			if err := mentionExcerpt(tt.in).Render(ctx, &b); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Fatalf("mentionExcerpt(%q)\n got %s\nwant %s", tt.in, b.String(), tt.want)
			}
		})
	}
}

package store

import (
	"github.com/killrchat/killrchat/chat"
	"slices"
	"testing"
)

func TestMentioned(t *testing.T) {
	members := map[string]chat.UserRef{"ada": {Login: "ada"}, "bob.b": {Login: "bob.b"}, "cy_1": {Login: "cy_1"}}
	for _, tt := range []struct {
		name, content string
		want          []string
	}{
		{"OK", "hi @ada", []string{"ada"}},
		{"CaseInsensitive", "@ADA look", []string{"ada"}},
		{"TrailingPunctuation", "thanks @bob.b. and @cy_1!", []string{"bob.b", "cy_1"}},
		{"Once", "@ada @ada", []string{"ada"}},
		{"NotAMember", "@eve hi", nil},
		{"NotInEmail", "mail ada@ada.example", nil},
		{"InParentheses", "(@ada)", []string{"ada"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := chat.Mentioned(tt.content, members); !slices.Equal(got, tt.want) {
				t.Fatalf("Mentioned(%q) = %v, want %v", tt.content, got, tt.want)
			}
		})
	}
}

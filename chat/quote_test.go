package chat

import "testing"

func TestQuote(t *testing.T) {
	const link = "https://chat.example/rooms/lobby?at=1#msg-1"
	for _, tt := range []struct {
		name, content, author, want string
	}{
		{"OneLine", "hello", "Ada Lovelace", "> hello\n\n— [Ada Lovelace](" + link + ")\n\n"},
		{"Blocks", "- one\n- two\n\n~~gone~~\n\n```\ncode\n```", "Ada Lovelace",
			"> - one\n> - two\n>\n> ~~gone~~\n>\n> ```\n> code\n> ```\n\n— [Ada Lovelace](" + link + ")\n\n"},
		{"QuoteOfAQuote", "> earlier\n\n— [Bob](x)\n\nagreed", "Ada Lovelace",
			"> > earlier\n>\n> — [Bob](x)\n>\n> agreed\n\n— [Ada Lovelace](" + link + ")\n\n"},
		{"NameWithBrackets", "hi", "Ada [AL]", "> hi\n\n— [Ada \\[AL\\]](" + link + ")\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quote(tt.content, tt.author, link); got != tt.want {
				t.Errorf("Quote = %q, want %q", got, tt.want)
			}
		})
	}
}

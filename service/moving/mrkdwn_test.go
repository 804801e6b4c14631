package moving

import "testing"

func TestConvertMrkdwn(t *testing.T) {
	names := slackNames{
		user: func(id string) (string, bool) {
			m := map[string]string{"U1": "ada", "U2": "bob"}
			l, ok := m[id]
			return l, ok
		},
		channel: func(id string) (string, bool) {
			if id == "C1" {
				return "general", true
			}
			return "", false
		},
	}
	for _, c := range []struct{ name, in, want string }{
		{"Plain", "hello", "hello"},
		{"Bold", "a *bold* word", "a **bold** word"},
		{"Italic", "an _italic_ word", "an *italic* word"},
		{"Strike", "a ~gone~ word", "a ~~gone~~ word"},
		{"NotBoldInsideWord", "2*3*4", "2*3*4"},
		{"User", "hi <@U1>", "hi @ada"},
		{"UserWithLabel", "hi <@U2|bob>!", "hi @bob!"},
		{"UnknownUser", "hi <@U9|zed>", "hi @zed"},
		{"Channel", "see <#C1|general>", "see #general"},
		{"UnknownChannel", "see <#C9|secret>", "see #secret"},
		{"Here", "<!here> look", "@here look"},
		{"Channel broadcast", "<!channel>", "@channel"},
		{"Link", "<https://example.com|Example>", "[Example](https://example.com)"},
		{"BareLink", "<https://example.com>", "https://example.com"},
		{"Mail", "<mailto:a@example.com|a@example.com>", "[a@example.com](mailto:a@example.com)"},
		{"Escapes", "a &lt;b&gt; &amp; c", "a <b> & c"},
		{"CodeSpanKept", "run `*not bold* <@U1>` now", "run `*not bold* <@U1>` now"},
		{"CodeBlock", "```x = *y*```", "```\nx = *y*\n```"},
		{"CodeEscapes", "`a &lt; b`", "`a < b`"},
		{"UnclosedCode", "a `b *c*", "a `b **c**"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := convertMrkdwn(c.in, names); got != c.want {
				t.Errorf("convertMrkdwn(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

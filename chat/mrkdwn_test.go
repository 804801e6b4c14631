package chat

import "testing"

func TestSlackToMarkdown(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"Plain", "Hello, world.", "Hello, world."},
		{"Bold", "Build *passed* on main", "Build **passed** on main"},
		{"Italic", "an _italic_ word", "an _italic_ word"},
		{"Strike", "~old~ new", "~~old~~ new"},
		{"LinkWithLabel", "See <https://example.com/run/1|run 1>.", "See [run 1](https://example.com/run/1)."},
		{"BareLink", "<https://example.com>", "<https://example.com>"},
		{"Mention", "ping <@Alice>", "ping @alice"},
		{"SlackUserID", "ping <@U0123ABC|bob>", "ping @u0123abc"},
		{"Here", "<!here> deploy", "@here deploy"},
		{"Channel", "see <#C123|ops>", "see #ops"},
		{"Escapes", "a &lt;b&gt; &amp; c", "a <b> & c"},
		{"CodeLeftAlone", "run `*x*` and *y*", "run `*x*` and **y**"},
		{"BoldAndLink", "*Deploy* of <https://e.com/x|x> done", "**Deploy** of [x](https://e.com/x) done"},
		{"NoBoldInsideWord", "a*b*c", "a*b*c"},
		{"LabelBrackets", "<https://e.com|[x]>", `[\[x\]](https://e.com)`},
		{"UnknownAngle", "<foo>", "<foo>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SlackToMarkdown(tc.in); got != tc.want {
				t.Errorf("SlackToMarkdown(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

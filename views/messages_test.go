package views

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

func render(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	if err := messageText(s).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func a(href string) string {
	return `<a href="` + href + `" rel="noopener noreferrer nofollow ugc" target="_blank">` + href + `</a>`
}

func TestMessageText(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"Plain", "no links here", "no links here"},
		{"Alone", "https://example.com", a("https://example.com")},
		{"HTTP", "see http://example.com/a/b", "see " + a("http://example.com/a/b")},
		{"PeriodAfter", "Go to https://example.com/docs.", "Go to " + a("https://example.com/docs") + "."},
		{"CommaAndMore", "https://a.example, then https://b.example!", a("https://a.example") + ", then " + a("https://b.example") + "!"},
		{"QuestionMark", "Seen https://example.com/x?", "Seen " + a("https://example.com/x") + "?"},
		{"InParentheses", "(see https://example.com/page)", "(see " + a("https://example.com/page") + ")"},
		{"ParenthesesInside", "https://en.wikipedia.org/wiki/Cassandra_(database)", a("https://en.wikipedia.org/wiki/Cassandra_(database)")},
		{"ParenthesesInsideAndAround", "(https://en.wikipedia.org/wiki/Go_(game)).", "(" + a("https://en.wikipedia.org/wiki/Go_(game)") + ")."},
		{"QueryWithAmpersand", "https://example.com/s?q=a&b=c&amp;d", `<a href="https://example.com/s?q=a&amp;b=c&amp;amp;d" rel="noopener noreferrer nofollow ugc" target="_blank">https://example.com/s?q=a&amp;b=c&amp;amp;d</a>`},
		{"Fragment", "https://example.com/#top", a("https://example.com/#top")},
		{"Quoted", `"https://example.com/q"`, "&#34;" + a("https://example.com/q") + "&#34;"},
		{"AngleBrackets", "<https://example.com/x>", a("https://example.com/x")}, // a Markdown autolink
		{"JavaScriptNotLinked", "javascript:alert(1)", "javascript:alert(1)"},
		{"JavaScriptInsideText", "x javascript://example.com/%0aalert(1)", "x javascript://example.com/%0aalert(1)"},
		{"DataNotLinked", "data:text/html,<b>x</b>", "data:text/html,&lt;b&gt;x&lt;/b&gt;"},
		{"NoHost", "http:// nothing", "http:// nothing"},
		{"HTMLStaysText", `<img src=x onerror=alert(1)> https://example.com`, "&lt;img src=x onerror=alert(1)&gt; " + a("https://example.com")},
		{"QuoteCannotEscapeHref", `https://example.com/"onmouseover="x`, a("https://example.com/") + "&#34;onmouseover=&#34;x"},
		{"NewlineEnds", "https://example.com/a\nnext", a("https://example.com/a") + "\nnext"},
		{"UpperCaseScheme", "HTTPS://EXAMPLE.COM", a("HTTPS://EXAMPLE.COM")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(t, tt.in); got != tt.want {
				t.Errorf("messageText(%q)\n got  %s\n want %s", tt.in, got, tt.want)
			}
		})
	}
}

func msgAt(login string, at time.Time) chat.Message {
	return chat.Message{ID: chat.IDAt(at), Author: chat.UserRef{Login: login}}
}

func TestLayoutMessages(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	day := func(d, h, m int) time.Time { return time.Date(2026, 3, d, h, m, 0, 0, time.UTC) }
	sys := msgAt("ada", day(10, 9, 3))
	sys.System = true
	msgs := []chat.Message{
		msgAt("ada", day(2, 23, 58)), // a date
		msgAt("ada", day(9, 23, 58)), // Yesterday
		msgAt("ada", day(10, 0, 1)),  // Today, new day: not grouped
		msgAt("ada", day(10, 0, 5)),  // grouped
		msgAt("bob", day(10, 0, 6)),  // other author
		msgAt("bob", day(10, 0, 12)), // 6 minutes later
		sys,                          // system message
		msgAt("ada", day(10, 9, 4)),  // after a system message
	}
	type row struct {
		day  string
		cont bool
	}
	want := []row{
		{"Monday, 2 March 2026", false}, {"Yesterday", false}, {"Today", false}, {"", true},
		{"", false}, {"", false}, {"", false}, {"", false},
	}
	got := layoutMessages(msgs, now)
	for i, it := range got {
		if it.day != want[i].day || it.cont != want[i].cont {
			t.Errorf("row %d: day %q cont %v, want day %q cont %v", i, it.day, it.cont, want[i].day, want[i].cont)
		}
		if it.last != (i == len(msgs)-1) {
			t.Errorf("row %d: last = %v", i, it.last)
		}
	}
}

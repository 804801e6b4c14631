package views

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/killrchat/killrchat/chat"
)

func TestMarkdown(t *testing.T) {
	members := map[string]chat.UserRef{"ada": {Login: "ada"}}
	mention := `<a href="/users/ada" class="mention" data-login="ada">@ada</a>`
	for _, tt := range []struct {
		name, in, want string
	}{
		{"Bold", "**bold** and __bold__", "<strong>bold</strong> and <strong>bold</strong>"},
		{"Italic", "_it_ and *it*", "<em>it</em> and <em>it</em>"},
		{"Strike", "~~gone~~", "<del>gone</del>"},
		{"InlineCode", "run `rm -rf /tmp/x` now", "run <code>rm -rf /tmp/x</code> now"},
		{"FencedKeepsSpaces", "```go\nfunc main() {\n\tfmt.Println(\"<hi>\")\n}\n```",
			"<pre><code>func main() {\n\tfmt.Println(&#34;&lt;hi&gt;&#34;)\n}\n</code></pre>"},
		{"Quote", "> quoted\n\nreply", "<blockquote><p>quoted</p></blockquote><p>reply</p>"},
		{"List", "- one\n- two", "<ul><li>one</li><li>two</li></ul>"},
		{"Ordered", "1. one\n2. two", "<ol><li>one</li><li>two</li></ol>"},
		{"MarkdownLink", "[docs](https://example.com/d)", `<a href="https://example.com/d" rel="noopener noreferrer nofollow ugc" target="_blank">docs</a>`},
		{"JavaScriptLinkIsText", "[click](javascript:alert(1))", "click"},
		{"DataLinkIsText", "[x](data:text/html,hi)", "x"},
		{"ImageIsALink", "![cat](https://example.com/cat.png)", `<a href="https://example.com/cat.png" rel="noopener noreferrer nofollow ugc" target="_blank">cat</a>`},
		{"NoHeading", "# not a heading", "# not a heading"},
		{"NoRule", "a\n---", "a\n---"},
		{"IndentedCode", "    indented", "<pre><code>indented\n</code></pre>"},
		{"RawHTMLIsText", "<b>x</b> <script>alert(1)</script>", "&lt;b&gt;x&lt;/b&gt; &lt;script&gt;alert(1)&lt;/script&gt;"},
		{"HTMLBlockIsText", "<div onclick=x>\nhi\n</div>", "&lt;div onclick=x&gt;\nhi\n&lt;/div&gt;"},
		{"MentionInBold", "**hi @ada**", "<strong>hi " + mention + "</strong>"},
		{"NoMentionInCode", "`@ada` and\n```\n@ada\n```", "<p><code>@ada</code> and</p><pre><code>@ada\n</code></pre>"},
		{"NoLinkInCode", "`https://example.com`", "<code>https://example.com</code>"},
		{"URLWithUnderscores", "see https://example.com/a_b_c_d here", `see <a href="https://example.com/a_b_c_d" rel="noopener noreferrer nofollow ugc" target="_blank">https://example.com/a_b_c_d</a> here`},
		{"EmailAutolinkIsText", "<ada@example.com>", "&lt;ada@example.com&gt;"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := messageText(tt.in).Render(WithMembers(context.Background(), members), &b); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("messageText(%q)\n got  %q\n want %q", tt.in, b.String(), tt.want)
			}
		})
	}
}

// allowed are the elements a message's HTML may hold, and their attributes.
var allowed = map[string]map[string]bool{
	"a":          {"href": true, "rel": true, "target": true, "class": true, "data-login": true},
	"p":          {},
	"br":         {},
	"strong":     {},
	"em":         {},
	"del":        {},
	"code":       {},
	"pre":        {},
	"blockquote": {},
	"ul":         {},
	"ol":         {"start": true},
	"li":         {},
}

// checkHTML returns why out is not well-formed HTML made of allowed
// elements and attributes only, or "".
func checkHTML(out string) string {
	z := html.NewTokenizer(strings.NewReader(out))
	var open []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				return z.Err().Error()
			}
			if len(open) > 0 {
				return fmt.Sprintf("unclosed %v", open)
			}
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			attrs, ok := allowed[tok.Data]
			if !ok {
				return "element " + tok.Data
			}
			for _, a := range tok.Attr {
				if !attrs[a.Key] {
					return fmt.Sprintf("attribute %s of %s", a.Key, tok.Data)
				}
				if a.Key == "href" && !(strings.HasPrefix(a.Val, "/users/") || safeHref(a.Val) != "") {
					return "href " + a.Val
				}
			}
			if tok.Data != "br" {
				open = append(open, tok.Data)
			}
		case html.EndTagToken:
			tok := z.Token()
			if len(open) == 0 || open[len(open)-1] != tok.Data {
				return fmt.Sprintf("</%s> closes %v", tok.Data, open)
			}
			open = open[:len(open)-1]
		case html.CommentToken, html.DoctypeToken:
			return "markup " + string(z.Raw())
		}
	}
}

// xssPayloads are the attacks the other tests of message text try.
var xssPayloads = []string{
	"<script>alert('x')</script>",
	"<img src=x onerror=alert(1)> https://example.com",
	`https://example.com/"onmouseover="x`,
	"javascript:alert(1)",
	"[x](javascript:alert(1))",
	"[x](JAVASCRIPT:alert(1))",
	"[x](  javascript:alert(1) )",
	"![x](javascript:alert(1))",
	"<javascript:alert(1)>",
	"[x](https://example.com \"title\" onclick=x)",
	"```\"><script>x</script>\n<script>\n```",
	"<!-- comment --> <![CDATA[x]]> <?php x ?>",
	"<a href=\"https://evil\">x</a>",
	"`<code>`",
	"> <svg onload=alert(1)>",
	"- <iframe src=x>",
	"**<b>**</b>",
	"@ada <@ada> [@ada](https://example.com)",
	"\x00\u202e",
}

func FuzzMessageText(f *testing.F) {
	for _, s := range xssPayloads {
		f.Add(s)
	}
	f.Add("**bold** _it_ ~~s~~ `c`\n```\ncode\n```\n> q\n- a\n1. b\n[l](https://x.example)")
	members := map[string]chat.UserRef{"ada": {Login: "ada"}}
	f.Fuzz(func(t *testing.T, in string) {
		var b strings.Builder
		if err := messageText(in).Render(WithMembers(WithViewer(context.Background(), "ada"), members), &b); err != nil {
			t.Fatal(err)
		}
		if why := checkHTML(b.String()); why != "" {
			t.Fatalf("messageText(%q) = %q: %s", in, b.String(), why)
		}
	})
}

// TestPlainTextAsGoldmark: what markdownHTML returns without a parse is
// what goldmark makes of it, for lines of the characters plainText takes
// (random ones included), and the lines it refuses go through goldmark.
func TestPlainTextAsGoldmark(t *testing.T) {
	members := map[string]chat.UserRef{"ada": {Login: "ada", Firstname: "Ada"}}
	lines := []string{
		"load message 12 from worker 3", "Hello", "a", "Yes. No, maybe; why? Now!",
		"two  spaces inside", "ends with a dot.", "x1.2.3", "Visit example.com today",
		"www.example.com is not a link", "Done!!! ok", "A 1. list? no",
	}
	const alphabet = "abcXYZ019 .,;?!"
	rnd := rand.New(rand.NewPCG(38, 1))
	for range 2000 {
		b := make([]byte, 1+rnd.IntN(40))
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		lines = append(lines, string(b))
	}
	plain := 0
	for _, s := range lines {
		if !plainText(s) {
			continue
		}
		plain++
		want, err := goldmarkHTML(s, members, "ada", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := markdownHTML(s, members, "ada", nil); got != want {
			t.Errorf("%q: %q, goldmark %q", s, got, want)
		}
	}
	if plain < 500 {
		t.Errorf("only %d of %d lines were plain", plain, len(lines))
	}
	for _, s := range []string{"", " lead", "trail ", "1. list", "- item", "*em*", "a@ada", "@ada hi", "see http://x.io",
		"a <b>", "a & b", "x_y_", "q \"quoted\"", "it's", "line\nbreak", "tab\there", "héllo", "# title", "a:b"} {
		if plainText(s) {
			t.Errorf("%q taken as plain", s)
		}
	}
}

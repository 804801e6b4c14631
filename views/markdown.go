// This file owns how a message's Markdown becomes HTML: goldmark (the
// parser Hugo uses) with only the syntax a chat needs (paragraphs, lists,
// quotes, fenced code, inline code, emphasis, strike-through, links) and
// none that writes markup of its own: raw HTML, images and headings are
// text. The text itself goes through the same rules as before Markdown:
// http(s) addresses become links (splitLinks), "@login" of a member a
// mention, and nothing inside code is either.

package views

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/killrchat/killrchat/chat"
)

// markdownParser reads the Markdown of messages. It leaves out the block
// syntax a chat line meets by accident ("# " headings, "---" rules and
// underlined headings, HTML blocks) and the inline raw HTML; those are
// plain text.
var markdownParser = func() parser.Parser {
	p := parser.NewParser(
		parser.WithBlockParsers(
			util.Prioritized(parser.NewListParser(), 300),
			util.Prioritized(parser.NewListItemParser(), 400),
			util.Prioritized(parser.NewCodeBlockParser(), 500),
			util.Prioritized(parser.NewFencedCodeBlockParser(), 700),
			util.Prioritized(parser.NewBlockquoteParser(), 800),
			util.Prioritized(parser.NewParagraphParser(), 1000),
		),
		parser.WithInlineParsers(
			util.Prioritized(parser.NewCodeSpanParser(), 100),
			util.Prioritized(parser.NewLinkParser(), 200),
			util.Prioritized(parser.NewAutoLinkParser(), 300),
			util.Prioritized(parser.NewEmphasisParser(), 500),
			util.Prioritized(extension.NewStrikethroughParser(), 500),
		),
		parser.WithASTTransformers(util.Prioritized(mergeText{}, 100)),
	)
	return p
}()

// markdownHTML renders s for a conversation with members (nil: no
// mentions), for viewer ("" when rendered for every reader); rec, if not
// nil, records each member lookup the mentions make.
func markdownHTML(s string, members map[string]chat.UserRef, viewer string, rec *lookupRecorder) (string, error) {
	if plainText(s) {
		// Most chat lines: goldmark would make them themselves.
		return s, nil
	}
	return goldmarkHTML(s, members, viewer, rec)
}

// plainText says whether s renders as itself, with no parse: one line of
// ASCII letters, digits, spaces and the punctuation ".,;?!", starting
// with a letter and not ending with a space. None of them is Markdown,
// HTML to escape, a link (an address needs ':' and '/') or a mention
// ('@'); a list needs a marker at the start, trailing spaces are trimmed,
// and a line of its own is one paragraph, which markdownHTML unwraps
// (TestPlainTextAsGoldmark).
func plainText(s string) bool {
	if s == "" || s[len(s)-1] == ' ' || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == ' ', c == '.', c == ',', c == ';', c == '?', c == '!':
		default:
			return false
		}
	}
	return true
}

// goldmarkHTML is markdownHTML through goldmark.
func goldmarkHTML(s string, members map[string]chat.UserRef, viewer string, rec *lookupRecorder) (string, error) {
	src := []byte(s)
	doc := markdownParser.Parse(text.NewReader(src))
	if p, ok := doc.FirstChild().(*ast.Paragraph); ok && doc.ChildCount() == 1 {
		// One paragraph, as most chat lines are: its text alone.
		for c := p.FirstChild(); c != nil; {
			next := c.NextSibling()
			doc.AppendChild(doc, c)
			c = next
		}
		doc.RemoveChild(doc, p)
	}
	r := renderer.NewRenderer(renderer.WithNodeRenderers(
		util.Prioritized(html.NewRenderer(), 1000),
		util.Prioritized(extension.NewStrikethroughHTMLRenderer(), 500),
		util.Prioritized(&messageRenderer{members: members, viewer: viewer, rec: rec}, 100),
	))
	var buf bytes.Buffer
	if err := r.Render(&buf, src, doc); err != nil {
		return "", err
	}
	return blockBreaks.Replace(buf.String()), nil
}

// blockBreaks drops the line breaks goldmark writes after block tags: the
// text is shown with white-space: pre-wrap, where they would be blank
// lines. Only the renderer writes tags (text is escaped), so these are
// never the message's own.
var blockBreaks = strings.NewReplacer(
	"<p>\n", "<p>", "</p>\n", "</p>",
	"<ul>\n", "<ul>", "</ul>\n", "</ul>",
	"<ol>\n", "<ol>", "</ol>\n", "</ol>",
	"</li>\n", "</li>",
	"<blockquote>\n", "<blockquote>", "</blockquote>\n", "</blockquote>",
	"</pre>\n", "</pre>",
)

// messageRenderer renders the nodes whose HTML is ours: text (links and
// mentions), links and images (http(s) only, rel and target), and code
// blocks (no class from the info string).
type messageRenderer struct {
	members map[string]chat.UserRef
	viewer  string
	rec     *lookupRecorder
}

func (r *messageRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindText, r.text)
	reg.Register(ast.KindString, r.str)
	reg.Register(ast.KindLink, r.link)
	reg.Register(ast.KindImage, r.link)
	reg.Register(ast.KindAutoLink, r.autoLink)
	reg.Register(ast.KindFencedCodeBlock, r.codeBlock)
	reg.Register(ast.KindCodeBlock, r.codeBlock)
	reg.Register(ast.KindRawHTML, r.rawHTML)
	reg.Register(ast.KindHTMLBlock, r.rawHTML)
}

// inLink says whether n is inside a link: its text is not linked again.
func inLink(n ast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		switch p.Kind() {
		case ast.KindLink, ast.KindImage, ast.KindAutoLink:
			return true
		}
	}
	return false
}

func (r *messageRenderer) inline(w util.BufWriter, s string, n ast.Node) {
	if inLink(n) {
		_, _ = w.WriteString(escape(s))
		return
	}
	for _, p := range splitLinks(s) {
		if p.href == "" {
			if r.rec != nil {
				r.rec.record(p.text, r.members)
			}
			_, _ = w.WriteString(mentionHTML(p.text, r.members, r.viewer))
			continue
		}
		_, _ = w.WriteString(`<a href="` + escape(p.href) + `" rel="` + linkRel + `" target="_blank">` + escape(p.text) + `</a>`)
	}
}

func (r *messageRenderer) text(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Text)
	r.inline(w, string(n.Value(source)), n)
	// The text is shown with white-space: pre-wrap, so a line break of
	// the message is a line break on the page.
	switch {
	case n.HardLineBreak():
		_, _ = w.WriteString("<br>")
	case n.SoftLineBreak():
		_, _ = w.WriteString("\n")
	}
	return ast.WalkContinue, nil
}

func (r *messageRenderer) str(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		r.inline(w, string(node.(*ast.String).Value), node)
	}
	return ast.WalkContinue, nil
}

// safeHref is dest if it is an http(s) address with a host, else "".
func safeHref(dest string) string {
	u, err := url.Parse(dest)
	if err != nil || u.Host == "" || !(strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")) {
		return ""
	}
	return dest
}

func (r *messageRenderer) link(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	var dest string
	switch n := node.(type) {
	case *ast.Link:
		dest = string(n.Destination)
	case *ast.Image:
		dest = string(n.Destination)
	}
	href := safeHref(dest)
	if href == "" || inLink(node) {
		return ast.WalkContinue, nil // its text alone
	}
	if entering {
		_, _ = w.WriteString(`<a href="` + escape(href) + `" rel="` + linkRel + `" target="_blank">`)
	} else {
		_, _ = w.WriteString(`</a>`)
	}
	return ast.WalkContinue, nil
}

func (r *messageRenderer) autoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	label := string(n.Label(source))
	if href := safeHref(string(n.URL(source))); href != "" && n.AutoLinkType == ast.AutoLinkURL && !inLink(node) {
		_, _ = w.WriteString(`<a href="` + escape(href) + `" rel="` + linkRel + `" target="_blank">` + escape(label) + `</a>`)
	} else {
		_, _ = w.WriteString(escape("<" + label + ">"))
	}
	return ast.WalkSkipChildren, nil
}

func (r *messageRenderer) codeBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString("<pre><code>")
	lines := node.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		_, _ = w.WriteString(escape(string(seg.Value(source))))
	}
	_, _ = w.WriteString("</code></pre>\n")
	return ast.WalkSkipChildren, nil
}

// rawHTML is never reached (the parser reads no HTML); should it be, the
// markup shows as text.
func (r *messageRenderer) rawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		lines := node.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			_, _ = w.WriteString(escape(string(seg.Value(source))))
		}
	}
	return ast.WalkSkipChildren, nil
}

func escape(s string) string { return templ.EscapeString(s) }

// mergeText joins text nodes that are next to each other in the source
// (emphasis markers that matched nothing leave the text in pieces), so an
// address or a mention is found whole.
type mergeText struct{}

func (mergeText) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		for c := n.FirstChild(); c != nil; {
			t, ok := c.(*ast.Text)
			next, nok := c.NextSibling().(*ast.Text)
			if ok && nok && !t.SoftLineBreak() && !t.HardLineBreak() && !t.IsRaw() && !next.IsRaw() &&
				t.Segment.Stop == next.Segment.Start && t.Segment.Padding == 0 && next.Segment.Padding == 0 {
				t.Segment = text.NewSegment(t.Segment.Start, next.Segment.Stop)
				t.SetSoftLineBreak(next.SoftLineBreak())
				t.SetHardLineBreak(next.HardLineBreak())
				n.RemoveChild(n, next)
				continue
			}
			c = c.NextSibling()
		}
		return ast.WalkContinue, nil
	})
}

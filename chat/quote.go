package chat

import "strings"

// Quote is the Markdown that "Reply with quote" puts in the composer: the
// stored text of the message quoted line by line (lists, quotes, code and
// strike-through stay as written, and a quote of a quote nests), then a
// short attribution that links to it by its author's name.
func Quote(content, author, link string) string {
	lines := strings.Split(strings.TrimRight(content, "\n"), "\n")
	var b strings.Builder
	for _, l := range lines {
		if l == "" {
			b.WriteString(">\n")
			continue
		}
		b.WriteString("> " + l + "\n")
	}
	b.WriteString("\n— [" + markdownText(author) + "](" + link + ")\n\n")
	return b.String()
}

// markdownText escapes what would end or break a link's text.
func markdownText(s string) string {
	return strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`).Replace(s)
}

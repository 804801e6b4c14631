package static

// Static files are code too: every stylesheet and script under static/ must
// parse. A stylesheet with an unclosed block still loads, and Chromium nests
// every later rule inside the open one, so half the styles silently stop
// applying (issue 22: the attachment styles never applied).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/css"
	"github.com/tdewolff/parse/v2/js"
)

// filesEnding lists the embedded files whose names end with ext.
func filesEnding(t *testing.T, ext string) []string {
	t.Helper()
	var names []string
	err := fs.WalkDir(Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ext) {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("no %s file under static/", ext)
	}
	return names
}

func TestStylesheetsParse(t *testing.T) {
	for _, name := range filesEnding(t, ".css") {
		t.Run(name, func(t *testing.T) {
			src, err := fs.ReadFile(Files, name)
			if err != nil {
				t.Fatal(err)
			}
			for _, problem := range cssProblems(src) {
				t.Errorf("%s: %s", name, problem)
			}
		})
	}
}

func TestCSSProblems(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // a problem containing this; "" for none
	}{
		{"OK", "a { color: red; }\n@media (max-width: 40rem) { a { color: blue; } }\n", ""},
		{"UnclosedRule", "a { color: red;\n/* next */\nb { color: blue; }\n", "line 1: the block opened here is not closed"},
		{"UnclosedRuleBalancedLater", "a { color: red;\nb { color: blue; }\n}\n", "line 2: a block inside the rule opened on line 1"},
		{"UnclosedAtRule", "@media (max-width: 40rem) {\n a { color: red; }\n", "not closed"},
		{"StrayBrace", "a { color: red; }\n}\n", "line 2"},
		{"MissingColon", "a { color red; }\n", "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cssProblems([]byte(tc.src))
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("problems in valid CSS: %q", got)
				}
				return
			}
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Fatalf("problems = %q, want one with %q", got, tc.want)
			}
		})
	}
}

// cssProblems parses a stylesheet and returns what is wrong with it, each
// with its line: parse errors, blocks that the file does not close, and
// rules nested in a rule (valid CSS today, but this project writes none, so
// one is a missing "}" that a later stray "}" happens to balance).
func cssProblems(src []byte) []string {
	var problems []string
	p := css.NewParser(parse.NewInputBytes(src), false)
	type block struct {
		line    int
		ruleset bool
	}
	var open []block
	lineAt := func(offset int) int { return bytes.Count(src[:min(offset, len(src))], []byte("\n")) + 1 }
	for {
		gt, tt, _ := p.Next()
		switch gt {
		case css.ErrorGrammar:
			err := p.Err()
			if errors.Is(err, io.EOF) {
				return problems
			}
			problems = append(problems, err.Error())
		case css.BeginRulesetGrammar, css.BeginAtRuleGrammar:
			b := block{line: lineAt(p.Offset()), ruleset: gt == css.BeginRulesetGrammar}
			if n := len(open); n > 0 && open[n-1].ruleset {
				problems = append(problems, fmt.Sprintf("line %d: a block inside the rule opened on line %d (is that rule missing its \"}\"?)", b.line, open[n-1].line))
			}
			open = append(open, b)
		case css.EndRulesetGrammar, css.EndAtRuleGrammar:
			if len(open) == 0 {
				continue
			}
			b := open[len(open)-1]
			open = open[:len(open)-1]
			if tt != css.RightBraceToken {
				problems = append(problems, fmt.Sprintf("line %d: the block opened here is not closed", b.line))
			}
		}
	}
}

func TestScriptsParse(t *testing.T) {
	for _, name := range filesEnding(t, ".js") {
		t.Run(name, func(t *testing.T) {
			src, err := fs.ReadFile(Files, name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := js.Parse(parse.NewInputBytes(src), js.Options{}); err != nil {
				t.Errorf("%s does not parse: %v", name, err)
			}
		})
	}
}

// TestScriptsPassNodeCheck runs `node --check` on our own scripts, a second,
// independent parser (V8's) beside the Go one above.
func TestScriptsPassNodeCheck(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is needed to check static/*.js and was not found: install Node.js " +
			"(Debian/Ubuntu: apt-get install nodejs; `make test` does it when run as root)")
	}
	for _, name := range filesEnding(t, ".js") {
		if path.Dir(name) != "." {
			continue // vendored
		}
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(name); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(node, "--check", name).CombinedOutput()
			if err != nil {
				t.Errorf("node --check %s: %v\n%s", name, err, out)
			}
		})
	}
}

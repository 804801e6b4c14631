package cmd_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/cmd"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the settings")

// TestConfigurationDocument: docs/configuration.md lists every flag of
// every command, and no flag that no longer exists, as Document writes
// them.
func TestConfigurationDocument(t *testing.T) {
	path := filepath.Join("..", "docs", "configuration.md")
	want := cmd.Document()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	flags := func(doc string) map[string]bool {
		set := map[string]bool{}
		section := ""
		for _, line := range strings.Split(doc, "\n") {
			if s, ok := strings.CutPrefix(line, "## "); ok {
				section = s
			}
			if m := flagRow.FindStringSubmatch(line); m != nil {
				set[section+" --"+m[1]] = true
			}
		}
		return set
	}
	documented, defined := flags(got), flags(want)
	for f := range defined {
		if !documented[f] {
			t.Errorf("docs/configuration.md lacks %s", f)
		}
	}
	for f := range documented {
		if !defined[f] {
			t.Errorf("docs/configuration.md lists %s, which does not exist", f)
		}
	}
	if len(defined) < 40 {
		t.Errorf("only %d flags found: %v", len(defined), defined)
	}
	if got != want {
		t.Error("docs/configuration.md is not what the settings say: run go test ./cmd -run TestConfigurationDocument -update")
	}
}

var flagRow = regexp.MustCompile("^\\| `--([a-z0-9-]+)` \\|")

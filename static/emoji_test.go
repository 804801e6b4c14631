package static

import (
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEmojiData checks the emoji picker's data file (issue 39): its header
// names its source, version and licence, says how many emoji it holds,
// and every line after it is a group or an emoji with its name (the
// keycap "#️⃣" too, though it starts with the header's "#"), as
// static/tools.js reads them.
func TestEmojiData(t *testing.T) {
	raw, err := fs.ReadFile(Files, "emoji.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, want := range []string{"unicode-emoji-json 0.9.0", "MIT licence", "Unicode licence", "scripts/emojidata.mjs"} {
		if !strings.Contains(text, want) {
			t.Errorf("the header does not say %q", want)
		}
	}
	m := regexp.MustCompile(`data: (\d+) emoji`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("the header does not say how many emoji")
	}
	want, _ := strconv.Atoi(m[1])
	names := map[string]string{}
	groups := 0
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case groups == 0 && strings.HasPrefix(line, "# "): // the header (a keycap # is an emoji)
		case strings.HasPrefix(line, "="):
			groups++
		default:
			e, name, ok := strings.Cut(line, "\t")
			if !ok || e == "" || name == "" || !utf8.ValidString(e) || groups == 0 {
				t.Fatalf("line %d: %q is not an emoji and its name in a group", i+1, line)
			}
			if _, dup := names[e]; dup {
				t.Errorf("line %d: %s twice", i+1, e)
			}
			names[e] = name
		}
	}
	if len(names) != want || want < 1900 {
		t.Errorf("%d emoji, the header says %d (want the full set, over 1,900)", len(names), want)
	}
	for e, name := range map[string]string{"👍": "thumbs up", "🎉": "party popper", "👩‍💻": "woman technologist", "🇫🇷": "flag France"} {
		if names[e] != name {
			t.Errorf("%s is %q, want %q", e, names[e], name)
		}
	}
}

package chat

import (
	"testing"
	"unicode/utf8"
)

// TestFoldASCII: the ASCII shortcut folds as the whole chain does.
func TestFoldASCII(t *testing.T) {
	var all []byte
	for c := 0; c < utf8.RuneSelf; c++ {
		all = append(all, byte(c))
	}
	for _, s := range []string{string(all), "Deploy_Pipeline TestFoo HTTPServer", "MiXeD 42 x"} {
		if got, want := fold(s), foldUnicode(s); got != want {
			t.Errorf("fold(%q) = %q, the chain says %q", s, got, want)
		}
	}
}

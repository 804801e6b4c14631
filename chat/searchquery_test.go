package chat_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/killrchat/killrchat/chat"
)

// TestParseSearchBounds (issue 37, fault 5): a query reads at most
// MaxSearchTerms terms and prefixes and its first MaxSearchQuery
// characters, and says what it left out; bytes that are not text are
// malformed.
func TestParseSearchBounds(t *testing.T) {
	words := func(n int, format string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, format+" ", i)
		}
		return b.String()
	}
	for name, tc := range map[string]struct {
		q              string
		terms, ignored int
		cut            bool
	}{
		"Sixteen":     {q: words(16, "tapir%x"), terms: 16},
		"Seventeen":   {q: words(17, "k%d"), terms: 16, ignored: 1},
		"TenThousand": {q: words(10_000, "w%d"), terms: 16, cut: true, ignored: 1},
		"Prefixes":    {q: words(20, "pre%dx*"), terms: 16, ignored: 4},
		"Phrase":      {q: `"` + words(20, "p%d") + `"`, terms: 16, ignored: 4},
		"OneLongWord": {q: strings.Repeat("a", 600), cut: true},
	} {
		t.Run(name, func(t *testing.T) {
			q, err := chat.ParseSearch(tc.q)
			if tc.terms == 0 {
				if !errors.Is(err, chat.ErrInvalid) {
					t.Errorf("%+v, %v; want ErrInvalid", q, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := len(q.Terms) + len(q.Prefixes); n != tc.terms || q.Cut != tc.cut || q.Ignored < tc.ignored {
				t.Errorf("%d terms, cut %v, %d ignored; want %d, %v, at least %d", n, q.Cut, q.Ignored, tc.terms, tc.cut, tc.ignored)
			}
		})
	}
	if _, err := chat.ParseSearch("deploy \xff"); !errors.Is(err, chat.ErrMalformed) {
		t.Errorf("not UTF-8: %v, want ErrMalformed", err)
	}
	if got, cut := chat.CutSearch(strings.Repeat("é", 497) + " ab cd"); !cut || got != strings.Repeat("é", 497)+" ab" {
		t.Errorf("CutSearch = %q, %v", got, cut)
	}
}

// FuzzParseSearch: no query panics or escapes the bounds; one that is
// not UTF-8 is malformed; a parsed query parses the same again.
func FuzzParseSearch(f *testing.F) {
	for _, seed := range []string{"deploy runbook", `"half open`, "from:@ada in:#lobby depl*", strings.Repeat("w1 ", 300), "a\xffb", "in:@x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := chat.ParseSearch(raw)
		if !utf8.ValidString(raw) {
			if !errors.Is(err, chat.ErrMalformed) {
				t.Fatalf("not UTF-8, %v", err)
			}
			return
		}
		if err != nil {
			if !errors.Is(err, chat.ErrInvalid) {
				t.Fatalf("error %v is neither ErrInvalid nor ErrMalformed", err)
			}
			return
		}
		if len(q.Terms)+len(q.Prefixes) > chat.MaxSearchTerms || len(q.Phrases) > chat.MaxSearchTerms {
			t.Fatalf("%d terms, %d prefixes, %d phrases", len(q.Terms), len(q.Prefixes), len(q.Phrases))
		}
		if q.Cut != (utf8.RuneCountInString(strings.TrimSpace(raw)) > chat.MaxSearchQuery) {
			t.Fatalf("cut %v for %d characters", q.Cut, utf8.RuneCountInString(raw))
		}
		for _, term := range append(append([]string{}, q.Terms...), q.Prefixes...) {
			if term == "" || !utf8.ValidString(term) {
				t.Fatalf("term %q", term)
			}
		}
		text, _ := chat.CutSearch(raw)
		if again, err := chat.ParseSearch(text); err != nil || len(again.Terms) != len(q.Terms) || len(again.Prefixes) != len(q.Prefixes) {
			t.Fatalf("%q parses to %+v, %v; the whole to %+v", text, again, err, q)
		}
	})
}

package chat

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCleanText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		rule textRule
		want string // the cleaned text, when accepted
		bad  string // a part of the refusal, when refused
	}{
		// Line ends (item 1): nothing stored may hold a "\r".
		{"ContentCRLF", "a\r\nb", contentRule, "a\nb", ""},
		{"ContentLoneCR", "a\rb", contentRule, "a\nb", ""},
		{"ContentCRCR", "a\r\r\nb\n\rc", contentRule, "a\n\nb\n\nc", ""},
		{"ContentSSEInjection", "hi\r\revent: room-deleted\rdata: x\r\rtail", contentRule,
			"hi\n\nevent: room-deleted\ndata: x\n\ntail", ""},
		{"ContentTabKept", "a\tb", contentRule, "a\tb", ""},
		{"ContentTrimmed", "  \r\n hi \r\n ", contentRule, "hi", ""},
		{"BioCR", "line one\rline two", bioRule, "line one\nline two", ""},
		{"NameNewline", "Ada\nLovelace", nameRule, "", "one line"},
		{"NameLoneCR", "Ada\revent: x", nameRule, "", "one line"},
		{"NameCRLFTrimmed", "Ada\r\n", nameRule, "Ada", ""},
		{"NameLineSeparator", "Ada\u2028Lovelace", nameRule, "", "one line"},
		{"BannerNewline", "hello\nworld", bannerRule, "", "one line"},
		{"NameTab", "Ada\tLovelace", nameRule, "", "Control characters"},

		// Invisible-only text (item 11).
		{"ContentEmpty", "", contentRule, "", "Write something first."},
		{"ContentSpaces", " \t\r\n ", contentRule, "", "Write something first."},
		{"ContentZeroWidth", "\u200B\u200C\u200D\u2060\uFEFF", contentRule, "", "Write something first."},
		{"ContentSoftHyphen", "\u00AD", contentRule, "", "Write something first."},
		{"ContentHangulFiller", "\u3164\u115F", contentRule, "", "Write something first."},
		{"ContentBrailleBlank", "\u2800 \u2800", contentRule, "", "Write something first."},
		{"ContentVariationSelector", "\uFE0F", contentRule, "", "Write something first."},
		{"ContentNoBreakSpace", "\u00A0\u3000", contentRule, "", "Write something first."},
		{"NameZeroWidth", "\u200B", nameRule, "", "Required."},
		{"NameBidiOnlyIsRefused", "\u202E", nameRule, "", "direction"},
		{"BannerInvisible", "\u200B\u200B", bannerRule, "", "Only invisible"},
		{"BioInvisible", " \uFEFF\n", bioRule, "", "Only invisible"},
		{"BannerEmpty", "  ", bannerRule, "", ""},
		{"BioEmpty", "\r\n", bioRule, "", ""},
		{"EmojiWithJoinersKept", "\U0001F468\u200D\U0001F469\u200D\U0001F467 \u2764\uFE0F", contentRule,
			"\U0001F468\u200D\U0001F469\u200D\U0001F467 \u2764\uFE0F", ""},
		{"InvisibleInsideVisibleKept", "a\u200Bb", nameRule, "a\u200Bb", ""},

		// Control characters: C0, DEL and C1.
		{"ContentNUL", "a\x00b", contentRule, "", "U+0000"},
		{"ContentEscape", "a\x1b[31mred", contentRule, "", "U+001B"},
		{"ContentDEL", "a\x7f", contentRule, "", "U+007F"},
		{"ContentC1", "a\u0085b", contentRule, "", "U+0085"},
		{"ContentC1CSI", "a\u009bb", contentRule, "", "U+009B"},
		{"ContentVerticalTab", "a\vb", contentRule, "", "U+000B"},
		{"NameC1", "Ada\u0090", nameRule, "", "U+0090"},

		// Bidi overrides and isolates: refused in names and banners, kept
		// in content and bio; the marks LRM/RLM stay allowed everywhere.
		{"NameRLO", "Ada\u202Egnp.exe", nameRule, "", "U+202E"},
		{"NameLRE", "\u202AAda", nameRule, "", "U+202A"},
		{"NameRLI", "Ada\u2067x\u2069", nameRule, "", "U+2067"},
		{"NamePDI", "Ada\u2069", nameRule, "", "U+2069"},
		{"BannerRLO", "welcome \u202Eereh", bannerRule, "", "U+202E"},
		{"NameRLM", "\u05E2\u05D3\u05D4\u200F", nameRule, "\u05E2\u05D3\u05D4\u200F", ""},
		{"ContentRLO", "quote: \u202Eabc\u202C", contentRule, "quote: \u202Eabc\u202C", ""},

		// Lengths, in characters after cleaning.
		{"NameMax", strings.Repeat("é", 50), nameRule, strings.Repeat("é", 50), ""},
		{"NameTooLong", strings.Repeat("é", 51), nameRule, "", "At most 50"},
		{"BannerTooLong", strings.Repeat("b", 201), bannerRule, "", "At most 200"},
		{"ContentMax", strings.Repeat("x", MaxContent), contentRule, strings.Repeat("x", MaxContent), ""},
		{"ContentTooLong", strings.Repeat("x", MaxContent+1), contentRule, "", "At most 4000"},
		{"ContentCRLFCountsOnce", strings.Repeat("x\r\n", MaxContent/2-1) + "x", contentRule,
			strings.Repeat("x\n", MaxContent/2-1) + "x", ""},

		{"InvalidUTF8", "a\xffb", contentRule, "", "Not valid text."},
		{"InvalidUTF8Name", "\xc3", nameRule, "", "Not valid text."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problem := cleanText(tt.in, tt.rule)
			if tt.bad != "" {
				if problem == "" || !strings.Contains(problem, tt.bad) {
					t.Fatalf("cleanText(%q) = %q, problem %q; want a problem with %q", tt.in, got, problem, tt.bad)
				}
				return
			}
			if problem != "" || got != tt.want {
				t.Fatalf("cleanText(%q) = %q, problem %q; want %q", tt.in, got, problem, tt.want)
			}
		})
	}
}

func TestNameKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"alice", "alice"},
		{"Alice", "alice"},
		{"LOBBY", "lobby"},
		{"Mixed_Case.Name-1", "mixed_case.name-1"},
		// Not valid names: unchanged, so found nowhere.
		{"no spaces", "no spaces"},
		{"ab", "ab"},
		// The Kelvin sign lower-cases to "k" in Unicode; it must not turn
		// an invalid name into the key of a valid one.
		{"\u212Aiwi", "\u212Aiwi"},
		{"\u0130stanbul", "\u0130stanbul"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := NameKey(tt.in); got != tt.want {
				t.Errorf("NameKey(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestValidEmail(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"ada@example.com", true},
		{"ada.lovelace+chat@mail.example.org", true},
		{"o'brien@example.ie", true},
		{"alice?cc=mallory@evil.example", false},
		{"alice&bcc=mallory@evil.example", false},
		{"alice@evil.example?subject=hi", false},
		{"alice@example.com&body=x", false},
		{`"ali ce"@example.com`, false},
		{"\"a\tb\"@example.com", false},
		{"ali\u00A0ce@example.com", false},
		{"Alice <alice@example.com>", false},
		{"alice@example.com, bob@example.com", false},
		{"not an address", false},
		{"@example.com", false},
		{"alice", false},
		{"alice\r\nBcc: x@y.z@example.com", false},
		{strings.Repeat("a", 250) + "@e.io", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := validEmail(tt.in); got != tt.ok {
				t.Errorf("validEmail(%q) = %v, want %v", tt.in, got, tt.ok)
			}
		})
	}
}

func TestSignUpValidate(t *testing.T) {
	ok := func() SignUp {
		return SignUp{Login: "Alice", Password: "password1", PasswordConfirm: "password1",
			Firstname: "Ada", Lastname: "Lovelace", Email: "ada@example.com", Bio: "Hi\r\nthere"}
	}
	t.Run("OK", func(t *testing.T) {
		f := ok()
		if err := f.Validate(); err != nil {
			t.Fatal(err)
		}
		if f.Login != "Alice" || f.Bio != "Hi\nthere" {
			t.Errorf("cleaned to login %q bio %q; want the typed case and \\n", f.Login, f.Bio)
		}
	})
	for _, tt := range []struct {
		field string
		edit  func(*SignUp)
	}{
		{"login", func(f *SignUp) { f.Login = "\u200Balice" }},
		{"login", func(f *SignUp) { f.Login = "al\u202Eice" }},
		{"firstname", func(f *SignUp) { f.Firstname = "\u200B\u200D" }},
		{"firstname", func(f *SignUp) { f.Firstname = "Ada\r\rid: x" }},
		{"lastname", func(f *SignUp) { f.Lastname = "Love\u202Elace" }},
		{"lastname", func(f *SignUp) { f.Lastname = "Love\x00lace" }},
		{"email", func(f *SignUp) { f.Email = "alice?cc=mallory@evil.example" }},
		{"bio", func(f *SignUp) { f.Bio = "hi\x1b]0;title\x07" }},
	} {
		t.Run(tt.field, func(t *testing.T) {
			f := ok()
			tt.edit(&f)
			err := f.Validate()
			v, isV := err.(ValidationError)
			if !isV || v[tt.field] == "" || len(v) != 1 {
				t.Fatalf("Validate() = %v; want only a %s error", err, tt.field)
			}
		})
	}
}

func TestNewRoomValidate(t *testing.T) {
	f := NewRoom{Name: " Lobby ", Banner: "  Welcome\r\n"}
	if err := f.Validate(); err != nil || f.Name != "Lobby" || f.Banner != "Welcome" {
		t.Fatalf("Validate() = %v, name %q, banner %q", err, f.Name, f.Banner)
	}
	for _, bad := range []NewRoom{
		{Name: "\u200B\u200B\u200B"},
		{Name: "Lob\u202Eby"},
		{Name: "Lobby", Banner: "a\rb"},
		{Name: "Lobby", Banner: "x\u2066y"},
		{Name: "Lobby", Banner: "x\x7f"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+q) accepted", bad)
		}
	}
}

// FuzzCleanText checks the cleaner's promises for any input and every
// rule: an accepted text is valid UTF-8, holds no "\r" and no control
// character but "\n" and "\t" (and those only in multi-line fields), no
// line break or bidi control in one-line fields, something visible when
// required, no more than the rule's length, and it is accepted again
// unchanged (cleaning is idempotent). NameKey keeps valid names valid and
// never makes an invalid one valid.
func FuzzCleanText(f *testing.F) {
	for _, s := range []string{
		"hi\r\revent: room-deleted\rdata: x\r\rtail",
		"\r\rid: ffffffff-ffff-1fff-bfff-ffffffffffff\r\r",
		"Ada\u202Egnp.exe", "\u200B\u200D\uFEFF", " \t\n", "a\r\nb", "\u2028", "é\u0301",
		"\xff\xfe", "\x00", "\u0085", "Alice", "\u212Aiwi",
	} {
		f.Add(s)
	}
	rules := []textRule{nameRule, bannerRule, bioRule, contentRule}
	f.Fuzz(func(t *testing.T, s string) {
		for _, rule := range rules {
			got, problem := cleanText(s, rule)
			if problem != "" {
				if got != "" {
					t.Fatalf("refused %q (%s) but returned %q", s, problem, got)
				}
				continue
			}
			if !utf8.ValidString(got) {
				t.Fatalf("cleanText(%q) = %q: not valid UTF-8", s, got)
			}
			if n := utf8.RuneCountInString(got); n > rule.max {
				t.Fatalf("cleanText(%q) = %d characters, max %d", s, n, rule.max)
			}
			visible := false
			for _, r := range got {
				switch {
				case r == '\r':
					t.Fatalf("cleanText(%q) = %q holds \\r", s, got)
				case unicode.IsControl(r) && !(rule.multiline && (r == '\n' || r == '\t')):
					t.Fatalf("cleanText(%q) = %q holds control %U", s, got, r)
				case !rule.multiline && (isLineBreak(r) || isBidiControl(r)):
					t.Fatalf("one-line cleanText(%q) = %q holds %U", s, got, r)
				}
				visible = visible || !isInvisible(r)
			}
			if rule.required && !visible {
				t.Fatalf("required cleanText(%q) = %q shows nothing", s, got)
			}
			if !visible && got != "" {
				t.Fatalf("cleanText(%q) = %q: only invisible characters accepted", s, got)
			}
			if again, p := cleanText(got, rule); p != "" || again != got {
				t.Fatalf("not idempotent: %q → %q → %q (%s)", s, got, again, p)
			}
		}
		key := NameKey(s)
		if ValidName(key) != ValidName(s) {
			t.Fatalf("NameKey(%q) = %q changed validity", s, key)
		}
		if ValidName(s) && (key != strings.ToLower(s) || NameKey(key) != key) {
			t.Fatalf("NameKey(%q) = %q: not the stable lower-case form", s, key)
		}
	})
}

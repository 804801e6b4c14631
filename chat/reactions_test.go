package chat_test

import (
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/killrchat/killrchat/chat"
)

// TestCheckReactionLookAlikes (issue 37, fault 8): reactions that look
// alike are one; emoji sequences keep what makes them one picture.
func TestCheckReactionLookAlikes(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"Plain":          {"👍", "👍"},
		"ZeroWidthSpace": {"👍\u200b", "👍"},
		"WordJoiner":     {"\u2060👍", "👍"},
		"BOM":            {"\ufeff👍\ufeff", "👍"},
		"BidiOverride":   {"\u202e👍", "👍"},
		"SoftHyphen":     {"o\u00adk", "ok"},
		"HangulFiller":   {"👍\u3164", "👍"},
		"StrayJoiner":    {"👍\u200d", "👍"},
		"StraySelector":  {"a\ufe0f", "a"},
		"NFC":            {"cafe\u0301", "café"},
		"Technologist":   {"👩\u200d💻", "👩\u200d💻"},
		"RainbowFlag":    {"🏳\ufe0f\u200d🌈", "🏳\ufe0f\u200d🌈"},
		"SkinTone":       {"🧑🏽\u200d🚀", "🧑🏽\u200d🚀"},
		"Scotland":       {"🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F", "🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F"},
		"Keycap":         {"1\ufe0f\u20e3", "1\ufe0f\u20e3"},
		"Heart":          {"❤\ufe0f", "❤\ufe0f"},
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := chat.CheckReaction(tc.in); err != nil || got != tc.want {
				t.Errorf("CheckReaction(%+q) = %+q, %v; want %+q", tc.in, got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "\u200b", "\u2060\ufeff", "\u200d", "\u202e", "a\x01", "a\nb", "\xff", "\U000E0067"} {
		if got, err := chat.CheckReaction(bad); err == nil {
			t.Errorf("CheckReaction(%+q) = %+q, want refused", bad, got)
		}
	}
}

// FuzzCheckReaction: an accepted reaction is valid UTF-8 in NFC, at most
// MaxReactionText characters, with no control character and no format
// character but the joiners and tags of emoji, and is accepted again
// unchanged.
func FuzzCheckReaction(f *testing.F) {
	for _, seed := range []string{"👍", "👍\u200b", "\u2060👍", "👩\u200d💻", "cafe\u0301", "🏴\U000E0067\U000E007F", "a\x01", "\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := chat.CheckReaction(in)
		if err != nil {
			return
		}
		if !utf8.ValidString(out) || !norm.NFC.IsNormalString(out) || out == "" || utf8.RuneCountInString(out) > chat.MaxReactionText {
			t.Fatalf("%+q gives %+q", in, out)
		}
		for _, r := range out {
			if unicode.IsControl(r) || (unicode.Is(unicode.Cf, r) && r != '\u200d' && (r < 0xE0020 || r > 0xE007F)) {
				t.Fatalf("%+q gives %+q, with %U", in, out, r)
			}
		}
		if again, err := chat.CheckReaction(out); err != nil || again != out {
			t.Fatalf("%+q gives %+q, then %+q, %v", in, out, again, err)
		}
	})
}

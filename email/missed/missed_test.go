package missed

import (
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// TestDueOf: a message waits between one delay and two, and the messages
// of one window share a due time.
func TestDueOf(t *testing.T) {
	n := &Notifier{cfg: Config{Delay: 2 * time.Minute}}
	base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		posted time.Time
		due    time.Time
	}{
		{"WindowStart", base, base.Add(4 * time.Minute)},
		{"WindowMiddle", base.Add(time.Minute), base.Add(4 * time.Minute)},
		{"WindowEnd", base.Add(2*time.Minute - time.Millisecond), base.Add(4 * time.Minute)},
		{"NextWindow", base.Add(2 * time.Minute), base.Add(6 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due := n.DueOf(tc.posted)
			if !due.Equal(tc.due) {
				t.Fatalf("DueOf(%v) = %v, want %v", tc.posted, due, tc.due)
			}
			if wait := due.Sub(tc.posted); wait < n.cfg.Delay || wait > 2*n.cfg.Delay {
				t.Fatalf("waits %v", wait)
			}
		})
	}
}

// TestWants: the setting, the address's verification and the account's
// state decide; a level's message needs "everything".
func TestWants(t *testing.T) {
	verified := func(notify chat.EmailNotify) chat.User {
		return chat.User{Email: "bob@example.test", Mail: chat.EmailSettings{Verified: "bob@example.test", Notify: notify}}
	}
	unverified := verified("")
	unverified.Mail.Verified = "old@example.test"
	closed := verified("")
	closed.Status = chat.AccountDeactivated
	for _, tc := range []struct {
		name   string
		u      chat.User
		direct bool
		want   bool
	}{
		{"DefaultMention", verified(""), true, true},
		{"DefaultLevelOnly", verified(""), false, false},
		{"EverythingLevel", verified(chat.EmailEverything), false, true},
		{"Off", verified(chat.EmailOff), true, false},
		{"Unverified", unverified, true, false},
		{"Deactivated", closed, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wants(tc.u, tc.direct); got != tc.want {
				t.Fatalf("wants = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOneLine: a subject made of names and a conversation's name holds
// no line break, whatever they hold (the sender refuses one anyway), and
// stays short.
func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"CRLF", "Ada\r\nBcc: eve@example.test wrote in #x", "Ada Bcc: eve@example.test wrote in #x"},
		{"LF", "Ada\nBcc: eve@example.test", "Ada Bcc: eve@example.test"},
		{"CR", "Ada\rBcc: eve@example.test", "Ada Bcc: eve@example.test"},
		{"Spaces", "  Ada \t wrote  ", "Ada wrote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := oneLine(tc.in); got != tc.want {
				t.Fatalf("oneLine(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	long := oneLine(strings.Repeat("é", 400))
	if n := len([]rune(long)); n != 150 || !strings.HasSuffix(long, "…") {
		t.Fatalf("a long subject: %d runes", n)
	}
}

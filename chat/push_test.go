package chat_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/killrchat/killrchat/chat"
)

const (
	testP256dh = "BDrOvzCrY6khADWNT7Fr5980_7BuY7Go_4JBegGs0h75Q_81CrnFCFYbx9nKTp_4x27zSS6eEMIbH535yuhqAxI"
	testAuth   = "ymKQrjf6PLW9QtPQlkfZ6A"
)

func TestParsePushSubscription(t *testing.T) {
	for name, tc := range map[string]struct {
		endpoint, p256dh, auth string
		malformed, bad         bool
	}{
		"OK":             {endpoint: " https://fcm.googleapis.com/fcm/send/abc ", p256dh: testP256dh, auth: testAuth},
		"NotUTF8":        {endpoint: "https://push.example/\xff", p256dh: testP256dh, auth: testAuth, malformed: true},
		"KeyNotUTF8":     {endpoint: "https://push.example/x", p256dh: "\xc3", auth: testAuth, malformed: true},
		"TooLong":        {endpoint: "https://push.example/" + strings.Repeat("a", 1000), p256dh: testP256dh, auth: testAuth, bad: true},
		"NotURL":         {endpoint: "::", p256dh: testP256dh, auth: testAuth, bad: true},
		"Relative":       {endpoint: "/push/x", p256dh: testP256dh, auth: testAuth, bad: true},
		"UserInfo":       {endpoint: "https://u:p@push.example/x", p256dh: testP256dh, auth: testAuth, bad: true},
		"Space":          {endpoint: "https://push.example/a b", p256dh: testP256dh, auth: testAuth, bad: true},
		"NUL":            {endpoint: "https://push.example/a\x00", p256dh: testP256dh, auth: testAuth, bad: true},
		"FTP":            {endpoint: "ftp://push.example/x", p256dh: testP256dh, auth: testAuth, bad: true},
		"ShortKey":       {endpoint: "https://push.example/x", p256dh: "AAAA", auth: testAuth, bad: true},
		"LongKey":        {endpoint: "https://push.example/x", p256dh: strings.Repeat("A", 5000), auth: testAuth, bad: true},
		"ShortAuth":      {endpoint: "https://push.example/x", p256dh: testP256dh, auth: "AAAA", bad: true},
		"NoAuth":         {endpoint: "https://push.example/x", p256dh: testP256dh, bad: true},
		"PaddedBase64OK": {endpoint: "https://push.example/x", p256dh: testP256dh + "=", auth: testAuth + "=="},
	} {
		t.Run(name, func(t *testing.T) {
			sub, err := chat.ParsePushSubscription(tc.endpoint, tc.p256dh, tc.auth)
			switch {
			case tc.malformed && !errors.Is(err, chat.ErrMalformed):
				t.Errorf("err %v, want ErrMalformed", err)
			case tc.bad && (err == nil || errors.Is(err, chat.ErrMalformed)):
				t.Errorf("err %v, want a sentence", err)
			case !tc.bad && !tc.malformed && (err != nil || sub.Endpoint != strings.TrimSpace(tc.endpoint)):
				t.Errorf("%+v, %v", sub, err)
			}
		})
	}
}

// FuzzParsePushSubscription: any input is refused or gives a subscription
// of valid, bounded text, with no space or control character in its
// endpoint, that parses again to itself.
func FuzzParsePushSubscription(f *testing.F) {
	f.Add("https://fcm.googleapis.com/fcm/send/abc", testP256dh, testAuth)
	f.Add("https://[::1]:443/x", testP256dh, testAuth)
	f.Add("http://127.0.0.1:9/\xff", testP256dh+"=", testAuth)
	f.Fuzz(func(t *testing.T, endpoint, p256dh, auth string) {
		sub, err := chat.ParsePushSubscription(endpoint, p256dh, auth)
		if err != nil {
			return
		}
		if !utf8.ValidString(sub.Endpoint) || len(sub.Endpoint) > chat.MaxPushEndpoint || len(sub.P256dh) > 128 ||
			strings.ContainsAny(sub.Endpoint, " \t\r\n\x00") {
			t.Fatalf("accepted %+v", sub)
		}
		again, err := chat.ParsePushSubscription(sub.Endpoint, sub.P256dh, sub.Auth)
		if err != nil || again != sub {
			t.Fatalf("%+v parses again to %+v, %v", sub, again, err)
		}
	})
}

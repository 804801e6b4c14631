package email_test

import (
	"bytes"
	"context"
	"errors"
	"mime"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/email"
	"github.com/killrchat/killrchat/email/smtptest"
)

func send(t *testing.T, cfg email.Config, m email.Mail) (string, error) {
	t.Helper()
	s, err := email.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Send(ctx, m)
}

func TestSendOverTLS(t *testing.T) {
	for _, implicit := range []bool{false, true} {
		name := "STARTTLS"
		if implicit {
			name = "Implicit"
		}
		t.Run(name, func(t *testing.T) {
			srv := smtptest.Start(t, implicit)
			answer, err := send(t, srv.Config(), email.Mail{To: "bob@example.test", Subject: "Héllo Bob",
				Text: "plain words", HTML: "<p>html words</p>", MessageID: "a.1@killrchat.test",
				InReplyTo: "thread@killrchat.test", References: "thread@killrchat.test",
				Unsubscribe: "https://chat.example.test/email/unsubscribe/x"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(answer, "queued as Q1") {
				t.Errorf("answer %q, want the server's queue id", answer)
			}
			got, ok := srv.Next(5 * time.Second)
			if !ok {
				t.Fatal("no mail arrived")
			}
			msg, err := mail.ReadMessage(bytes.NewReader(got.Data))
			if err != nil {
				t.Fatal(err)
			}
			h := msg.Header
			dec := new(mime.WordDecoder)
			if s, _ := dec.DecodeHeader(h.Get("Subject")); s != "Héllo Bob" {
				t.Errorf("Subject %q", s)
			}
			for k, want := range map[string]string{"Message-Id": "<a.1@killrchat.test>", "In-Reply-To": "<thread@killrchat.test>",
				"References": "<thread@killrchat.test>", "List-Unsubscribe": "<https://chat.example.test/email/unsubscribe/x>",
				"List-Unsubscribe-Post": "List-Unsubscribe=One-Click"} {
				if h.Get(k) != want {
					t.Errorf("%s = %q, want %q", k, h.Get(k), want)
				}
			}
			if got.To[0] != "bob@example.test" || got.From != "chat@killrchat.test" {
				t.Errorf("envelope %q -> %q", got.From, got.To)
			}
		})
	}
}

func TestWrongPasswordRefused(t *testing.T) {
	srv := smtptest.Start(t, false)
	cfg := srv.Config()
	cfg.Password = "wrong"
	if _, err := send(t, cfg, email.Mail{To: "bob@example.test", Subject: "x", Text: "x"}); err == nil {
		t.Fatal("sent with a wrong password")
	}
	if srv.Accepted() != 0 {
		t.Fatal("a mail was accepted")
	}
}

func TestUntrustedCertificateRefused(t *testing.T) {
	srv := smtptest.Start(t, false)
	cfg := srv.Config()
	cfg.RootCAs = nil // the system's authorities do not know the test's
	if _, err := send(t, cfg, email.Mail{To: "bob@example.test", Subject: "x", Text: "x"}); err == nil {
		t.Fatal("sent to a server with an unknown certificate")
	}
}

func TestHeaderInjectionRefused(t *testing.T) {
	srv := smtptest.Start(t, false)
	for name, m := range map[string]email.Mail{
		"Subject":      {To: "bob@example.test", Subject: "hi\r\nBcc: eve@example.test", Text: "x"},
		"SubjectLF":    {To: "bob@example.test", Subject: "hi\nBcc: eve@example.test", Text: "x"},
		"To":           {To: "bob@example.test\r\nBcc: eve@example.test", Subject: "x", Text: "x"},
		"ToName":       {To: "\"Bob\r\nBcc: eve@example.test\" <bob@example.test>", Subject: "x", Text: "x"},
		"References":   {To: "bob@example.test", Subject: "x", Text: "x", References: "a@b\r\nBcc: eve@example.test"},
		"Unsubscribe":  {To: "bob@example.test", Subject: "x", Text: "x", Unsubscribe: "https://x\nBcc: eve@example.test"},
		"NotAnAddress": {To: "bob at example", Subject: "x", Text: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := send(t, srv.Config(), m); err == nil {
				t.Fatal("sent")
			}
		})
	}
	if srv.Accepted() != 0 {
		t.Fatalf("%d mails accepted", srv.Accepted())
	}
}

func TestRefusedRecipientIsPermanent(t *testing.T) {
	srv := smtptest.Start(t, false)
	srv.Refuse("gone@example.test")
	_, err := send(t, srv.Config(), email.Mail{To: "gone@example.test", Subject: "x", Text: "x"})
	if !email.Permanent(err) || !email.Answered(err) || email.ServerDown(err) {
		t.Fatalf("err %v, want a permanent refusal, the server's answer", err)
	}
	srv.Stop()
	_, err = send(t, srv.Config(), email.Mail{To: "bob@example.test", Subject: "x", Text: "x"})
	var e *email.Error
	if err == nil || email.Permanent(err) || !errors.As(err, &e) || !email.ServerDown(err) || email.Answered(err) {
		t.Fatalf("err %v, want a temporary failure of the server (refused)", err)
	}
	// A port that takes the connection and answers nothing: the
	// sender's timeout ends the try, a failure of the server.
	if err := srv.Hang(); err != nil {
		t.Fatal(err)
	}
	cfg := srv.Config()
	cfg.Timeout = 300 * time.Millisecond
	_, err = send(t, cfg, email.Mail{To: "bob@example.test", Subject: "x", Text: "x"})
	if err == nil || !email.ServerDown(err) || srv.HungConnections() != 1 {
		t.Fatalf("err %v after %d connections, want a temporary failure of the server (no answer)", err, srv.HungConnections())
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := send(t, srv.Config(), email.Mail{To: "bob@example.test", Subject: "x", Text: "x"}); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

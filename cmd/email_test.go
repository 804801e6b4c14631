package cmd_test

import (
	"bytes"
	"context"
	"net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/cmd"
	"github.com/killrchat/killrchat/email/smtptest"
)

// TestAdminTestEmail: `killrchat admin test-email <address>` sends one
// mail through the configured server (STARTTLS, AUTH, its authority read
// from --smtp-ca, the password from a file) and prints its answer.
func TestAdminTestEmail(t *testing.T) {
	srv := smtptest.Start(t, false)
	dir := t.TempDir()
	ca, pass := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "pass")
	if err := os.WriteFile(ca, srv.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pass, []byte(smtptest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"admin", "test-email", "ops@example.test", "--smtp-host", "127.0.0.1", "--smtp-port", strconv.Itoa(srv.Port),
		"--smtp-user", smtptest.User, "--smtp-password-file", pass, "--smtp-ca", ca, "--smtp-from", "KillrChat <chat@example.test>"}
	var stdout, stderr bytes.Buffer
	if code := cmd.Execute(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "the server answered: ") || !strings.Contains(stdout.String(), "queued as Q1") {
		t.Errorf("stdout %q, want the server's answer", stdout.String())
	}
	got, ok := srv.Next(5 * time.Second)
	if !ok {
		t.Fatal("no mail arrived")
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got.Data))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get("To") != "<ops@example.test>" || msg.Header.Get("Subject") != "KillrChat test email" {
		t.Errorf("headers %v", msg.Header)
	}

	// Without the authority the server's certificate is refused: exit 1,
	// one line saying why.
	stdout.Reset()
	stderr.Reset()
	noCA := append([]string{}, args[:len(args)-4]...)
	noCA = append(noCA, "--smtp-from", "chat@example.test")
	if code := cmd.Execute(context.Background(), noCA, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "not sent through") {
		t.Errorf("without the CA: exit %d, stderr %q", code, stderr.String())
	}
}

// TestEmailSettingsRefused: email settings that cannot work stop the
// program with one sentence.
func TestEmailSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"admin", "test-email", "ops@example.test"}, "needs an SMTP server"},
		{[]string{"admin", "test-email", "not an address", "--smtp-host", "mail.test", "--smtp-from", "a@b.test"}, "needs an address"},
		{[]string{"--smtp-host", "mail.test"}, "needs --smtp-from"},
		{[]string{"--smtp-host", "mail.test", "--smtp-from", "a@b.test"}, "needs --site-url"},
		{[]string{"--smtp-host", "mail.test", "--smtp-from", "a@b.test\r\nBcc: x@y.test", "--site-url", "https://c.test"}, "must be an address"},
		{[]string{"--smtp-tls", "maybe"}, "--smtp-tls must be starttls, implicit or none"},
		{[]string{"--site-url", "https://c.test/chat"}, "--site-url must be"},
		{[]string{"--email-delay", "0s"}, "--email-delay must be"},
	} {
		_, err := cmd.Parse(tc.args, env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	c, err := cmd.Parse(nil, env(map[string]string{"SMTP_HOST": "mail.test", "SMTP_FROM": "a@b.test", "SITE_URL": "https://c.test/"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Email.SMTP.Port != 587 || c.Email.SMTP.TLS != "starttls" || c.Email.SiteURL != "https://c.test" || c.Email.Delay != 2*time.Minute {
		t.Errorf("defaults %+v", c.Email)
	}
}

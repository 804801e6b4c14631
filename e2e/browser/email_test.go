package browser

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/killrchat/killrchat/email/smtptest"
)

// TestEmailSettings: on an instance that sends mail, the notifications
// page shows the address's verification state and the email setting;
// the verification link (followed from the mail the SMTP server got)
// verifies it; the setting is saved; the pages pass the accessibility
// check, as does "Forgot your password?".
func TestEmailSettings(t *testing.T) {
	b := begin(t)
	srv := smtptest.Start(t, false)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, srv.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	m, url, err := startMain(appLog(), "--smtp-host", "127.0.0.1", "--smtp-port", strconv.Itoa(srv.Port),
		"--smtp-user", smtptest.User, "--smtp-password", smtptest.Password, "--smtp-ca", ca,
		"--smtp-from", "KillrChat <chat@example.test>", "--site-url", "http://site.test", "--email-delay", "2s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })

	ada := newPerson("Ada", "Lovelace")
	address := ada.login + "@example.test"
	p := b.newTab("ada")
	p.base = url
	p.open("/signup")
	p.fill("login", ada.login, "password", ada.password, "password_confirm", ada.password,
		"firstname", ada.first, "lastname", ada.last, "email", address)
	p.click("#signup button[type=submit]")
	p.waitJS("the home page after sign-up", atPath("/?notice=welcome"))

	p.open("/profile/notifications")
	p.waitJS("the email section", hasText("#email-state", "not verified"))
	if p.count(`input#email_notify_mentions:checked`) != 1 {
		t.Error("the default setting, mentions and DMs, is not checked")
	}
	p.checkAccessibility("the notifications page with an unverified address")

	mail, ok := srv.Next(time.Minute)
	if !ok {
		t.Fatal("no verification mail")
	}
	link := regexp.MustCompile(`http://site\.test(/email/verify/[A-Za-z0-9_-]+)`).FindSubmatch(mail.Data)
	if link == nil {
		t.Fatalf("no verification link in %s", mail.Data)
	}
	p.open(string(link[1]))
	p.checkAccessibility("the verification page")
	p.click("#verify-page button[type=submit]")
	p.waitJS("verified", `document.querySelector("#verified-page") !== null`)

	p.open("/profile/notifications")
	p.waitJS("the verified state", hasText("#email-state", "is verified"))
	p.click("#email_notify_everything")
	p.click(".email-settings button[type=submit]")
	p.waitJS("the saved setting", hasText("#flash .notice", "Your email settings are saved.")+
		` && document.querySelector("input#email_notify_everything:checked") !== null`)
	p.checkAccessibility("the notifications page with a verified address")

	q := b.newTab("visitor")
	q.base = url
	q.open("/login")
	q.click("#forgot-link")
	q.waitJS("the forgot-password page", atPath("/forgot"))
	q.checkAccessibility("the forgot-password page")
	q.fill("who", ada.login)
	q.click("#forgot-page button[type=submit]")
	q.waitJS("the answer", `document.querySelector("#forgot-sent") !== null`)
	q.checkAccessibility("the forgot-password answer")
}

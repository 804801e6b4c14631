package handlers_test

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email/smtptest"
	"github.com/killrchat/killrchat/handlers"
)

// The tests of email do not run in parallel: every instance with email
// on sends whatever pending emails the keyspace holds, so two tests'
// instances would send each other's.

// siteURL is the site address the tests' mails carry; links are followed
// on the test's server by their path.
const siteURL = "http://site.test"

// withEmail sends the app's mail through srv, missed messages after delay.
func withEmail(srv *smtptest.Server, delay time.Duration) appOption {
	return func(c *handlers.Config) {
		c.Email, c.SiteURL, c.EmailDelay = srv.Config(), siteURL, delay
		c.EmailLease, c.EmailMaxBackoff = 5*time.Second, 2*time.Second
	}
}

// parsed is a mail as it arrived, parsed: its headers and its text and
// HTML bodies.
type parsed struct {
	to         string
	header     mail.Header
	text, html string
}

func parseMail(t testing.TB, r smtptest.Received) parsed {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(r.Data))
	if err != nil {
		t.Fatalf("not a mail: %v\n%s", err, r.Data)
	}
	if len(r.To) != 1 {
		t.Fatalf("recipients %q, want one", r.To)
	}
	p := parsed{to: r.To[0], header: msg.Header}
	if len(msg.Header["To"]) != 1 || msg.Header.Get("Bcc") != "" || msg.Header.Get("Cc") != "" {
		t.Fatalf("headers To %q, Cc %q, Bcc %q", msg.Header["To"], msg.Header.Get("Cc"), msg.Header.Get("Bcc"))
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		b, _ := io.ReadAll(msg.Body)
		if msg.Header.Get("Content-Transfer-Encoding") == "quoted-printable" {
			b, _ = io.ReadAll(quotedprintable.NewReader(bytes.NewReader(b)))
		}
		p.text = string(b)
		return p
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("MIME part: %v", err)
		}
		b, _ := io.ReadAll(part)
		switch ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type")); ct {
		case "text/plain":
			p.text = string(b)
		case "text/html":
			p.html = string(b)
		}
	}
	return p
}

// mailTo waits for the next mail, which must be to addr.
func mailTo(t testing.TB, srv *smtptest.Server, addr string) parsed {
	t.Helper()
	r, ok := srv.Next(60 * time.Second)
	if !ok {
		t.Fatalf("no mail to %s within a minute", addr)
	}
	p := parseMail(t, r)
	if p.to != addr {
		t.Fatalf("a mail to %s (%q), want one to %s", p.to, p.header.Get("Subject"), addr)
	}
	return p
}

var linkPath = regexp.MustCompile(regexp.QuoteMeta(siteURL) + `(/[^\s"<>]+)`)

// links are the paths of the site's links in text.
func links(text string) []string {
	var out []string
	for _, m := range linkPath.FindAllStringSubmatch(text, -1) {
		out = append(out, strings.ReplaceAll(m[1], "&amp;", "&"))
	}
	return out
}

// linkTo is the first link of p's text whose path starts with prefix.
func linkTo(t testing.TB, p parsed, prefix string) string {
	t.Helper()
	for _, l := range links(p.text) {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no link to %s in %q", prefix, p.text)
	return ""
}

// verifiedUser signs up login with address and follows the link the
// verification mail brings.
func (a *app) verifiedUser(t testing.TB, srv *smtptest.Server, login, address string) *client {
	t.Helper()
	c := a.client(t)
	f := signupForm(login, "password1")
	f.Set("email", address)
	if p := c.post("/signup", f); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign up %s: %d %s", login, p.StatusCode, text(p, "main"))
	}
	c.login = chat.NameKey(login)
	link := linkTo(t, mailTo(t, srv, address), "/email/verify/")
	if p := c.get(link); p.StatusCode != http.StatusOK || p.doc.Find("#verify-page form button").Length() != 1 {
		t.Fatalf("GET %s: %d", link, p.StatusCode)
	}
	if p := c.post(link, nil); p.StatusCode != http.StatusOK || p.doc.Find("#verified-page").Length() != 1 {
		t.Fatalf("POST %s: %d %s", link, p.StatusCode, text(p, "main"))
	}
	return c
}

// TestEmailVerification: an address given at sign-up, or changed on the
// profile, gets a single-use link; the notifications page shows whether
// it is verified.
func TestEmailVerification(t *testing.T) {
	srv := smtptest.Start(t, false)
	a := newApp(t, nil, nil, withEmail(srv, time.Second))
	bob := a.client(t)
	login := unique("bob")
	f := signupForm(login, "password1")
	f.Set("email", login+"@example.test")
	if p := bob.post("/signup", f); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign up: %d", p.StatusCode)
	}
	m := mailTo(t, srv, login+"@example.test")
	link := linkTo(t, m, "/email/verify/")
	state := func() string { return text(bob.get("/profile/notifications"), "#email-state") }
	if s := state(); !strings.Contains(s, "not verified") {
		t.Fatalf("before: %q", s)
	}
	// Fetching the link (as a mail scanner does) verifies nothing.
	bob.get(link)
	if s := state(); !strings.Contains(s, "not verified") {
		t.Fatalf("after a GET: %q", s)
	}
	if p := bob.post(link, nil); p.StatusCode != http.StatusOK {
		t.Fatalf("verify: %d", p.StatusCode)
	}
	if s := state(); !strings.Contains(s, "is verified") {
		t.Fatalf("after: %q", s)
	}
	if p := bob.post(link, nil); p.StatusCode == http.StatusOK {
		t.Fatal("a verification link worked twice")
	}
	// A new address: unverified until its own link is used; the old
	// link is spent.
	if p := bob.post("/profile", url.Values{"email": {"new-" + login + "@example.test"}, "bio": {""}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("profile: %d", p.StatusCode)
	}
	m = mailTo(t, srv, "new-"+login+"@example.test")
	if s := state(); !strings.Contains(s, "not verified") {
		t.Fatalf("after a change: %q", s)
	}
	if p := bob.post(linkTo(t, m, "/email/verify/"), nil); p.StatusCode != http.StatusOK {
		t.Fatalf("verify the new address: %d", p.StatusCode)
	}
	if s := state(); !strings.Contains(s, "is verified") {
		t.Fatalf("after verifying the new one: %q", s)
	}
}

// TestEmailOffPagesSaySo: without an SMTP server the pages say that the
// site sends no mail.
func TestEmailOffPagesSaySo(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	bob := a.signedUp(t, unique("bob"))
	if bob.get("/profile/notifications").doc.Find("#email-off").Length() != 1 {
		t.Error("the notifications page does not say email is off")
	}
	if a.client(t).get("/forgot").doc.Find("#forgot-off").Length() != 1 {
		t.Error("the forgot-password page does not say email is off")
	}
}

// TestForgotPassword: the same answer for a known and an unknown login
// or address; a verified address gets a reset link that works once; an
// unverified one gets nothing; requests are limited per address.
func TestForgotPassword(t *testing.T) {
	srv := smtptest.Start(t, false)
	a := newApp(t, nil, nil, withEmail(srv, time.Second))
	login := unique("bob")
	addr := login + "@example.test"
	a.verifiedUser(t, srv, login, addr)

	anon := a.client(t)
	if anon.get("/login").doc.Find(`a#forgot-link[href="/forgot"]`).Length() != 1 {
		t.Fatal("no Forgot your password? link on the login page")
	}
	answer := func(who string) (int, string) {
		p := anon.post("/forgot", url.Values{"who": {who}})
		return p.StatusCode, text(p, "main")
	}
	known, knownText := answer(login)
	unknown, unknownText := answer(unique("nobody"))
	unknownAddr, unknownAddrText := answer(unique("nobody") + "@example.test")
	if known != http.StatusOK || unknown != known || unknownAddr != known || knownText != unknownText || knownText != unknownAddrText {
		t.Fatalf("answers differ: %d %q / %d %q / %d %q", known, knownText, unknown, unknownText, unknownAddr, unknownAddrText)
	}
	m := mailTo(t, srv, addr)
	link := linkTo(t, m, "/reset/")
	if p := anon.get(link); p.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", link, p.StatusCode)
	}
	if p := anon.post(link, url.Values{"password": {"new-password1"}, "password_confirm": {"new-password1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("reset: %d %s", p.StatusCode, text(p, "main"))
	}
	if p := anon.post(link, url.Values{"password": {"new-password2"}, "password_confirm": {"new-password2"}}); p.StatusCode == http.StatusSeeOther {
		t.Fatal("the link worked twice")
	}
	if p := a.client(t).post("/login", url.Values{"login": {login}, "password": {"new-password1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("log in with the new password: %d", p.StatusCode)
	}

	// By address, any case: a link again.
	if code, _ := answer(strings.ToUpper(addr)); code != http.StatusOK {
		t.Fatalf("by address: %d", code)
	}
	linkTo(t, mailTo(t, srv, addr), "/reset/")

	// Header injection in the field: refused, nothing sent.
	if code, _ := answer(login + "\r\nBcc: eve@example.test"); code != http.StatusUnprocessableEntity {
		t.Fatalf("a line break: %d", code)
	}
	// Three a while per login or address: the address was asked for
	// once, twice more, then it is limited.
	for range 2 {
		answer(addr)
	}
	if code, _ := answer(addr); code != http.StatusTooManyRequests {
		t.Fatalf("the fourth request for one address: %d, want 429", code)
	}
	for range 2 {
		mailTo(t, srv, addr)
	}
	if r, ok := srv.Next(2 * time.Second); ok {
		t.Fatalf("an unexpected mail: %s", r.Data)
	}
}

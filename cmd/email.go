// This file owns the email settings, which serve and admin share: the
// SMTP server (host, port, TLS mode, login, From), the site's address
// for the links mails carry, and the missed-message emails' delay.

package cmd

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/killrchat/killrchat/email"
)

// EmailConfig is the email settings.
type EmailConfig struct {
	SMTP                 email.Config
	PasswordFile, CAFile string
	// SiteURL is the site's address as people reach it (https://chat.example.com),
	// the start of every link a mail carries.
	SiteURL string
	// Delay is how long a missed message waits before its email.
	Delay time.Duration
	// HideText leaves message text out of every email.
	HideText bool
}

func (c *Config) emailSettings() []*setting {
	m := &c.Email
	return []*setting{
		{name: "smtp-host", env: "SMTP_HOST", usage: "the SMTP server that sends the site's mail (missed messages, address checks, forgotten passwords); empty: no email, and the pages say so",
			set: text(&m.SMTP.Host)},
		{name: "smtp-port", env: "SMTP_PORT", def: "587", usage: "its port: 587 for STARTTLS, 465 for implicit TLS",
			accepts: "a port, 1 to 65535", set: func(v string) bool { return integer(&m.SMTP.Port, 1)(v) && m.SMTP.Port < 1<<16 }},
		{name: "smtp-tls", env: "SMTP_TLS", def: email.STARTTLS,
			usage:   "starttls (required: a server that does not offer it is refused), implicit (TLS from the start, port 465), or none (only for a relay on this machine)",
			accepts: "starttls, implicit or none", set: func(v string) bool {
				m.SMTP.TLS = v
				return v == email.STARTTLS || v == email.Implicit || v == email.Plain
			}},
		{name: "smtp-ca", env: "SMTP_CA", usage: "a PEM file of the authorities that sign the SMTP server's certificate; empty: the system's",
			set: text(&m.CAFile)},
		{name: "smtp-user", env: "SMTP_USER", usage: "the user to log in as (AUTH); empty: no login", set: text(&m.SMTP.User)},
		{name: "smtp-password", env: "SMTP_PASSWORD", usage: "that user's password; prefer the environment variable or --smtp-password-file",
			set: text(&m.SMTP.Password)},
		{name: "smtp-password-file", env: "SMTP_PASSWORD_FILE", usage: "a file holding that password (one line; a final newline is ignored), in place of --smtp-password",
			set: text(&m.PasswordFile)},
		{name: "smtp-from", env: "SMTP_FROM", usage: "the From address of the site's mail, such as KillrChat <chat@example.com>",
			set: text(&m.SMTP.From)},
		{name: "site-url", env: "SITE_URL", usage: "the site's address as people reach it, such as https://chat.example.com: the start of the links in mails; needed with --smtp-host for serve",
			accepts: "empty, or an http or https URL with a host and no path", set: func(v string) bool {
				m.SiteURL = strings.TrimSuffix(v, "/")
				if v == "" {
					return true
				}
				u, err := url.Parse(m.SiteURL)
				return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.Path == "" && u.RawQuery == ""
			}},
		{name: "email-delay", env: "EMAIL_DELAY", def: "2m",
			usage:   "how long a missed message waits before it is mailed: one read, or a live connection, meanwhile cancels its email",
			accepts: "a duration above 0, such as 2m", set: duration(&m.Delay, positiveDuration)},
		{name: "email-hide-text", env: "EMAIL_HIDE_TEXT", def: "false", boolean: true,
			usage:   "leave message text out of every missed-message email (each person may also choose so)",
			accepts: "true or false", set: boolean(&m.HideText)},
	}
}

// checkEmail reads the password file and the authorities, and checks the
// settings together.
func (c *Config) checkEmail(from map[string]source) error {
	m := &c.Email
	if m.PasswordFile != "" {
		name := from["smtp-password-file"].name("smtp-password-file")
		if m.SMTP.Password != "" {
			return fmt.Errorf("%s and %s both give the SMTP password: give one", from["smtp-password"].name("smtp-password"), name)
		}
		b, err := os.ReadFile(m.PasswordFile)
		if err != nil {
			return fmt.Errorf("%s names a file that cannot be read (%v)", name, err)
		}
		m.SMTP.Password = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	if m.CAFile != "" {
		b, err := os.ReadFile(m.CAFile)
		if err != nil {
			return fmt.Errorf("%s names a file that cannot be read (%v)", from["smtp-ca"].name("smtp-ca"), err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return fmt.Errorf("%s names a file with no PEM certificate", from["smtp-ca"].name("smtp-ca"))
		}
		m.SMTP.RootCAs = pool
	}
	if !m.SMTP.On() {
		return nil
	}
	if m.SMTP.From == "" {
		return errors.New("--smtp-host needs --smtp-from, the address the site's mail comes from")
	}
	if _, err := email.ParseAddress(m.SMTP.From); err != nil {
		return fmt.Errorf("%s must be an address such as KillrChat <chat@example.com>, not %q", from["smtp-from"].name("smtp-from"), m.SMTP.From)
	}
	if m.SMTP.User != "" && m.SMTP.Password == "" {
		return errors.New("--smtp-user is given without a password (--smtp-password, SMTP_PASSWORD or --smtp-password-file)")
	}
	if c.Command == Serve && m.SiteURL == "" {
		return errors.New("--smtp-host needs --site-url, the site's address that the links in mails start with")
	}
	return nil
}

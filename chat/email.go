// This file owns email as the domain sees it: a person's missed-message
// setting, whether their address is verified, and an email waiting.

package chat

import "time"

// EmailNotify is what a person's missed-message emails cover.
type EmailNotify string

// The settings: none; mentions of them and direct messages (the
// default); or also every message of conversations at LevelEverything.
const (
	EmailOff        EmailNotify = "off"
	EmailMentions   EmailNotify = "mentions"
	EmailEverything EmailNotify = "everything"
)

// ParseEmailNotify reads the setting from a form, or returns a
// ValidationError.
func ParseEmailNotify(s string) (EmailNotify, error) {
	switch EmailNotify(s) {
	case EmailOff, EmailMentions, EmailEverything:
		return EmailNotify(s), nil
	}
	return "", ValidationError{"email_notify": "Choose off, mentions and direct messages, or everything."}
}

// The lives of the links mail carries.
const (
	// VerifyLinkTTL is how long an address's verification link works.
	VerifyLinkTTL = 24 * time.Hour
	// MailedResetTTL is how long a reset link sent by mail works.
	MailedResetTTL = time.Hour
)

// EmailSettings are a person's email settings as stored.
type EmailSettings struct {
	// Verified is the address the person verified ("" for none): their
	// Email is verified while it is equal to it.
	Verified string
	Notify   EmailNotify // "" reads as EmailMentions
	HideText bool
}

// EmailVerified says whether u's address is verified.
func (u User) EmailVerified() bool { return u.Email != "" && u.Mail.Verified == u.Email }

// NotifyOr is the missed-message setting, the default filled in.
func (s EmailSettings) NotifyOr() EmailNotify {
	if s.Notify == "" {
		return EmailMentions
	}
	return s.Notify
}

// PendingEmail is a missed-message email waiting: a person's messages of
// one conversation due together.
type PendingEmail struct {
	Due          time.Time
	Login        string
	Conversation string
	Messages     []ID
	Attempts     int
	Owner        string
	LeaseUntil   time.Time
	State        string // "" while waiting; see the states below
}

// The final states of a PendingEmail.
const (
	EmailSent    = "sent"
	EmailDropped = "dropped" // nothing left to send: read, deleted, back, or off
	EmailRefused = "refused" // the server refused it for good
	EmailMoved   = "moved"   // to a later due time, to try again
)

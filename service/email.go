// This file owns the account side of email (issue 35): verifying an
// address before anything but its verification goes to it, a person's
// missed-message settings and their one-click unsubscribe, and "forgot
// your password", which answers the same whoever is asked for and
// mails a reset link only to a verified address.

package service

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// Mailer sends one of the site's mails off the request's path
// (email.Outbox); Mail is false when email is off or its queue is full.
type Mailer interface {
	Mail(to, subject, text string) bool
}

// EmailStore is email's storage (store.Store).
type EmailStore interface {
	SetEmailSettings(ctx context.Context, login string, notify chat.EmailNotify, hideText bool) error
	CreateVerification(ctx context.Context, login, address string) (string, error)
	Verify(ctx context.Context, token string) (string, error)
	LoginByEmail(ctx context.Context, address string) (string, error)
	CreateResetLinkFor(ctx context.Context, actor, login string, life time.Duration) (string, error)
}

// EmailOn says whether the site sends mail.
func (s *Service) EmailOn() bool { return s.Mail != nil }

// EmailHidesText says the site leaves message text out of every email.
func (s *Service) EmailHidesText() bool { return s.EmailHideText }

// SendVerification mails login's address a link that verifies it, unless
// it is verified already or there is none (false then, or when email is
// off).
func (s *Service) SendVerification(ctx context.Context, login string) (bool, error) {
	if s.Mail == nil || s.Email == nil {
		return false, nil
	}
	u, err := s.Storage.User(ctx, login)
	if err != nil {
		return false, err
	}
	if u.Email == "" || u.EmailVerified() {
		return false, nil
	}
	token, err := s.Email.CreateVerification(ctx, u.Login, u.Email)
	if err != nil {
		return false, err
	}
	return s.Mail.Mail(u.Email, "Verify your address for KillrChat",
		"Hello "+u.Name()+",\n\nto receive KillrChat's mail at this address, open this link within 24 hours:\n\n"+
			s.SiteURL+"/email/verify/"+token+"\n\nIf you did not give this address to KillrChat, ignore this mail: nothing more will come.\n"), nil
}

// VerifyEmail spends a verification link and marks its address verified:
// the login; chat.ErrLinkRefused for a link that does not work.
func (s *Service) VerifyEmail(ctx context.Context, token string) (string, error) {
	if s.Email == nil {
		return "", chat.ErrLinkRefused
	}
	login, err := s.Email.Verify(ctx, token)
	if err == nil {
		s.Invalidate(ctx, live.Invalidation{Users: []string{login}})
	}
	return login, err
}

// SetEmailSettings saves login's missed-message setting.
func (s *Service) SetEmailSettings(ctx context.Context, login string, notify chat.EmailNotify, hideText bool) error {
	if err := s.Email.SetEmailSettings(ctx, login, notify, hideText); err != nil {
		return err
	}
	s.Invalidate(ctx, live.Invalidation{Users: []string{login}})
	return nil
}

// Unsubscribe turns login's missed-message emails off (the one-click
// unsubscribe of their emails), keeping their other settings.
func (s *Service) Unsubscribe(ctx context.Context, login string) error {
	u, err := s.Storage.User(ctx, login)
	if err != nil {
		return err
	}
	return s.SetEmailSettings(ctx, u.Login, chat.EmailOff, u.Mail.HideText)
}

// ForgotPassword mails a password-reset link (single use, an hour) to the
// verified address of who, a login or an address, if there is one; it
// says nothing of whether there is: the caller answers the same sentence
// either way, and runs it off the request's path so that the time does
// not tell either.
func (s *Service) ForgotPassword(ctx context.Context, who string) error {
	if s.Mail == nil || s.Email == nil {
		return nil
	}
	who = strings.TrimSpace(who)
	var (
		u   chat.User
		err error
	)
	if strings.Contains(who, "@") {
		var login string
		if login, err = s.Email.LoginByEmail(ctx, who); err == nil {
			u, err = s.Storage.User(ctx, login)
		}
	} else {
		u, err = s.Storage.User(ctx, who)
	}
	if errors.Is(err, chat.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !u.Active() || !u.EmailVerified() {
		return nil
	}
	token, err := s.Email.CreateResetLinkFor(ctx, "(forgot password)", u.Login, chat.MailedResetTTL)
	if err != nil {
		return err
	}
	s.audit(ctx, u.Login, chat.AuditResetLink, u.Login, "by mail")
	s.Mail.Mail(u.Email, "Your KillrChat password", "Hello "+u.Name()+",\n\nsomeone (you, we hope) asked to set a new password for "+
		u.DisplayLogin+" on KillrChat. Open this link within an hour to choose one; it works once:\n\n"+
		s.SiteURL+"/reset/"+token+"\n\nIf you did not ask, ignore this mail: your password stays as it is.\n")
	return nil
}

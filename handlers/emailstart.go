// This file owns the start of email: the SMTP sender, the outbox of
// single mails, and the missed-message notifier, made when an SMTP host
// is configured.

package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email"
	"github.com/killrchat/killrchat/email/missed"
	"github.com/killrchat/killrchat/service/cache"
)

// setUpEmail makes the sender, the outbox and the notifier; a
// configuration the sender refuses leaves email off, logged (cmd checks
// it before).
func (s *Server) setUpEmail() {
	sender, err := email.New(s.cfg.Email)
	if err != nil {
		s.log.Error("email: off", "err", err)
		s.cfg.Email.Host = ""
		return
	}
	count := func(kind string) func(string) {
		return func(result string) { s.metrics.Email.WithLabelValues(kind, result).Inc() }
	}
	s.outbox = email.NewOutbox(sender, count("account"), s.log, s.closing)
	owner := make([]byte, 8)
	_, _ = rand.Read(owner)
	s.missed = missed.New(missedStorage{Store: s.db, levels: s.levels}, s.presence, sender, missed.Config{
		Delay: s.cfg.EmailDelay, HideText: s.cfg.EmailHideText, SiteURL: s.cfg.SiteURL,
		Owner: hex.EncodeToString(owner), UnsubscribeKey: s.UnsubscribeKey(),
		Lease: s.cfg.EmailLease, MaxBackoff: s.cfg.EmailMaxBackoff, Ready: s.db.Connected(),
	}, count("missed"), s.log, s.closing)
}

// UnsubscribeKey signs the one-click unsubscribe links of emails.
func (s *Server) UnsubscribeKey() []byte { return email.UnsubscribeKey(s.cfg.SessionKey) }

// Outbox sends single mails; nil when email is off.
func (s *Server) Outbox() *email.Outbox { return s.outbox }

// Missed is the missed-message notifier; nil when email is off.
func (s *Server) Missed() *missed.Notifier { return s.missed }

// mailPosted hands a posted message to the missed-message notifier.
func (s *Server) mailPosted(conv chat.Conversation, m chat.Message) {
	if s.missed == nil {
		return
	}
	s.missed.Posted(missed.Posted{Conversation: conv.ID, Members: conv.Members, Author: m.Author.Login, ID: m.ID,
		Mentioned: chat.Mentioned(m.Content, conv.Members)})
}

// missedStorage is the store as the missed-message emails read it, with
// the conversations' levels through the cache push reads too.
type missedStorage struct {
	missed.Store
	levels *cache.Levels
}

func (m missedStorage) ConversationLevels(ctx context.Context, conversation string) (map[string]chat.Level, error) {
	return m.levels.ConversationLevels(ctx, conversation)
}

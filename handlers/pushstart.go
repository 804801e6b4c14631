// This file owns the start of Web Push: its sender needs the VAPID keys,
// which live in Cassandra unless configured, so it is made once the store
// connects and retried until it is.

package handlers

import (
	"context"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/push"
	"github.com/killrchat/killrchat/service/cache"
)

// pushRetryMax bounds the wait between two attempts to set up Web Push.
const pushRetryMax = 30 * time.Second

// setUpPush makes the Web Push sender: at once when its keys are
// configured or the store is connected (as in tests, which connect
// first), else in the background once the store connects, retried with
// back-off until it succeeds or the server shuts down. Until then Push
// is nil and /push/key answers 503.
func (s *Server) setUpPush() {
	count := func(result string) { s.metrics.Push.WithLabelValues(result).Inc() }
	db := pushStorage{Storage: s.db, levels: s.levels}
	attempt := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sender, err := push.New(ctx, db, s.cfg.Push, s.presence, count, s.log, s.closing)
		if err != nil {
			return err
		}
		s.push.Store(sender)
		return nil
	}
	configured := s.cfg.Push.PublicKey != "" || s.cfg.Push.PrivateKey != ""
	select {
	case <-s.db.Connected():
	default:
		if !configured {
			go s.retryPush(attempt)
			return
		}
	}
	if err := attempt(); err != nil {
		if configured {
			// Configured keys that do not work will not work later.
			s.log.Warn("push: off, the VAPID keys could not be set up", "err", err)
			return
		}
		go s.retryPush(attempt)
	}
}

// retryPush waits for the store to connect, then calls attempt until it
// succeeds, waiting longer after each failure, or the server shuts down.
func (s *Server) retryPush(attempt func() error) {
	select {
	case <-s.db.Connected():
	case <-s.closing:
		return
	}
	wait := 500 * time.Millisecond
	for {
		err := attempt()
		if err == nil {
			s.log.Info("push: on")
			return
		}
		s.log.Warn("push: the VAPID keys could not be set up; retrying", "in", wait, "err", err)
		select {
		case <-s.closing:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, pushRetryMax)
	}
}

// pushStorage is the store as push reads it, with the conversations'
// levels through a cache (push reads them for every turn of its workers).
type pushStorage struct {
	push.Storage
	levels *cache.Levels
}

func (p pushStorage) ConversationLevels(ctx context.Context, conversation string) (map[string]chat.Level, error) {
	return p.levels.ConversationLevels(ctx, conversation)
}

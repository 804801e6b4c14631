// This file owns what Web Push keeps (issue 19): people's push
// subscriptions, the VAPID key pair, and the levels by conversation.

package store

import (
	"context"
	"fmt"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertPushSub    = `INSERT INTO push_subscriptions (login, endpoint, p256dh, auth, created_at) VALUES (?, ?, ?, ?, ?)`
	deletePushSub    = `DELETE FROM push_subscriptions WHERE login = ? AND endpoint = ?`
	selectPushSubs   = `SELECT endpoint, p256dh, auth FROM push_subscriptions WHERE login = ? LIMIT 20`
	selectPushSubsOf = `SELECT login, endpoint, p256dh, auth FROM push_subscriptions WHERE login IN ?`
	// pushSubsBatch bounds the people one read of subscriptions names.
	pushSubsBatch  = 100
	selectVAPID    = `SELECT public_key, private_key FROM push_settings WHERE name = 'vapid'`
	insertVAPID    = `INSERT INTO push_settings (name, public_key, private_key) VALUES ('vapid', ?, ?) IF NOT EXISTS`
	insertConvLvl  = `INSERT INTO conversation_levels (conversation, login, level) VALUES (?, ?, ?)`
	selectConvLvls = `SELECT login, level FROM conversation_levels WHERE conversation = ?`
)

// SavePushSubscription stores sub for login (again: the same row).
func (s *Store) SavePushSubscription(ctx context.Context, login string, sub chat.PushSubscription) error {
	return s.exec(ctx, "save a push subscription", insertPushSub, login, sub.Endpoint, sub.P256dh, sub.Auth, s.Now())
}

// DeletePushSubscription removes login's subscription at endpoint.
func (s *Store) DeletePushSubscription(ctx context.Context, login, endpoint string) error {
	return s.exec(ctx, "delete a push subscription", deletePushSub, login, endpoint)
}

// PushSubscriptions are login's subscriptions (at most 20 browsers).
func (s *Store) PushSubscriptions(ctx context.Context, login string) ([]chat.PushSubscription, error) {
	q, err := s.query(ctx, selectPushSubs, login)
	if err != nil {
		return nil, err
	}
	iter := q.Iter()
	var out []chat.PushSubscription
	var sub chat.PushSubscription
	for iter.Scan(&sub.Endpoint, &sub.P256dh, &sub.Auth) {
		out = append(out, sub)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read push subscriptions of "+login, err)
	}
	return out, nil
}

// PushSubscriptionsOf are the subscriptions of logins, by login: one
// read per pushSubsBatch people (a key lookup each), so a message for a
// thousand people away costs ten statements, not a thousand.
func (s *Store) PushSubscriptionsOf(ctx context.Context, logins []string) (map[string][]chat.PushSubscription, error) {
	out := map[string][]chat.PushSubscription{}
	for i := 0; i < len(logins); i += pushSubsBatch {
		q, err := s.query(ctx, selectPushSubsOf, logins[i:min(i+pushSubsBatch, len(logins))])
		if err != nil {
			return nil, err
		}
		iter := q.PageSize(1000).Iter()
		var login string
		var sub chat.PushSubscription
		for iter.Scan(&login, &sub.Endpoint, &sub.P256dh, &sub.Auth) {
			out[login] = append(out[login], sub)
		}
		if err := iter.Close(); err != nil {
			return nil, s.fail("read push subscriptions", err)
		}
	}
	return out, nil
}

// VAPIDKeys returns the cluster's VAPID key pair, making it with generate
// and storing it by an LWT if there is none yet: whichever instance wins,
// every instance then signs with the same pair.
func (s *Store) VAPIDKeys(ctx context.Context, generate func() (public, private string, err error)) (string, string, error) {
	var pub, priv string
	q, err := s.query(ctx, selectVAPID)
	if err != nil {
		return "", "", err
	}
	err = q.Scan(&pub, &priv)
	if err == nil {
		return pub, priv, nil
	}
	if err != gocql.ErrNotFound {
		return "", "", s.fail("read the VAPID keys", err)
	}
	pub, priv, err = generate()
	if err != nil {
		return "", "", err
	}
	// An LWT, never retried by the driver: an unknown outcome is settled
	// by reading at SERIAL what is stored.
	var storedPub, storedPriv string
	prev := map[string]any{}
	applied, err := s.lwt(ctx, "store the VAPID keys", insertVAPID, []any{pub, priv}, prev, func(ctx context.Context) (bool, error) {
		q, err := s.serialRead(ctx, selectVAPID)
		if err != nil {
			return false, err
		}
		if err := q.Scan(&storedPub, &storedPriv); err != nil {
			return false, err
		}
		return storedPub == pub, nil
	})
	if err != nil {
		return "", "", err
	}
	switch {
	case !applied && storedPub != "":
		pub, priv = storedPub, storedPriv
	case !applied:
		pub, _ = prev["public_key"].(string)
		priv, _ = prev["private_key"].(string)
	}
	if pub == "" || priv == "" {
		return "", "", fmt.Errorf("store: the stored VAPID keys are empty")
	}
	return pub, priv, nil
}

// ConversationLevels are the levels people set in conversation, by login
// (the others have DefaultLevel).
func (s *Store) ConversationLevels(ctx context.Context, conversation string) (map[string]chat.Level, error) {
	q, err := s.query(ctx, selectConvLvls, conversation)
	if err != nil {
		return nil, err
	}
	iter := q.PageSize(5000).Iter()
	out := map[string]chat.Level{}
	var login, level string
	for iter.Scan(&login, &level) {
		out[login] = chat.Level(level)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read the levels of "+conversation, err)
	}
	return out, nil
}

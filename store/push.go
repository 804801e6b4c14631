// This file owns what Web Push keeps (issue 19): people's push
// subscriptions, the VAPID key pair, and the levels by conversation.

package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertPushSub    = `INSERT INTO push_subscriptions (login, endpoint, p256dh, auth, created_at) VALUES (?, ?, ?, ?, ?)`
	deletePushSub    = `DELETE FROM push_subscriptions WHERE login = ? AND endpoint = ?`
	selectPushSubs   = `SELECT endpoint, p256dh, auth, created_at FROM push_subscriptions WHERE login = ? LIMIT 100`
	selectPushSubsOf = `SELECT login, endpoint, p256dh, auth, created_at FROM push_subscriptions WHERE login IN ?`
	// pushSubsBatch bounds the people one read of subscriptions names.
	pushSubsBatch  = 100
	selectVAPID    = `SELECT public_key, private_key FROM push_settings WHERE name = 'vapid'`
	insertVAPID    = `INSERT INTO push_settings (name, public_key, private_key) VALUES ('vapid', ?, ?) IF NOT EXISTS`
	insertConvLvl  = `INSERT INTO conversation_levels (conversation, login, level) VALUES (?, ?, ?)`
	selectConvLvls = `SELECT login, level FROM conversation_levels WHERE conversation = ?`
)

// SavePushSubscription stores sub for login (again: the same row, made
// the newest) and drops login's oldest subscriptions beyond
// chat.MaxPushSubscriptions. Subscribing is rare, so the read that finds
// them costs nothing that matters; two at once each drop the same oldest.
func (s *Store) SavePushSubscription(ctx context.Context, login string, sub chat.PushSubscription) error {
	if err := s.exec(ctx, "save a push subscription", insertPushSub, login, sub.Endpoint, sub.P256dh, sub.Auth, s.Now()); err != nil {
		return err
	}
	subs, err := s.pushSubscriptions(ctx, login)
	if err != nil {
		return err
	}
	for _, old := range subs[min(len(subs), chat.MaxPushSubscriptions):] {
		if err := s.DeletePushSubscription(ctx, login, old.Endpoint); err != nil {
			return err
		}
	}
	return nil
}

// DeletePushSubscription removes login's subscription at endpoint.
func (s *Store) DeletePushSubscription(ctx context.Context, login, endpoint string) error {
	return s.exec(ctx, "delete a push subscription", deletePushSub, login, endpoint)
}

// PushSubscriptions are login's subscriptions, newest first (at most
// chat.MaxPushSubscriptions).
func (s *Store) PushSubscriptions(ctx context.Context, login string) ([]chat.PushSubscription, error) {
	subs, err := s.pushSubscriptions(ctx, login)
	if err != nil {
		return nil, err
	}
	return newest(subs), nil
}

// datedSub is a subscription and when it was saved.
type datedSub struct {
	chat.PushSubscription
	at time.Time
}

// pushSubscriptions are all of login's stored subscriptions (at most
// 100), newest first.
func (s *Store) pushSubscriptions(ctx context.Context, login string) ([]chat.PushSubscription, error) {
	q, err := s.query(ctx, selectPushSubs, login)
	if err != nil {
		return nil, err
	}
	iter := q.Iter()
	var out []datedSub
	var d datedSub
	for iter.Scan(&d.Endpoint, &d.P256dh, &d.Auth, &d.at) {
		out = append(out, d)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read push subscriptions of "+login, err)
	}
	return byAge(out), nil
}

// byAge is subs newest first (by endpoint when saved at once).
func byAge(subs []datedSub) []chat.PushSubscription {
	slices.SortFunc(subs, func(a, b datedSub) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(a.Endpoint, b.Endpoint)
	})
	out := make([]chat.PushSubscription, len(subs))
	for i, d := range subs {
		out[i] = d.PushSubscription
	}
	return out
}

// newest is subs (newest first) bounded to chat.MaxPushSubscriptions:
// rows saved before the bound, or by a race, never widen a push.
func newest(subs []chat.PushSubscription) []chat.PushSubscription {
	return subs[:min(len(subs), chat.MaxPushSubscriptions)]
}

// PushSubscriptionsOf are the subscriptions of logins, by login (each
// person's newest chat.MaxPushSubscriptions): one
// read per pushSubsBatch people (a key lookup each), so a message for a
// thousand people away costs ten statements, not a thousand.
func (s *Store) PushSubscriptionsOf(ctx context.Context, logins []string) (map[string][]chat.PushSubscription, error) {
	dated := map[string][]datedSub{}
	for i := 0; i < len(logins); i += pushSubsBatch {
		q, err := s.query(ctx, selectPushSubsOf, logins[i:min(i+pushSubsBatch, len(logins))])
		if err != nil {
			return nil, err
		}
		iter := q.PageSize(1000).Iter()
		var login string
		var d datedSub
		for iter.Scan(&login, &d.Endpoint, &d.P256dh, &d.Auth, &d.at) {
			dated[login] = append(dated[login], d)
		}
		if err := iter.Close(); err != nil {
			return nil, s.fail("read push subscriptions", err)
		}
	}
	out := make(map[string][]chat.PushSubscription, len(dated))
	for login, subs := range dated {
		out[login] = newest(byAge(subs))
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

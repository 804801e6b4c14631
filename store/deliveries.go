// This file owns the queue of bots' outgoing webhooks
// (schema/020_bots.cql, bot_deliveries) and bots' endpoints: every
// write of a delivery is an LWT, so one instance at a time holds it and
// its reply is posted at most once.

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	updateBotEndpoint = `UPDATE bots SET endpoint = ?, signing_secret = ? WHERE part = ? AND login = ?`
	selectEndpoints   = `SELECT login, endpoint, signing_secret FROM bots WHERE part = ?`

	insertDelivery = `INSERT INTO bot_deliveries (hour, id, bot, conversation, body, attempts, next_at)
		VALUES (?, ?, ?, ?, ?, 0, ?) IF NOT EXISTS`
	selectDeliveries = `SELECT id, bot, conversation, body, attempts, next_at, lease, lease_until, done, replied
		FROM bot_deliveries WHERE hour = ? AND id >= ?`
	selectDelivery = `SELECT lease, replied FROM bot_deliveries WHERE hour = ? AND id = ?`
	claimDelivery  = `UPDATE bot_deliveries SET lease = ?, lease_until = ? WHERE hour = ? AND id = ? IF lease = ? AND done = null`
	settleDelivery = `UPDATE bot_deliveries SET attempts = ?, next_at = ?, done = ?, lease_until = ? WHERE hour = ? AND id = ? IF lease = ?`
	replyDelivery  = `UPDATE bot_deliveries SET replied = true WHERE hour = ? AND id = ? IF replied = null`
)

// SetBotEndpoint sets where the bot login's outgoing webhook goes (""
// for nowhere) and gives it a new signing secret, returned (shown
// once). chat.ErrNotFound if login is no bot.
func (s *Store) SetBotEndpoint(ctx context.Context, login, endpoint string) (string, error) {
	if _, err := s.botTokenHash(ctx, login); err != nil {
		return "", err
	}
	var url, secret any
	var shown string
	if endpoint != "" {
		token, _, err := newToken()
		if err != nil {
			return "", err
		}
		url, secret, shown = endpoint, "kcs_"+token, "kcs_"+token
	}
	return shown, s.exec(ctx, "set bot endpoint", updateBotEndpoint, url, secret, botsPart, chat.NameKey(login))
}

// BotEndpoints are the bots that have an outgoing webhook, by login.
func (s *Store) BotEndpoints(ctx context.Context) (map[string]chat.BotEndpoint, error) {
	q, err := s.query(ctx, selectEndpoints, botsPart)
	if err != nil {
		return nil, err
	}
	out := map[string]chat.BotEndpoint{}
	var login, url, secret string
	iter := q.Iter()
	for iter.Scan(&login, &url, &secret) {
		if url != "" {
			out[login] = chat.BotEndpoint{URL: url, Secret: secret}
		}
		login, url, secret = "", "", ""
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read bot endpoints", err)
	}
	return out, nil
}

// EnqueueDelivery stores d (its ID made by NewChangeID) to be
// delivered from d.NextAt on.
func (s *Store) EnqueueDelivery(ctx context.Context, d chat.Delivery) error {
	hour := chat.DeliveryHour(d.ID.Time())
	_, err := s.lwt(ctx, "enqueue delivery", insertDelivery,
		[]any{hour, gocql.UUID(d.ID), d.Bot, d.Conversation, d.Body, d.NextAt}, nil,
		func(ctx context.Context) (bool, error) {
			q, err := s.serialRead(ctx, selectDelivery, hour, gocql.UUID(d.ID))
			if err != nil {
				return false, err
			}
			var (
				lease   gocql.UUID
				replied bool
			)
			if err := q.Scan(&lease, &replied); err != nil {
				if errors.Is(err, gocql.ErrNotFound) {
					return false, fmt.Errorf("store: enqueue of delivery %s timed out and left no row", d.ID)
				}
				return false, err
			}
			return true, nil // the id is ours alone: a row is our insert
		})
	return err
}

// Deliveries are the deliveries of hour from the id from on, done or
// not, oldest first.
func (s *Store) Deliveries(ctx context.Context, hour string, from chat.ID) ([]chat.Delivery, error) {
	if from.IsZero() {
		from = chat.MinIDAt(time.Unix(0, 0))
	}
	q, err := s.query(ctx, selectDeliveries, hour, gocql.UUID(from))
	if err != nil {
		return nil, err
	}
	var (
		out          []chat.Delivery
		id, lease    gocql.UUID
		d            chat.Delivery
		done, replid bool
	)
	iter := q.Iter()
	for iter.Scan(&id, &d.Bot, &d.Conversation, &d.Body, &d.Attempts, &d.NextAt, &lease, &d.LeaseUntil, &done, &replid) {
		d.ID, d.Lease, d.Done, d.Replied = chat.ID(id), chat.ID(lease), done, replid
		out = append(out, d)
		d, lease, done, replid = chat.Delivery{}, gocql.UUID{}, false, false
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read deliveries", err)
	}
	return out, nil
}

func uuidOrNil(id chat.ID) any {
	if id.IsZero() {
		return nil
	}
	return gocql.UUID(id)
}

// ClaimDelivery takes d for this instance until until, if no one else
// took it since it was read (its lease as read): true if it did, with
// d's new lease.
func (s *Store) ClaimDelivery(ctx context.Context, d chat.Delivery, until time.Time) (chat.Delivery, bool, error) {
	lease := s.NewChangeID()
	hour := chat.DeliveryHour(d.ID.Time())
	applied, err := s.lwt(ctx, "claim delivery", claimDelivery,
		[]any{gocql.UUID(lease), until, hour, gocql.UUID(d.ID), uuidOrNil(d.Lease)}, map[string]any{},
		func(ctx context.Context) (bool, error) { return s.deliveryLease(ctx, hour, d.ID, lease) })
	if err != nil || !applied {
		return d, false, err
	}
	d.Lease, d.LeaseUntil = lease, until
	return d, true, nil
}

func (s *Store) deliveryLease(ctx context.Context, hour string, id, lease chat.ID) (bool, error) {
	q, err := s.serialRead(ctx, selectDelivery, hour, gocql.UUID(id))
	if err != nil {
		return false, err
	}
	var (
		got     gocql.UUID
		replied bool
	)
	if err := q.Scan(&got, &replied); err != nil {
		return false, err
	}
	return chat.ID(got) == lease, nil
}

// SettleDelivery records an attempt of d, claimed by this instance:
// its attempts, when the next is due, whether it is done; the lease
// ends. False if the lease was lost meanwhile.
func (s *Store) SettleDelivery(ctx context.Context, d chat.Delivery) (bool, error) {
	hour := chat.DeliveryHour(d.ID.Time())
	var done any
	if d.Done {
		done = true
	}
	return s.lwt(ctx, "settle delivery", settleDelivery,
		[]any{d.Attempts, d.NextAt, done, time.Time{}, hour, gocql.UUID(d.ID), gocql.UUID(d.Lease)}, map[string]any{},
		func(ctx context.Context) (bool, error) {
			// Unknown: read it as lost; the lease's expiry hands it on.
			return false, nil
		})
}

// ClaimReply marks d replied to, once: true for the one caller that may
// post its reply.
func (s *Store) ClaimReply(ctx context.Context, d chat.Delivery) (bool, error) {
	hour := chat.DeliveryHour(d.ID.Time())
	return s.lwt(ctx, "claim reply", replyDelivery, []any{hour, gocql.UUID(d.ID)}, map[string]any{},
		func(ctx context.Context) (bool, error) {
			// Unknown: no reply rather than two (at most once).
			return false, nil
		})
}

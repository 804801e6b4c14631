// This file owns the broker-backed hub for several app instances: events
// are delivered to this instance's subscribers at once and published on
// NATS for the others. Core NATS is at-most-once; a page that missed an
// event while the broker was away catches up by its Last-Event-ID replay
// from Cassandra, so nothing acknowledged is lost.
package live

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
)

// natsSubject carries every room's events; each instance takes them all,
// since any instance may hold a page of any room. natsEndSubject carries
// the requests to end streams, which any instance may hold too.
const (
	natsSubject    = "killrchat.room-events"
	natsEndSubject = "killrchat.stream-ends"
	// natsInvalidateSubject carries cache invalidations (see Invalidation).
	natsInvalidateSubject = "killrchat.invalidations"
)

// NATSHub is the hub for several instances.
type NATSHub struct {
	local  *LocalHub
	nc     *nats.Conn
	origin string
	log    *slog.Logger
}

type natsEnvelope struct {
	Origin string `json:"origin"`
	Event  Event  `json:"event"`
}

type natsEndEnvelope struct {
	Origin string    `json:"origin"`
	End    StreamEnd `json:"end"`
}

// NewNATSHub connects to the NATS server at url. It keeps trying in the
// background if the server is not up yet, and reconnects after losing it,
// logging both.
func NewNATSHub(url string, log *slog.Logger) (*NATSHub, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	h := &NATSHub{local: NewLocalHub(), origin: hex.EncodeToString(b), log: log}
	nc, err := nats.Connect(url,
		nats.Name("killrchat-"+h.origin),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("nats: lost the broker; live events reach other instances again once it is back", "url", url, "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats: reconnected to the broker", "url", nc.ConnectedUrl())
			// Revocations may have been missed while away: caches start over.
			h.local.resetWatchers()
		}),
		nats.ConnectHandler(func(nc *nats.Conn) {
			log.Info("nats: connected", "url", nc.ConnectedUrl())
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("nats: connect %s: %w", url, err)
	}
	h.nc = nc
	if _, err := nc.Subscribe(natsSubject, h.deliver); err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: subscribe: %w", err)
	}
	if _, err := nc.Subscribe(natsEndSubject, h.deliverEnd); err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: subscribe: %w", err)
	}
	if _, err := nc.Subscribe(natsInvalidateSubject, h.deliverInvalidation); err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: subscribe: %w", err)
	}
	return h, nil
}

func (h *NATSHub) deliver(m *nats.Msg) {
	var env natsEnvelope
	if err := json.Unmarshal(m.Data, &env); err != nil {
		h.log.Warn("nats: unreadable event", "err", err)
		return
	}
	if env.Origin == h.origin {
		return // already delivered locally
	}
	_ = h.local.Publish(context.Background(), env.Event)
}

func (h *NATSHub) deliverEnd(m *nats.Msg) {
	var env natsEndEnvelope
	if err := json.Unmarshal(m.Data, &env); err != nil {
		h.log.Warn("nats: unreadable stream end", "err", err)
		return
	}
	if env.Origin == h.origin {
		return // already ended locally
	}
	_ = h.local.EndStreams(context.Background(), env.End)
}

// Publish delivers ev to this instance's subscribers and hands it to NATS
// for the others; while the broker is away NATS buffers it (up to its
// reconnect buffer) and an error only means the others may miss it live.
func (h *NATSHub) Publish(ctx context.Context, ev Event) error {
	_ = h.local.Publish(ctx, ev)
	data, err := json.Marshal(natsEnvelope{Origin: h.origin, Event: ev})
	if err != nil {
		return fmt.Errorf("nats: encode event: %w", err)
	}
	if err := h.nc.Publish(natsSubject, data); err != nil {
		return fmt.Errorf("nats: publish: %w", err)
	}
	return nil
}

// Subscribe starts receiving the events of room, from every instance.
func (h *NATSHub) Subscribe(room string, who Subscriber) *Subscription {
	return h.local.Subscribe(room, who)
}

// WatchConversations hears conversations' messages from every instance:
// they all reach every instance already (one subject), so it is local.
func (h *NATSHub) WatchConversations(conversations []string, login string) *ConversationWatch {
	return h.local.WatchConversations(conversations, login)
}

// EndStreams ends this instance's matching subscriptions at once and asks
// the others through NATS. Like an event, it is at-most-once for them: an
// error (or a broker away for longer than NATS buffers) means a stream
// there may keep running, though its next reconnect is refused anyway.
func (h *NATSHub) EndStreams(ctx context.Context, end StreamEnd) error {
	_ = h.local.EndStreams(ctx, end)
	data, err := json.Marshal(natsEndEnvelope{Origin: h.origin, End: end})
	if err != nil {
		return fmt.Errorf("nats: encode stream end: %w", err)
	}
	if err := h.nc.Publish(natsEndSubject, data); err != nil {
		return fmt.Errorf("nats: publish stream end: %w", err)
	}
	return nil
}

// Watch registers callbacks (see Hub.Watch): other instances' stream ends
// arrive through the local hub, and a reconnect to the broker resets.
func (h *NATSHub) Watch(onEnd func(StreamEnd), onReset func()) { h.local.Watch(onEnd, onReset) }

// Lateness is how late, at most, messages of every instance reached this
// one lately (see LocalHub.Lateness).
func (h *NATSHub) Lateness() time.Duration { return h.local.Lateness() }

// Close leaves the broker.
func (h *NATSHub) Close() error {
	h.nc.Close()
	return h.local.Close()
}

// This file owns the broker-backed hub for several app instances: events
// are delivered to this instance's subscribers at once and published on
// NATS for the others. Core NATS is at-most-once; a page that missed an
// event while the broker was away catches up by its Last-Event-ID replay
// from Cassandra, so nothing acknowledged is lost.
package handlers

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
// since any instance may hold a page of any room.
const natsSubject = "killrchat.room-events"

// NATSHub is the hub for several instances.
type NATSHub struct {
	local  *LocalHub
	nc     *nats.Conn
	origin string
	log    *slog.Logger
}

type natsEnvelope struct {
	Origin string    `json:"origin"`
	Event  RoomEvent `json:"event"`
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

// Publish delivers ev to this instance's subscribers and hands it to NATS
// for the others; while the broker is away NATS buffers it (up to its
// reconnect buffer) and an error only means the others may miss it live.
func (h *NATSHub) Publish(ctx context.Context, ev RoomEvent) error {
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
func (h *NATSHub) Subscribe(room string) *Subscription { return h.local.Subscribe(room) }

// Close leaves the broker.
func (h *NATSHub) Close() error {
	h.nc.Close()
	return nil
}

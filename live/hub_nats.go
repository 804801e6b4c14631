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
	"sync"
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
	beats  sync.Once
	stop   chan struct{}
}

// natsEnvelope is an event of instance Origin, or, with no event, its
// watermark alone (a heartbeat, see watermarks.go).
type natsEnvelope struct {
	Origin string `json:"origin"`
	Event  *Event `json:"event,omitempty"`
	Mark   int64  `json:"mark,omitempty"`
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
	h := &NATSHub{local: NewLocalHub(), origin: hex.EncodeToString(b), log: log, stop: make(chan struct{})}
	h.local.marks.discover(DefaultResumeWindow)
	nc, err := nats.Connect(url,
		nats.Name("killrchat-"+h.origin),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			// Events of other instances may be missed from now on: their
			// watermarks must not move on past them (watermarks.go).
			h.local.marks.freeze()
			log.Warn("nats: lost the broker; live events reach other instances again once it is back", "url", url, "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats: reconnected to the broker", "url", nc.ConnectedUrl())
			// Revocations may have been missed while away: caches start
			// over. Events too: every page here resumes from its cursor,
			// which did not move past them, and only then do marks move.
			h.local.resetWatchers()
			h.local.dropAll()
			h.local.marks.thaw()
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
	if env.Event == nil {
		h.local.heardMark(env.Origin, env.Mark)
		return
	}
	h.local.publishRemote(*env.Event, env.Origin)
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
	data, err := json.Marshal(natsEnvelope{Origin: h.origin, Event: &ev})
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

// SetWatermark gives the hub this instance's watermark and starts
// sending it to the others every heartbeatEvery; until they are heard,
// cursors stay window behind the clock (see watermarks.go).
func (h *NATSHub) SetWatermark(local func() int64, window time.Duration) {
	h.local.SetWatermark(local, window)
	h.local.marks.discover(window)
	h.beats.Do(func() { go h.heartbeat(local) })
}

// heartbeat sends the watermark until the hub closes. The mark is read
// before it is sent, so every message below it went out before it, on
// the same connection and subject (watermarks.go).
func (h *NATSHub) heartbeat(local func() int64) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		data, err := json.Marshal(natsEnvelope{Origin: h.origin, Mark: local()})
		if err == nil {
			_ = h.nc.Publish(natsSubject, data)
		}
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
	}
}

// RemoteMark is the lowest watermark heard from the other instances.
func (h *NATSHub) RemoteMark() int64 { return h.local.RemoteMark() }

// Close leaves the broker.
func (h *NATSHub) Close() error {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	h.nc.Close()
	return h.local.Close()
}

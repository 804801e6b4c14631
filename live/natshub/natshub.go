package natshub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/live/presence"
)

// natsSubject carries every room's events; each instance takes them all,
// since any instance may hold a page of any room. natsEndSubject carries
// the requests to end streams, which any instance may hold too.
const (
	natsSubject    = "killrchat.room-events"
	natsEndSubject = "killrchat.stream-ends"
	// natsInvalidateSubject carries cache invalidations (see live.Invalidation).
	natsInvalidateSubject = "killrchat.invalidations"
	// natsPresenceSubject carries who is online on each instance (see
	// package live/presence).
	natsPresenceSubject = "killrchat.presence"
)

// Hub is the live.Hub of an instance among several.
type Hub struct {
	local  *live.LocalHub
	nc     *nats.Conn
	origin string
	log    *slog.Logger
	beats  sync.Once
	stop   chan struct{}

	presenceMu sync.Mutex
	watchers   []func(presence.Update)

	// heardMu guards heard: each other instance, when this one last
	// heard from it (here) and what it sent then (its clock).
	heardMu sync.Mutex
	heard   map[string]heardFrom
	// epoch moves whenever messages may have been missed (the broker lost
	// or back, a slow consumer): a pass is held only within one epoch.
	epoch atomic.Int64
	// fences are this instance's fences waiting for acknowledgements.
	fencesMu sync.Mutex
	fences   map[string]*pendingFence
}

type heardFrom struct {
	at   time.Time // here
	sent int64     // there: unix nanoseconds
}

type pendingFence struct {
	waiting map[string]bool
	done    chan struct{}
}

// fenceMsg asks every instance to drop Invalidation from its caches and
// to drain its gate of Room (live/fence); fenceAck answers it.
type fenceMsg struct {
	ID           string            `json:"id"`
	Room         string            `json:"room"`
	Invalidation live.Invalidation `json:"invalidation"`
}

type fenceAck struct {
	ID string `json:"id"`
	To string `json:"to"`
}

// natsEnvelope is an event of instance Origin, or, with no event, its
// watermark alone (a heartbeat, see live/watermark).
type natsEnvelope struct {
	Origin string      `json:"origin"`
	Event  *live.Event `json:"event,omitempty"`
	Mark   int64       `json:"mark,omitempty"`
	// Sent is when it was sent, by the sender's clock (unix nanoseconds).
	Sent  int64     `json:"sent,omitempty"`
	Fence *fenceMsg `json:"fence,omitempty"`
	Ack   *fenceAck `json:"ack,omitempty"`
}

type natsEndEnvelope struct {
	Origin string         `json:"origin"`
	End    live.StreamEnd `json:"end"`
}

// New connects to the NATS server at url. It keeps trying in the
// background if the server is not up yet, and reconnects after losing it,
// logging both.
func New(url string, log *slog.Logger) (*Hub, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	h := &Hub{local: live.NewLocalHub(), origin: hex.EncodeToString(b), log: log, stop: make(chan struct{}),
		heard: map[string]heardFrom{}, fences: map[string]*pendingFence{}}
	h.local.Discover(live.DefaultResumeWindow)
	nc, err := nats.Connect(url,
		nats.Name("killrchat-"+h.origin),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			h.epoch.Add(1)
			h.local.BrokerLost()
			log.Warn("nats: lost the broker; live events reach other instances again once it is back", "url", url, "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats: reconnected to the broker", "url", nc.ConnectedUrl())
			h.local.BrokerBack()
			h.epoch.Add(1)
		}),
		nats.ConnectHandler(func(nc *nats.Conn) {
			log.Info("nats: connected", "url", nc.ConnectedUrl())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if !errors.Is(err, nats.ErrSlowConsumer) || sub == nil || sub.Subject != natsSubject {
				log.Warn("nats: error", "err", err)
				return
			}
			// Messages were dropped here: events, watermarks, fences. As
			// after a broker's absence, caches start over and every page
			// resumes from its cursor.
			log.Warn("nats: this instance fell behind the broker and missed events; pages resume", "err", err)
			h.epoch.Add(1)
			h.local.BrokerLost()
			h.local.BrokerBack()
			h.epoch.Add(1)
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
	if _, err := nc.Subscribe(natsPresenceSubject, h.deliverPresence); err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: subscribe: %w", err)
	}
	return h, nil
}

func (h *Hub) deliver(m *nats.Msg) {
	var env natsEnvelope
	if err := json.Unmarshal(m.Data, &env); err != nil {
		h.log.Warn("nats: unreadable event", "err", err)
		return
	}
	if env.Origin == h.origin {
		return // already delivered locally
	}
	h.heardMu.Lock()
	h.heard[env.Origin] = heardFrom{at: time.Now(), sent: env.Sent}
	h.heardMu.Unlock()
	switch {
	case env.Fence != nil:
		h.answerFence(env.Origin, *env.Fence)
		return
	case env.Ack != nil:
		if env.Ack.To == h.origin {
			h.acknowledged(env.Origin, env.Ack.ID)
		}
		return
	}
	if env.Event == nil {
		h.local.HeardMark(env.Origin, env.Mark)
		return
	}
	h.local.PublishRemote(*env.Event, env.Origin)
}

func (h *Hub) deliverEnd(m *nats.Msg) {
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
func (h *Hub) Publish(ctx context.Context, ev live.Event) error {
	_ = h.local.Publish(ctx, ev)
	data, err := json.Marshal(natsEnvelope{Origin: h.origin, Event: &ev, Sent: time.Now().UnixNano()})
	if err != nil {
		return fmt.Errorf("nats: encode event: %w", err)
	}
	if err := h.nc.Publish(natsSubject, data); err != nil {
		return fmt.Errorf("nats: publish: %w", err)
	}
	return nil
}

// Subscribe starts receiving the events of room, from every instance.
func (h *Hub) Subscribe(room string, who live.Subscriber) *live.Subscription {
	return h.local.Subscribe(room, who)
}

// WatchConversations hears conversations' messages from every instance:
// they all reach every instance already (one subject), so it is local.
func (h *Hub) WatchConversations(conversations []string, login string) *live.ConversationWatch {
	return h.local.WatchConversations(conversations, login)
}

// EndStreams ends this instance's matching subscriptions at once and asks
// the others through NATS. Like an event, it is at-most-once for them: an
// error (or a broker away for longer than NATS buffers) means a stream
// there may keep running, though its next reconnect is refused anyway.
func (h *Hub) EndStreams(ctx context.Context, end live.StreamEnd) error {
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

// Watch registers callbacks (see live.Hub.Watch): other instances' stream ends
// arrive through the local hub, and a reconnect to the broker resets.
func (h *Hub) Watch(onEnd func(live.StreamEnd), onReset func()) { h.local.Watch(onEnd, onReset) }

// SetWatermark gives the hub this instance's watermark and starts
// sending it to the others every live.HeartbeatEvery; until they are heard,
// cursors stay window behind the clock (see live/watermark).
func (h *Hub) SetWatermark(local func() int64, window time.Duration) {
	h.local.SetWatermark(local, window)
	h.local.Discover(window)
	h.beats.Do(func() { go h.heartbeat(local) })
}

// heartbeat sends the watermark until the hub closes. The mark is read
// before it is sent, so every message below it went out before it, on
// the same connection and subject (live/watermark).
func (h *Hub) heartbeat(local func() int64) {
	t := time.NewTicker(live.HeartbeatEvery)
	defer t.Stop()
	for {
		data, err := json.Marshal(natsEnvelope{Origin: h.origin, Mark: local(), Sent: time.Now().UnixNano()})
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
func (h *Hub) RemoteMark() int64 { return h.local.RemoteMark() }

// Close leaves the broker.
func (h *Hub) Close() error {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	h.nc.Close()
	return h.local.Close()
}

type natsInvalidationEnvelope struct {
	Origin       string            `json:"origin"`
	Invalidation live.Invalidation `json:"invalidation"`
}

// WatchInvalidations registers f: the other instances' invalidations
// arrive through the local hub.
func (h *Hub) WatchInvalidations(f func(live.Invalidation)) { h.local.WatchInvalidations(f) }

// WatchEvents hears every instance's events: they all reach the local
// fan-out; a lost broker is a gap.
func (h *Hub) WatchEvents(heard func(live.Event), gap func(missing bool)) {
	h.local.WatchEvents(heard, gap)
}

// Invalidate tells this instance's caches at once and the others' through
// NATS.
func (h *Hub) Invalidate(ctx context.Context, inv live.Invalidation) error {
	_ = h.local.Invalidate(ctx, inv)
	data, err := json.Marshal(natsInvalidationEnvelope{Origin: h.origin, Invalidation: inv})
	if err != nil {
		return fmt.Errorf("nats: encode invalidation: %w", err)
	}
	if err := h.nc.Publish(natsInvalidateSubject, data); err != nil {
		return fmt.Errorf("nats: publish invalidation: %w", err)
	}
	return nil
}

func (h *Hub) deliverInvalidation(m *nats.Msg) {
	var env natsInvalidationEnvelope
	if err := json.Unmarshal(m.Data, &env); err != nil {
		h.log.Warn("nats: unreadable invalidation", "err", err)
		return
	}
	if env.Origin == h.origin {
		return // already told locally
	}
	_ = h.local.Invalidate(context.Background(), env.Invalidation)
}

// PublishPresence tells the other instances who is online here (see
// presence.Transport); at most once, like every event.
func (h *Hub) PublishPresence(u presence.Update) {
	u.Origin = h.origin
	data, err := json.Marshal(u)
	if err != nil {
		return
	}
	_ = h.nc.Publish(natsPresenceSubject, data)
}

// WatchPresence calls f with each other instance's presence update.
func (h *Hub) WatchPresence(f func(presence.Update)) {
	h.presenceMu.Lock()
	h.watchers = append(h.watchers, f)
	h.presenceMu.Unlock()
}

func (h *Hub) deliverPresence(m *nats.Msg) {
	var u presence.Update
	if err := json.Unmarshal(m.Data, &u); err != nil {
		h.log.Warn("nats: unreadable presence", "err", err)
		return
	}
	if u.Origin == h.origin {
		return
	}
	h.presenceMu.Lock()
	fs := h.watchers
	h.presenceMu.Unlock()
	for _, f := range fs {
		f(u)
	}
}

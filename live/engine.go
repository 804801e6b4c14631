package live

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/hangup"
)

// Source is what a resumed stream reads from the database (a *store.Store).
type Source interface {
	// MessagesAfter is up to n messages of in after after, oldest first,
	// and whether more follow.
	MessagesAfter(ctx context.Context, in chat.Place, after chat.ID, n int) ([]chat.Message, bool, error)
	// CountMessagesAfter counts in's messages after after, up to limit.
	CountMessagesAfter(ctx context.Context, in chat.Place, after chat.ID, limit int) (int, error)
	// ChangesAfter is up to n changes (edits, deletes, reactions) of in
	// after after, oldest first, and whether more follow; chat.ErrNotFound
	// when after is older than the change log keeps.
	ChangesAfter(ctx context.Context, in chat.Place, after chat.ID, n int) ([]chat.Change, bool, error)
	// MadeHere says whether this instance made the message id.
	MadeHere(id chat.ID) bool
	// IDFloor is a timestamp below every id this instance will make.
	IDFloor() int64
}

// Gauge counts open streams (a prometheus.Gauge).
type Gauge interface {
	Inc()
	Dec()
}

// Config are the engine's limits; zero values take defaults.
type Config struct {
	// MaxStreamsPerUser and MaxStreamsPerIP cap the live streams one user
	// and one client IP may hold open on this instance (default 20, 200).
	MaxStreamsPerUser int
	MaxStreamsPerIP   int
	// MaxReplays caps the catch-up replays running at once on this
	// instance (default 32); a replay waits up to ReplayWait (default 2s)
	// for its turn, then is refused.
	MaxReplays int
	ReplayWait time.Duration
	// ResumeWindow is how far behind the clock cursors stay while an
	// instance has not yet heard the others (its first second on the
	// broker; default 5s; see live/watermark).
	ResumeWindow time.Duration
}

// Engine is an instance's live side: its hub, its sequencer, and the
// streams it serves.
type Engine struct {
	hub    Hub
	src    Source
	render func(context.Context, chat.Message) ([]byte, error)
	// renderChange renders a replayed change (see RenderChanges).
	renderChange func(context.Context, chat.Place, chat.Change) ([]byte, error)
	cfg          Config
	log          *slog.Logger
	open         Gauge
	seq          *sequencer
	streams      *streamCounts
	replays      *replaySlots
	hangups      *hangup.Watcher
	// direct counts the streams the fan-out writes to (see liveDirect).
	direct atomic.Int64
	// browsers are the open personal streams (see OpenPersonal).
	browsers browsers
	closing  chan struct{}
}

// DirectStreams is how many open streams the fan-out writes to itself;
// the others (HTTP/2, a connection that cannot be taken over) each have a
// goroutine that writes its events, which costs more per event.
func (s *Engine) DirectStreams() int64 { return s.direct.Load() }

// New returns the engine. publish takes each message the sequencer
// releases to the hub (rendering it if need be); render renders a
// replayed message; open counts the open streams.
func New(hub Hub, src Source, cfg Config, log *slog.Logger, open Gauge,
	render func(context.Context, chat.Message) ([]byte, error), publish func(Event)) *Engine {
	if cfg.MaxStreamsPerUser == 0 {
		cfg.MaxStreamsPerUser = DefaultMaxStreamsPerUser
	}
	if cfg.MaxStreamsPerIP == 0 {
		cfg.MaxStreamsPerIP = DefaultMaxStreamsPerIP
	}
	if cfg.MaxReplays == 0 {
		cfg.MaxReplays = DefaultMaxReplays
	}
	if cfg.ReplayWait == 0 {
		cfg.ReplayWait = DefaultReplayWait
	}
	if cfg.ResumeWindow == 0 {
		cfg.ResumeWindow = DefaultResumeWindow
	}
	e := &Engine{hub: hub, src: src, render: render, cfg: cfg, log: log, open: open,
		streams: newStreamCounts(cfg.MaxStreamsPerUser, cfg.MaxStreamsPerIP),
		replays: newReplaySlots(cfg.MaxReplays, cfg.ReplayWait),
		closing: make(chan struct{}),
	}
	e.hangups = hangup.New(e.closing)
	e.seq = newSequencer(publish, src.IDFloor)
	if w, ok := hub.(interface {
		SetWatermark(func() int64, time.Duration)
	}); ok {
		w.SetWatermark(e.seq.watermark, cfg.ResumeWindow)
	}
	return e
}

// RenderChanges sets how a replayed change (an edit, a delete, a
// reaction) is rendered: the same HTML its live event carried. Without
// it, a replay sends messages only.
func (e *Engine) RenderChanges(render func(context.Context, chat.Place, chat.Change) ([]byte, error)) {
	e.renderChange = render
}

// Reserve drafts a message of conversation (draft gives it its id, in
// order) and queues it for publication; Finish settles it.
func (e *Engine) Reserve(conversation string, draft func() (chat.Message, error)) (*Slot, error) {
	return e.seq.reserve(conversation, draft)
}

// Finish marks a reserved message stored (ok) or failed, and publishes
// every stored message at the head of its conversation's queue.
func (e *Engine) Finish(sl *Slot, ok bool) { e.seq.finish(sl, ok) }

// Bound is the conversation's bound now (see sequencer), lowered to the
// other instances' watermarks: a page read now has every message below
// it, and its stream starts there (see live/watermark).
func (e *Engine) Bound(conversation string) int64 {
	b := e.seq.bound(conversation)
	if r, ok := e.hub.(interface{ RemoteMark() int64 }); ok {
		b = min(b, r.RemoteMark())
	}
	return b
}

// ShownBound is the conversation's bound here, without the other
// instances' watermarks: this instance's messages below it are stored
// and published, so a page read now may show them even above its cursor
// (Bound), which lags the others' heartbeats (read-your-writes: a person
// who just posted sees the post on the next page). The stream that
// resumes from the cursor brings them again; a page keeps one of each id.
func (e *Engine) ShownBound(conversation string) int64 { return e.seq.bound(conversation) }

// BeforeBound says whether a stored message lies on the "already
// published" side of bound. Messages of other instances are not ordered by
// this instance's bound, so they always count as published.
func (e *Engine) BeforeBound(id chat.ID, bound int64) bool {
	return id.Timestamp() < bound || !e.src.MadeHere(id)
}

// mark is the lowest watermark now, this instance's and the others':
// every message below it is stored and has been handed to this instance's
// streams (live/watermark).
func (e *Engine) mark() int64 {
	m := e.seq.watermark()
	if r, ok := e.hub.(interface{ RemoteMark() int64 }); ok {
		m = min(m, r.RemoteMark())
	}
	return m
}

// Shutdown ends every live stream so the HTTP server can stop.
func (e *Engine) Shutdown() {
	select {
	case <-e.closing:
	default:
		close(e.closing)
	}
}

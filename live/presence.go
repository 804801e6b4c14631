// This file owns presence (issue 19): a person is online while any of
// their browsers holds a live stream on any instance. Each instance knows
// its own streams (streamCounts); it tells the others through the hub, if
// the hub carries presence (PresenceTransport), with one message when a
// person's first stream here opens or their last one closes, and a
// heartbeat every presenceEvery naming everyone online here, so an
// instance that died is forgotten presenceTTL after its last heartbeat.
// Never a message per room, and nothing stored: a heartbeat costs about
// (login length + 3) bytes per online person, three times a minute.
package live

import (
	"sync"
	"time"
)

const (
	// presenceEvery is how often an instance names everyone online on it.
	presenceEvery = 20 * time.Second
	// presenceTTL is how long an instance's word holds without a
	// heartbeat: past it, its people count as offline.
	presenceTTL = 2*presenceEvery + 5*time.Second
)

// PresenceUpdate is an instance's word on who is online on it: everyone
// (Full: the others are not), or the people whose first stream opened
// (Online) or last stream closed (Offline) there.
type PresenceUpdate struct {
	Origin  string   `json:"origin"`
	Full    bool     `json:"full,omitempty"`
	Online  []string `json:"online,omitempty"`
	Offline []string `json:"offline,omitempty"`
}

// PresenceTransport is a hub that carries presence between instances
// (natshub). Updates of this instance are not given back to it.
type PresenceTransport interface {
	PublishPresence(u PresenceUpdate)
	WatchPresence(f func(PresenceUpdate))
}

// presence merges this instance's streams with the other instances' word.
type presence struct {
	mu     sync.Mutex
	local  func() []string // who has a stream here
	here   func(string) bool
	others map[string]*originPresence
	now    func() time.Time
}

// originPresence is what one other instance said, and when it last
// spoke.
type originPresence struct {
	people map[string]bool
	at     time.Time
}

func newPresence(local func() []string, here func(string) bool) *presence {
	return &presence{local: local, here: here, others: map[string]*originPresence{}, now: time.Now}
}

// heard applies another instance's update.
func (p *presence) heard(u PresenceUpdate) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := p.others[u.Origin]
	if o == nil || u.Full {
		o = &originPresence{people: map[string]bool{}}
		p.others[u.Origin] = o
	}
	o.at = p.now()
	for _, l := range u.Online {
		o.people[l] = true
	}
	for _, l := range u.Offline {
		delete(o.people, l)
	}
}

// online says whether login has a stream here, or on an instance heard
// within presenceTTL. Instances silent for longer are forgotten.
func (p *presence) online(login string) bool {
	if p.here(login) {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for name, o := range p.others {
		if now.Sub(o.at) > presenceTTL {
			delete(p.others, name)
			continue
		}
		if o.people[login] {
			return true
		}
	}
	return false
}

// Online says whether login has a live stream on any instance (see
// presence.go).
func (e *Engine) Online(login string) bool { return e.presence.online(login) }

// startPresence wires presence to the hub, when it carries presence, and
// sends the heartbeat until the engine shuts down.
func (e *Engine) startPresence() {
	e.presence = newPresence(e.streams.logins, e.streams.has)
	t, ok := e.hub.(PresenceTransport)
	if !ok {
		return
	}
	e.presenceOut = t
	t.WatchPresence(e.presence.heard)
	e.streams.onChange = func(login string, online bool) {
		if online {
			t.PublishPresence(PresenceUpdate{Online: []string{login}})
		} else {
			t.PublishPresence(PresenceUpdate{Offline: []string{login}})
		}
	}
	go func() {
		tick := time.NewTicker(presenceEvery)
		defer tick.Stop()
		for {
			t.PublishPresence(PresenceUpdate{Full: true, Online: e.streams.logins()})
			select {
			case <-e.closing:
				return
			case <-tick.C:
			}
		}
	}()
}

package presence

import (
	"sync"
	"time"
)

const (
	// Every is how often an instance names everyone online on it.
	Every = 20 * time.Second
	// TTL is how long an instance's word holds without a heartbeat: past
	// it, its people count as offline.
	TTL = 2*Every + 5*time.Second
)

// Update is an instance's word on who is online on it: everyone (Full:
// the others are not), or the people whose first stream opened (Online)
// or last stream closed (Offline) there.
type Update struct {
	Origin  string   `json:"origin"`
	Full    bool     `json:"full,omitempty"`
	Online  []string `json:"online,omitempty"`
	Offline []string `json:"offline,omitempty"`
}

// Transport is a hub that carries presence between instances (natshub).
// Updates of this instance are not given back to it.
type Transport interface {
	PublishPresence(u Update)
	WatchPresence(f func(Update))
}

// Streams is what the tracker needs of this instance's live streams (the
// live engine).
type Streams interface {
	// StreamLogins are the people with a stream open here.
	StreamLogins() []string
	// HasStream says whether login has a stream open here.
	HasStream(login string) bool
	// OnStreamChange hears a person's first stream open and their last
	// one close.
	OnStreamChange(f func(login string, online bool))
}

// Tracker merges this instance's streams with the other instances' word.
type Tracker struct {
	streams Streams
	mu      sync.Mutex
	others  map[string]*origin
	now     func() time.Time
	// gone is when each person was last seen going offline, here or on
	// another instance (see SeenWithin); pruned as it grows.
	gone map[string]time.Time
}

// origin is what one other instance said, and when it last spoke.
type origin struct {
	people map[string]bool
	at     time.Time
}

// New starts tracking: with a transport (nil for one instance), it
// listens to the others, tells them of changes here, and sends the
// heartbeat until closing closes.
func New(streams Streams, t Transport, closing <-chan struct{}) *Tracker {
	p := &Tracker{streams: streams, others: map[string]*origin{}, now: time.Now, gone: map[string]time.Time{}}
	if t == nil {
		streams.OnStreamChange(func(login string, online bool) {
			if !online {
				p.wentOffline(login)
			}
		})
		return p
	}
	t.WatchPresence(p.heard)
	streams.OnStreamChange(func(login string, online bool) {
		if !online {
			p.wentOffline(login)
		}
		if online {
			t.PublishPresence(Update{Online: []string{login}})
		} else {
			t.PublishPresence(Update{Offline: []string{login}})
		}
	})
	go func() {
		tick := time.NewTicker(Every)
		defer tick.Stop()
		for {
			t.PublishPresence(Update{Full: true, Online: streams.StreamLogins()})
			select {
			case <-closing:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// heard applies another instance's update.
func (p *Tracker) heard(u Update) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if u.Full && p.others[u.Origin] != nil {
		// Whoever the last word named and this one does not went offline.
		still := map[string]bool{}
		for _, l := range u.Online {
			still[l] = true
		}
		for l := range p.others[u.Origin].people {
			if !still[l] {
				p.goneLocked(l)
			}
		}
	}
	o := p.others[u.Origin]
	if o == nil || u.Full {
		o = &origin{people: map[string]bool{}}
		p.others[u.Origin] = o
	}
	o.at = p.now()
	for _, l := range u.Online {
		o.people[l] = true
	}
	for _, l := range u.Offline {
		delete(o.people, l)
		p.goneLocked(l)
	}
}

func (p *Tracker) wentOffline(login string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.goneLocked(login)
}

// goneMax bounds the people remembered as gone; past it, those gone
// longer than a minute are forgotten.
const goneMax = 100_000

func (p *Tracker) goneLocked(login string) {
	now := p.now()
	if len(p.gone) >= goneMax {
		for l, at := range p.gone {
			if now.Sub(at) > time.Minute {
				delete(p.gone, l)
			}
		}
	}
	p.gone[login] = now
}

// SeenWithin says whether login is online, or went offline (here or on
// another instance heard of) less than d ago: Web Push is only for people
// away for longer.
func (p *Tracker) SeenWithin(login string, d time.Duration) bool {
	if p.Online(login) {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.gone[login]
	return ok && p.now().Sub(at) < d
}

// Online says whether login has a stream here, or on an instance heard
// within TTL. Instances silent for longer are forgotten.
func (p *Tracker) Online(login string) bool {
	if p.streams.HasStream(login) {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for name, o := range p.others {
		if now.Sub(o.at) > TTL {
			delete(p.others, name)
			continue
		}
		if o.people[login] {
			return true
		}
	}
	return false
}

package presence

import (
	"sync"
	"testing"
	"time"
)

// streams is a fake of the engine's counts.
type streams struct {
	mu       sync.Mutex
	open     map[string]bool
	onChange func(string, bool)
}

func (s *streams) StreamLogins() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for l := range s.open {
		out = append(out, l)
	}
	return out
}
func (s *streams) HasStream(l string) bool             { s.mu.Lock(); defer s.mu.Unlock(); return s.open[l] }
func (s *streams) OnStreamChange(f func(string, bool)) { s.onChange = f }

// transport records what is published and lets the test deliver.
type transport struct {
	mu        sync.Mutex
	published []Update
	watch     func(Update)
}

func (t *transport) PublishPresence(u Update) {
	t.mu.Lock()
	t.published = append(t.published, u)
	t.mu.Unlock()
}
func (t *transport) WatchPresence(f func(Update)) { t.watch = f }

// TestTracker: a person is online while a stream of theirs is open here
// or another instance says so; an instance's "offline" takes back only
// its own word; a full update replaces it; an instance silent past TTL
// is forgotten; and changes here are told to the others.
func TestTracker(t *testing.T) {
	s := &streams{open: map[string]bool{}}
	tr := &transport{}
	closing := make(chan struct{})
	defer close(closing)
	p := New(s, tr, closing)
	now := time.Unix(1000, 0)
	p.mu.Lock()
	p.now = func() time.Time { return now }
	p.mu.Unlock()

	s.mu.Lock()
	s.open["ada"] = true
	s.mu.Unlock()
	s.onChange("ada", true)
	if !p.Online("ada") || p.Online("bob") {
		t.Fatal("ada has a stream here, bob none")
	}
	tr.mu.Lock()
	var told bool
	for _, u := range tr.published {
		if len(u.Online) == 1 && u.Online[0] == "ada" && !u.Full {
			told = true
		}
	}
	tr.mu.Unlock()
	if !told {
		t.Error("ada's first stream was not told to the others")
	}

	tr.watch(Update{Origin: "x", Online: []string{"bob"}})
	tr.watch(Update{Origin: "y", Online: []string{"bob", "cy"}})
	tr.watch(Update{Origin: "x", Offline: []string{"bob"}})
	if !p.Online("bob") {
		t.Error("y still says bob is online")
	}
	tr.watch(Update{Origin: "y", Full: true, Online: []string{"cy"}})
	if p.Online("bob") || !p.Online("cy") {
		t.Error("y's full update says cy alone")
	}
	p.mu.Lock()
	now = now.Add(TTL + time.Second)
	p.mu.Unlock()
	if p.Online("cy") {
		t.Error("y has been silent past the TTL")
	}
}

package live

import (
	"testing"
	"time"
)

// TestPresenceMerge: a person is online while a stream of theirs is open
// here or another instance says so; an instance's "offline" takes back
// only its own word; a full update replaces it; and an instance silent
// past presenceTTL is forgotten.
func TestPresenceMerge(t *testing.T) {
	counts := newStreamCounts(10, 10)
	var changes []string
	counts.onChange = func(login string, online bool) {
		if online {
			changes = append(changes, "+"+login)
		} else {
			changes = append(changes, "-"+login)
		}
	}
	p := newPresence(counts.logins, counts.has)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }

	closeA, _, _ := counts.open("ada", "ip1", false)
	closeB, _, _ := counts.open("ada", "ip2", false)
	if !p.online("ada") || p.online("bob") {
		t.Fatal("ada has streams here, bob none")
	}
	closeA()
	closeB()
	if p.online("ada") {
		t.Error("ada's streams here are closed")
	}
	if got := len(changes); got != 2 || changes[0] != "+ada" || changes[1] != "-ada" {
		t.Errorf("changes %v, want one +ada and one -ada", changes)
	}

	p.heard(PresenceUpdate{Origin: "x", Online: []string{"bob"}})
	p.heard(PresenceUpdate{Origin: "y", Online: []string{"bob", "cy"}})
	p.heard(PresenceUpdate{Origin: "x", Offline: []string{"bob"}})
	if !p.online("bob") {
		t.Error("y still says bob is online")
	}
	p.heard(PresenceUpdate{Origin: "y", Full: true, Online: []string{"cy"}})
	if p.online("bob") || !p.online("cy") {
		t.Error("y's full update says cy alone")
	}
	now = now.Add(presenceTTL + time.Second)
	if p.online("cy") {
		t.Error("y has been silent past the TTL")
	}
}

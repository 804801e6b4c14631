package handlers_test

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// replayUntil reads a resumed stream's events up to the message whose
// data has end, and returns those before it.
func replayUntil(t *testing.T, s *stream, end string) []sseEvent {
	t.Helper()
	var got []sseEvent
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended before %q; got %+v", end, got)
			}
			if ev.name == "" && strings.Contains(ev.data, end) {
				return got
			}
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("no %q in the replay; got %+v", end, got)
		}
	}
}

// TestReplayLeavesNoTraceOfDeleted (issue 37, fault 3): a message edited
// to a secret and then deleted is replayed as its delete alone, without
// the edit's text; and a member who joined after the changes gets none of
// them (a change made after they joined they do get).
func TestReplayLeavesNoTraceOfDeleted(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob, dan := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("dan"))
	room := roomWith(t, ada, bob)
	postMessage(t, ada, room, "anchor")
	anchor := latestID(t, room, "anchor")
	postMessage(t, ada, room, "to be edited")
	m := latestID(t, room, "to be edited")
	base := "/rooms/" + room + "/messages/"
	if p := ada.post(base+m+"/edit", url.Values{"content": {"the password is hunter2"}}); p.StatusCode >= 400 {
		t.Fatalf("edit: %d", p.StatusCode)
	}
	if p := bob.post(base+anchor+"/reactions", url.Values{"emoji": {"🎉"}}); p.StatusCode >= 400 {
		t.Fatalf("react: %d", p.StatusCode)
	}
	if p := ada.post(base+m+"/delete", confirmed()); p.StatusCode >= 400 {
		t.Fatalf("delete: %d", p.StatusCode)
	}
	postMessage(t, ada, room, "end one")

	got := replayUntil(t, bob.subscribe(t, room, anchor), "end one")
	var kinds []string
	for _, ev := range got {
		kinds = append(kinds, ev.name)
		if strings.Contains(ev.data, "hunter2") {
			t.Errorf("a member's replay sends the deleted message's edited text: %s %s", ev.name, ev.data)
		}
	}
	if strings.Join(kinds, ",") != "reaction,delete" {
		t.Errorf("a member's replay: %v, want the reaction and the delete", kinds)
	}

	if p := dan.post("/rooms/"+room+"/join", nil); p.StatusCode >= 400 {
		t.Fatalf("join: %d", p.StatusCode)
	}
	if p := ada.post(base+anchor+"/reactions", url.Values{"emoji": {"👍"}}); p.StatusCode >= 400 {
		t.Fatalf("react: %d", p.StatusCode)
	}
	postMessage(t, ada, room, "end two")
	got = replayUntil(t, dan.subscribe(t, room, anchor), "end two")
	kinds = nil
	for _, ev := range got {
		if ev.name == "" {
			continue // a message, whose menu offers every reaction
		}
		kinds = append(kinds, ev.name)
		if strings.Contains(ev.data, "hunter2") || strings.Contains(ev.data, "🎉") {
			t.Errorf("the replay of one who joined after sends a change from before: %s %s", ev.name, ev.data)
		}
	}
	if strings.Join(kinds, ",") != "reaction" || !strings.Contains(got[len(got)-1].data, "👍") {
		t.Errorf("the replay of one who joined after: %v, want the one reaction made since", kinds)
	}
}

package live

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

const firstTimeUUID = "00000000-0000-1000-8000-000000000000"

// TestHubEncodesAnEventOnce: every subscriber of a room gets the same
// event, encoded once as stream bytes (id line, data lines), not a copy
// to encode per connection.
func TestHubEncodesAnEventOnce(t *testing.T) {
	hub := NewLocalHub()
	a := hub.Subscribe("r", Subscriber{Login: "a"})
	b := hub.Subscribe("r", Subscriber{Login: "b"})
	defer a.Close()
	defer b.Close()
	id, _ := chat.ParseMessageID(firstTimeUUID)
	m := chat.Message{ID: id, Room: "r"}
	if err := hub.Publish(context.Background(), Event{Kind: KindMessage, Conversation: "r", Message: &m, HTML: []byte("<li>x\ny</li>")}); err != nil {
		t.Fatal(err)
	}
	evA, evB := <-a.C, <-b.C
	if evA != evB {
		t.Fatal("the subscribers got two copies of the event")
	}
	want := "id: " + firstTimeUUID + "\ndata: <li>x\ndata: y</li>\n\n"
	if got := evA.frame; !bytes.Equal(got, []byte(want)) {
		t.Fatalf("frame %q, want %q", got, want)
	}
}

// TestFanOutKeepsOrderOnEveryShard: the fan-out runs on several
// goroutines; each subscriber, whichever runs it, gets every event
// published after it subscribed, in publication order.
func TestFanOutKeepsOrderOnEveryShard(t *testing.T) {
	hub := NewLocalHub()
	defer hub.Close()
	const subs, events, batch = 40, 320, 32 // a batch fits a queue (64)
	var done sync.WaitGroup
	errs := make(chan string, subs)
	read := make(chan struct{}, subs*events/batch)
	for i := 0; i < subs; i++ {
		sub := hub.Subscribe("r", Subscriber{Login: fmt.Sprint("u", i)})
		done.Add(1)
		go func() {
			defer done.Done()
			defer sub.Close()
			for want := 0; want < events; want++ {
				select {
				case ev := <-sub.C:
					if got := string(ev.HTML); got != fmt.Sprint(want) {
						errs <- fmt.Sprintf("subscriber %d: event %s where %d was due", i, got, want)
						return
					}
					if want%batch == batch-1 {
						read <- struct{}{}
					}
				case <-sub.Dropped:
					errs <- fmt.Sprintf("subscriber %d dropped at event %d", i, want)
					return
				case <-time.After(10 * time.Second):
					errs <- fmt.Sprintf("subscriber %d: event %d never came", i, want)
					return
				}
			}
		}()
	}
	for n := 0; n < events; n++ {
		_ = hub.Publish(context.Background(), Event{Kind: KindParticipants, Conversation: "r", HTML: []byte(fmt.Sprint(n))})
		if n%batch == batch-1 { // every subscriber read the batch, or failed
			for k := 0; k < subs; k++ {
				select {
				case <-read:
				case <-time.After(10 * time.Second):
					t.Fatal("the subscribers did not read a batch in 10 s")
				}
			}
		}
	}
	done.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestLeavingStopsTheWatch: once a person leaves a room (or is removed:
// the hub's StreamEnd for them and the room), their watches hear nothing
// more of it, neither that it got a message nor what the message says;
// their other rooms and other people's watches are heard as before.
func TestLeavingStopsTheWatch(t *testing.T) {
	hub := NewLocalHub()
	defer hub.Close()
	ada := hub.WatchConversations([]string{"r", "s"}, "ada")
	bob := hub.WatchConversations([]string{"r"}, "bob")
	defer ada.Close()
	defer bob.Close()
	post := func(room string) {
		id, _ := chat.ParseMessageID(firstTimeUUID)
		m := chat.Message{ID: id, Room: room, Author: chat.UserRef{Login: "cy"}, Content: "secret"}
		if err := hub.Publish(context.Background(), Event{Kind: KindMessage, Conversation: room, Message: &m}); err != nil {
			t.Fatal(err)
		}
	}
	if err := hub.EndStreams(context.Background(), StreamEnd{Login: "ada", Room: "r"}); err != nil {
		t.Fatal(err)
	}
	post("r")
	post("s")
	select {
	case u := <-bob.C:
		if u.Conversation != "r" {
			t.Errorf("bob heard %q", u.Conversation)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("bob, still in r, heard nothing")
	}
	select {
	case u := <-ada.C:
		if u.Conversation != "s" {
			t.Fatalf("ada, who left r, heard %q (%q)", u.Conversation, u.Message.Content)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("ada heard nothing of s")
	}
	select {
	case u := <-ada.C:
		t.Errorf("ada heard %q after leaving", u.Conversation)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestShardRoomKeepsSubscriptionOrder: a shard writes a room's streams in
// the order they subscribed, and keeps that order, each once, as
// subscriptions go and the list is compacted.
func TestShardRoomKeepsSubscriptionOrder(t *testing.T) {
	r := &shardRoom{at: map[*Subscription]int{}}
	subs := make([]*Subscription, 40)
	for i := range subs {
		subs[i] = &Subscription{room: fmt.Sprint(i)}
		r.add(subs[i])
	}
	r.add(subs[3]) // twice: still once
	want := []*Subscription{}
	for i, s := range subs {
		if i%3 == 0 {
			r.remove(s)
		} else {
			want = append(want, s)
		}
	}
	r.remove(subs[0]) // gone already
	extra := &Subscription{room: "late"}
	r.add(extra)
	want = append(want, extra)
	var got []*Subscription
	for _, s := range r.subs {
		if s != nil {
			got = append(got, s)
		}
	}
	if len(got) != len(want) || len(r.at) != len(want) {
		t.Fatalf("%d subscriptions listed, %d indexed, want %d", len(got), len(r.at), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("position %d: subscription %s, want %s", i, got[i].room, want[i].room)
		}
		if r.subs[r.at[want[i]]] != want[i] {
			t.Fatalf("subscription %s indexed at the wrong place", want[i].room)
		}
	}
	if r.holes*4 >= len(r.subs) && r.holes > 0 {
		t.Fatalf("%d holes in %d: never compacted", r.holes, len(r.subs))
	}
}

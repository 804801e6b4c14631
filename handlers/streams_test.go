package handlers_test

// Tests of the live stream's hardening: data that cannot forge events,
// caps on open streams, replay page by page under a bound on concurrent
// replays, and streams that end when their reader may no longer read.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/securecookie"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/live/ssetest"
)

// specStream is a room stream read with the HTML standard's parser, which
// ends lines at "\r" as browsers do.
type specStream struct {
	records chan ssetest.SpecRecord
	status  int
	cancel  context.CancelFunc
	done    chan struct{}
}

func (c *client) specSubscribe(t *testing.T, room string) *specStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/rooms/"+room+"/events", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &specStream{records: make(chan ssetest.SpecRecord, 1000), status: resp.StatusCode, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.records)
		defer resp.Body.Close()
		_ = ssetest.ParseSpecStream(resp.Body, func(r ssetest.SpecRecord) bool {
			s.records <- r
			return true
		})
	}()
	t.Cleanup(func() {
		s.cancel()
		<-s.done
	})
	return s
}

// TestStreamDataCannotForgeEvents posts messages whose lone carriage
// returns would, to a parser that ends lines at "\r", end the message's
// data line and start fields of their own: a "room-deleted" event that
// sends every viewer home, or an id that a reconnect would resume from.
// Read with such a parser, the stream carries each message as exactly one
// event with its own id, and nothing else.
func TestStreamDataCannotForgeEvents(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	poster, reader := a.signedUp(t, unique("poster")), a.signedUp(t, unique("reader"))
	room := roomWith(t, poster, reader)
	for name, content := range map[string]string{
		"ForgedEvent": "hi\r\revent: room-deleted\rdata: x\r\rtail",
		// In text, since the store trims the spaces (CRs too) around a message.
		"ForgedID": "hi\r\rid: ffffffff-ffff-1fff-bfff-ffffffffffff\r\rtail",
	} {
		t.Run(name, func(t *testing.T) {
			s := reader.specSubscribe(t, room)
			if s.status != http.StatusOK {
				t.Fatalf("events: %d", s.status)
			}
			postMessage(t, poster, room, content)
			id := lastStored(t, room)
			postMessage(t, poster, room, "sentinel")
			sentinel := lastStored(t, room)

			var got []ssetest.SpecRecord
			timeout := time.After(5 * time.Second)
			for len(got) == 0 || got[len(got)-1].LastID != sentinel {
				select {
				case r, ok := <-s.records:
					if !ok {
						t.Fatalf("stream ended after %+v", got)
					}
					got = append(got, r)
				case <-timeout:
					t.Fatalf("no sentinel within 5s; read %+v", got)
				}
			}
			var events []ssetest.SpecRecord
			for _, r := range got {
				if r.LastID != "" && r.LastID != id && r.LastID != sentinel {
					t.Errorf("the stream set the last event id to %q", r.LastID)
				}
				if r.Name != "" {
					t.Errorf("the stream carried an event named %q (data %q)", r.Name, r.Data)
				}
				if r.Dispatched {
					events = append(events, r)
				}
			}
			if len(events) != 2 {
				t.Fatalf("%d events for 2 messages: %+v", len(events), events)
			}
			if events[0].LastID != id || !strings.Contains(events[0].Data, `id="msg-`+id+`"`) ||
				!strings.Contains(events[0].Data, "tail") {
				t.Errorf("the message's event: %+v, want id %s and the whole message", events[0], id)
			}
			if events[1].LastID != sentinel || !strings.Contains(events[1].Data, "sentinel") {
				t.Errorf("the next event: %+v", events[1])
			}
		})
	}
}

func withStreamCaps(perUser, perIP int) appOption {
	return func(c *handlers.Config) { c.MaxStreamsPerUser, c.MaxStreamsPerIP = perUser, perIP }
}

// openStreams opens n streams of c on room, all accepted.
func openStreams(t *testing.T, c *client, room string, n int) []*stream {
	t.Helper()
	var out []*stream
	for i := 0; i < n; i++ {
		s := c.subscribe(t, room, "")
		if s.status != http.StatusOK {
			t.Fatalf("stream %d: %d", i, s.status)
		}
		out = append(out, s)
	}
	return out
}

// refused checks that a stream was refused as over a cap.
func refused(t *testing.T, s *stream, what string) {
	t.Helper()
	if s.status != http.StatusTooManyRequests || s.header.Get("Retry-After") == "" {
		t.Fatalf("%s: %d, Retry-After %q; want 429 with Retry-After", what, s.status, s.header.Get("Retry-After"))
	}
}

// allReceive checks that every stream gets a message that says text
// (after system messages, such as the one a leave posts).
func allReceive(t *testing.T, streams []*stream, text string) {
	t.Helper()
	for i, s := range streams {
		for {
			_, ev := s.nextMessage(t, 5*time.Second)
			if strings.Contains(ev.data, text) {
				break
			}
			if !strings.Contains(ev.data, `class="message system"`) {
				t.Fatalf("stream %d got %s, want %q", i, ev.data, text)
			}
		}
	}
}

// eventually retries a stream until try accepts it (the server notices a
// closed stream a moment after the client closes it).
func eventually(t *testing.T, what string, try func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !try() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStreamCapPerUser: a user's streams beyond the cap are refused with
// 429 and Retry-After; the open ones keep delivering, other users are not
// held back, and a closed stream gives its place back.
func TestStreamCapPerUser(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil, withStreamCaps(3, 100))
	alice, bob := a.signedUp(t, unique("alice")), a.signedUp(t, unique("bob"))
	room, other := roomWith(t, alice, bob), roomWith(t, alice, bob)

	open := openStreams(t, alice, room, 2)
	open = append(open, openStreams(t, alice, other, 1)...)
	refused(t, alice.subscribe(t, room, ""), "alice's 4th stream")
	refused(t, alice.subscribe(t, other, ""), "alice's 4th stream, in another room")

	postMessage(t, bob, room, "still live")
	allReceive(t, open[:2], "still live")
	openStreams(t, bob, room, 3)

	open[0].close()
	eventually(t, "a stream after alice closed one", func() bool {
		s := alice.subscribe(t, room, "")
		defer s.close()
		return s.status == http.StatusOK
	})
}

// TestStreamCapPerIP: streams from one client IP beyond its cap are
// refused, whoever opens them; the open ones keep delivering.
func TestStreamCapPerIP(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil, withStreamCaps(10, 4))
	alice, bob := a.signedUp(t, unique("alice")), a.signedUp(t, unique("bob"))
	room := roomWith(t, alice, bob)

	open := append(openStreams(t, alice, room, 3), openStreams(t, bob, room, 1)...)
	refused(t, bob.subscribe(t, room, ""), "bob's stream over the IP's cap")
	refused(t, alice.subscribe(t, room, ""), "alice's stream over the IP's cap")
	postMessage(t, bob, room, "still live")
	allReceive(t, open, "still live")

	open[0].close()
	eventually(t, "a stream after one from the address closed", func() bool {
		s := bob.subscribe(t, room, "")
		defer s.close()
		return s.status == http.StatusOK
	})
}

// seed stores n messages of size characters in room, directly, with a few
// writers at once; it returns them oldest first.
func seed(t *testing.T, room string, n, size int) []chat.Message {
	t.Helper()
	header, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatal(err)
	}
	author, err := db.User(ctxT(t), header.CreatorLogin)
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.RoomFor(ctxT(t), room, author.Login) // with the author's standing
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				text := fmt.Sprintf("seed %d ", i)
				text += strings.Repeat("x", max(0, size-len(text)))
				if _, err := db.PostMessage(ctxT(t), r, author.Ref(), text); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	all, _, err := db.MessagesAfter(ctxT(t), r, zeroUUID, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

const firstTimeUUID = "00000000-0000-1000-8000-000000000000"

var zeroUUID, _ = chat.ParseMessageID(firstTimeUUID)

// TestReplayReadsPages: a replay of 130 messages comes out exact, in order,
// read from Cassandra a page at a time (no read of messages asks for more
// than a page and one), not in one read of the whole backlog.
func TestReplayReadsPages(t *testing.T) {
	a := newApp(t, nil, nil)
	alice := a.signedUp(t, unique("alice"))
	room := roomWith(t, alice)
	stored := seed(t, room, 130, 20)

	db.Recorder.Start()
	s := alice.subscribe(t, room, stored[0].ID.String())
	for _, want := range stored[1:] {
		if id, _ := s.nextMessage(t, 5*time.Second); id != want.ID.String() {
			t.Fatalf("replayed %s, want %s", id, want.ID)
		}
	}
	s.quiet(t, 200*time.Millisecond)
	reads := 0
	for _, q := range db.Recorder.Stop() {
		// Reads of messages; the count of a backlog reads ids alone.
		if !strings.Contains(q.Statement, "content") || !strings.Contains(q.Statement, "FROM chat_room_messages") || q.Values[0] != room {
			continue
		}
		reads++
		if limit, ok := q.Values[len(q.Values)-1].(int); !ok || limit > 51 {
			t.Errorf("a replay read asks for %v rows: %s", q.Values[len(q.Values)-1], q.Statement)
		}
	}
	if reads < 3 {
		t.Errorf("129 messages replayed in %d reads, want pages of at most 50", reads)
	}
}

// TestReplayTooMuchMissed: a client that missed more than a replay gives
// is told to reload the page, before any message is sent.
func TestReplayTooMuchMissed(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	alice := a.signedUp(t, unique("alice"))
	room := roomWith(t, alice)
	seed(t, room, 5001, 10)
	s := alice.subscribe(t, room, firstTimeUUID)
	select {
	case ev, ok := <-s.events:
		if !ok || ev.name != "reload" {
			t.Fatalf("first event %+v (open %v), want reload", ev, ok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	s.quiet(t, 2*time.Second) // and the stream ends with no message
}

// TestReplaySlots: with every replay slot taken by a client that does not
// read, another replay waits briefly and is refused with 503 and
// Retry-After; a stream with nothing to replay needs no slot; and the slot
// comes free when the stalled client goes.
func TestReplaySlots(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.MaxReplays, c.ReplayWait = 1, 300*time.Millisecond })
	alice, bob := a.signedUp(t, unique("alice")), a.signedUp(t, unique("bob"))
	room := roomWith(t, alice, bob)
	// More than the kernel buffers of a connection hold (4 MB), so the
	// replay to a client that does not read stalls, holding its slot.
	stored := seed(t, room, 2000, 4000)

	stalled := openStalled(t, a, alice, room, "Last-Event-ID: "+firstTimeUUID)
	defer stalled.Close()
	_ = stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	// The status line is written once the replay holds its slot.
	if line, err := bufio.NewReaderSize(stalled, 16).ReadString('\n'); err != nil || !strings.Contains(line, " 200 ") {
		t.Fatalf("stalled replay: %q %v", line, err)
	}

	busy := bob.subscribe(t, room, stored[0].ID.String())
	if busy.status != http.StatusServiceUnavailable || busy.header.Get("Retry-After") == "" {
		t.Fatalf("replay with every slot taken: %d, Retry-After %q; want 503 with Retry-After", busy.status, busy.header.Get("Retry-After"))
	}
	if live := bob.subscribe(t, room, ""); live.status != http.StatusOK {
		t.Fatalf("stream with nothing to replay: %d", live.status)
	}

	stalled.Close()
	eventually(t, "a replay after the stalled client went", func() bool {
		s := bob.subscribe(t, room, stored[len(stored)-3].ID.String())
		defer s.close()
		if s.status != http.StatusOK {
			return false
		}
		id, _ := s.nextMessage(t, 5*time.Second)
		return id == stored[len(stored)-2].ID.String()
	})
}

// ended waits for the server to end the stream.
func (s *stream) ended(t testing.TB, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("the stream is still open after %v", within)
		}
	}
}

// login starts another session of an existing user.
func (a *app) login(t *testing.T, login string) *client {
	t.Helper()
	c := a.client(t)
	if p := c.post("/login", url.Values{"login": {login}, "password": {"password1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("log in %s: %d %s", login, p.StatusCode, text(p, "main"))
	}
	return c
}

// sessionID is the id of the client's session, from its signed cookie.
func (c *client) sessionID(t *testing.T) string {
	t.Helper()
	var id string
	if err := securecookie.New(testKey, nil).Decode("killrchat_session", c.cookie("killrchat_session"), &id); err != nil || id == "" {
		t.Fatalf("session cookie: %v", err)
	}
	return id
}

// TestStreamsEndOnLeave: leaving a room ends the leaver's streams of that
// room (every tab), not their streams of other rooms nor anyone else's;
// a new stream of that room is refused.
func TestStreamsEndOnLeave(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	alice, bob := a.signedUp(t, unique("alice")), a.signedUp(t, unique("bob"))
	room, other := roomWith(t, alice, bob), roomWith(t, alice, bob)
	leaving := openStreams(t, bob, room, 2)
	kept := openStreams(t, bob, other, 1)
	others := openStreams(t, alice, room, 1)

	if p := bob.post("/rooms/"+room+"/leave", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("leave: %d", p.StatusCode)
	}
	for _, s := range leaving {
		s.ended(t, 5*time.Second)
	}
	postMessage(t, alice, room, "after bob left")
	allReceive(t, others, "after bob left")
	postMessage(t, alice, other, "in the other room")
	allReceive(t, kept, "in the other room")
	if s := bob.subscribe(t, room, ""); s.status != http.StatusForbidden {
		t.Errorf("a stream after leaving: %d, want 403", s.status)
	}
}

// TestStreamsEndOnLeaveOtherCase: a leave that names the room in another
// case than its key (the form streams and events go by) still ends the
// leaver's streams of it.
func TestStreamsEndOnLeaveOtherCase(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	alice, bob := a.signedUp(t, unique("alice")), a.signedUp(t, unique("bob"))
	room := unique("CaseRoom")
	if p := alice.post("/rooms", url.Values{"room_name": {room}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("create room: %d %s", p.StatusCode, text(p, "main"))
	}
	if p := bob.post("/rooms/"+room+"/join", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("join: %d", p.StatusCode)
	}
	s := openStreams(t, bob, strings.ToLower(room), 1)
	if p := bob.post("/rooms/"+room+"/leave", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("leave: %d", p.StatusCode)
	}
	s[0].ended(t, 5*time.Second)
}

// TestStreamsEndOnLogout: logging out ends the streams that session opened,
// in every room; the same person's other session keeps its streams.
func TestStreamsEndOnLogout(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	bobLogin := unique("bob")
	alice, bob := a.signedUp(t, unique("alice")), a.signedUp(t, bobLogin)
	room, other := roomWith(t, alice, bob), roomWith(t, alice, bob)
	bobElsewhere := a.login(t, bobLogin)
	leaving := append(openStreams(t, bob, room, 1), openStreams(t, bob, other, 1)...)
	kept := openStreams(t, bobElsewhere, room, 1)

	if p := bob.post("/logout", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", p.StatusCode)
	}
	for _, s := range leaving {
		s.ended(t, 5*time.Second)
	}
	postMessage(t, alice, room, "after the logout")
	allReceive(t, kept, "after the logout")
}

// TestStreamsEndWhenSessionReplaced: logging in as someone else in the same
// browser deletes the previous session, and ends its streams.
func TestStreamsEndWhenSessionReplaced(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	aliceLogin := unique("alice")
	alice, bob := a.signedUp(t, aliceLogin), a.signedUp(t, unique("bob"))
	room := roomWith(t, alice, bob)
	s := bob.subscribe(t, room, "")
	if p := bob.post("/login", url.Values{"login": {aliceLogin}, "password": {"password1"}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("log in as alice: %d", p.StatusCode)
	}
	s.ended(t, 5*time.Second)
}

// TestStreamEndsAcrossInstances: streams open on instance B end when the
// leave, logout, revocation or deletion happens on instance A, through
// NATS.
func TestStreamEndsAcrossInstances(t *testing.T) {
	t.Parallel()
	ns := startNATS(t, -1)
	var logsA, logsB syncBuffer
	a, b := instance(t, ns.ClientURL(), &logsA), instance(t, ns.ClientURL(), &logsB)
	bobLogin := unique("bob")
	alice, bob := a.signedUp(t, unique("alice")), a.signedUp(t, bobLogin)
	room, other := roomWith(t, alice, bob), roomWith(t, alice, bob)

	t.Run("Leave", func(t *testing.T) {
		leaving := openStreams(t, bob.on(b), room, 1)
		kept := openStreams(t, bob.on(b), other, 1)
		if p := bob.post("/rooms/"+room+"/leave", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("leave: %d", p.StatusCode)
		}
		leaving[0].ended(t, 5*time.Second)
		postMessage(t, alice, other, "still here")
		allReceive(t, kept, "still here")
	})

	t.Run("RevokeSessions", func(t *testing.T) {
		second := a.login(t, bobLogin)
		first := openStreams(t, bob.on(b), other, 1)
		others := openStreams(t, second.on(b), other, 1)
		// Nothing to end: an empty list of sessions is not "every session".
		a.srv.EndStreams(ctxT(t), live.StreamEnd{Login: bobLogin, Sessions: []string{}})
		// Every session but the first, as a password change does.
		a.srv.EndStreams(ctxT(t), live.StreamEnd{Login: bobLogin, Except: bob.sessionID(t)})
		others[0].ended(t, 5*time.Second)
		postMessage(t, alice, other, "first session only")
		allReceive(t, first, "first session only")
		// The listed sessions only.
		a.srv.EndStreams(ctxT(t), live.StreamEnd{Login: bobLogin, Sessions: []string{bob.sessionID(t)}})
		first[0].ended(t, 5*time.Second)
	})

	t.Run("Logout", func(t *testing.T) {
		s := openStreams(t, bob.on(b), other, 1)
		if p := bob.post("/logout", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d", p.StatusCode)
		}
		s[0].ended(t, 5*time.Second)
	})

	t.Run("RoomDeleted", func(t *testing.T) {
		carol := b.signedUp(t, unique("carol"))
		if p := carol.post("/rooms/"+other+"/join", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("join: %d", p.StatusCode)
		}
		s := openStreams(t, carol, other, 1)
		if p := alice.post("/rooms/"+other+"/delete", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete: %d", p.StatusCode)
		}
		select {
		case ev := <-s[0].events:
			if ev.name != live.KindRoomDeleted {
				t.Fatalf("event %+v, want %s", ev, live.KindRoomDeleted)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no room-deleted event within 5s")
		}
		s[0].ended(t, 5*time.Second)
	})
}

// TestSessionExpiryEndsStreams: a session whose row expires by its TTL
// (no logout, nothing published) ends its open streams.
func TestSessionExpiryEndsStreams(t *testing.T) {
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	id, err := a.srv.SessionIDFromCookie(ada.cookie("killrchat_session"))
	if err != nil {
		t.Fatal(err)
	}
	row, err := db.Store.Session(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	// The same session, with 3 seconds left.
	if err := db.SaveSession(ctxT(t), id, row, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	s := ada.subscribe(t, room, "")
	if s.status != http.StatusOK {
		t.Fatalf("events: %d", s.status)
	}
	s.ended(t, 10*time.Second)
}

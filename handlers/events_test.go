package handlers_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/r3labs/sse/v2"

	"github.com/killrchat/killrchat/chat"
)

// sseEvent is one event read off a stream.
type sseEvent struct {
	id, name, data string
}

// stream is a live room stream read by a test.
type stream struct {
	events chan sseEvent
	status int
	header http.Header
	cancel context.CancelFunc
	done   chan struct{}
}

// subscribe opens a room's event stream; lastID, if set, resumes after it.
func (c *client) subscribe(t testing.TB, room, lastID string) *stream {
	t.Helper()
	return c.subscribePath(t, "/rooms/"+room+"/events", lastID)
}

func (c *client) subscribePath(t testing.TB, path, lastID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	req.Header.Set("HX-Request", "true")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &stream{events: make(chan sseEvent, 10000), status: resp.StatusCode, header: resp.Header, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.events)
		defer resp.Body.Close()
		// The library's own reader checks that the stream is standard SSE.
		reader := sse.NewEventStreamReader(resp.Body, 1<<20)
		for {
			raw, err := reader.ReadEvent()
			if err != nil {
				return
			}
			var ev sseEvent
			var data []string
			for _, line := range strings.Split(string(raw), "\n") {
				switch {
				case strings.HasPrefix(line, ":"):
				case strings.HasPrefix(line, "id: "):
					ev.id = strings.TrimPrefix(line, "id: ")
				case strings.HasPrefix(line, "event: "):
					ev.name = strings.TrimPrefix(line, "event: ")
				case strings.HasPrefix(line, "data: "):
					data = append(data, strings.TrimPrefix(line, "data: "))
				}
			}
			if len(data) > 0 {
				ev.data = strings.Join(data, "\n")
				s.events <- ev
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *stream) close() {
	s.cancel()
	<-s.done
}

var msgIDPattern = regexp.MustCompile(`id="msg-([0-9a-f-]{36})"`)

// nextMessage waits for the next chat message event and returns its id.
func (s *stream) nextMessage(t testing.TB, within time.Duration) (string, sseEvent) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("stream ended")
			}
			if m := msgIDPattern.FindStringSubmatch(ev.data); m != nil && ev.name == "" {
				// The event's id is a cursor: the message's own id, or,
				// across instances, an id below it (live/watermark).
				if cur, err := chat.ParseMessageID(ev.id); err != nil || (ev.id != m[1] && !mustID(t, m[1]).After(cur)) {
					t.Fatalf("event id %q is not a cursor at or below message id %q", ev.id, m[1])
				}
				return m[1], ev
			}
		case <-timeout:
			t.Fatalf("no message within %v", within)
		}
	}
}

// messageWith waits for the chat message whose data contains want,
// passing over any other. Across instances a message stored before a
// stream opened may still be on its way through the broker when it does
// (a page drops it by id), so a test that looks for one message must not
// take the first one that comes.
func (s *stream) messageWith(t testing.TB, want string, within time.Duration) (string, sseEvent) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("no message with %q within %v", want, within)
		}
		id, ev := s.nextMessage(t, left)
		if strings.Contains(ev.data, want) {
			return id, ev
		}
	}
}

// quiet checks that no chat message arrives for d.
func (s *stream) quiet(t testing.TB, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-s.events:
			if ok && msgIDPattern.MatchString(ev.data) {
				t.Fatalf("unexpected extra message: %s", ev.data)
			}
			if !ok {
				return
			}
		case <-timeout:
			return
		}
	}
}

// roomWith returns a room with the given clients as participants.
func roomWith(t *testing.T, owner *client, others ...*client) string {
	t.Helper()
	name := createRoom(t, owner)
	for _, o := range others {
		if p := o.post("/rooms/"+name+"/join", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("join: %d", p.StatusCode)
		}
	}
	return name
}

func postMessage(t testing.TB, c *client, room, content string) {
	t.Helper()
	if p := c.post("/rooms/"+room+"/messages", url.Values{"content": {content}}); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("post: %d %s", p.StatusCode, text(p, "main"))
	}
}

func TestEventsResumeWithLastEventID(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	poster, reader := a.signedUp(t, unique("poster")), a.signedUp(t, unique("reader"))
	room := roomWith(t, poster, reader)

	s := reader.subscribe(t, room, "")
	if s.status != http.StatusOK {
		t.Fatalf("events: %d", s.status)
	}
	postMessage(t, poster, room, "before the break")
	last, _ := s.nextMessage(t, 5*time.Second)
	s.close()

	for i := 0; i < 20; i++ {
		postMessage(t, poster, room, fmt.Sprintf("missed %d", i))
	}
	r, err := db.Room(ctxT(t), room)
	if err != nil {
		t.Fatal(err)
	}
	lastID, _ := chat.ParseMessageID(last)
	stored, _, err := db.MessagesAfter(ctxT(t), r, lastID, 100)
	if err != nil || len(stored) != 20 {
		t.Fatalf("stored after %s: %d %v", last, len(stored), err)
	}

	s = reader.subscribe(t, room, last)
	for i, want := range stored {
		id, ev := s.nextMessage(t, 5*time.Second)
		if id != want.ID.String() || !strings.Contains(ev.data, fmt.Sprintf("missed %d", i)) {
			t.Fatalf("replayed #%d = %s, want %s (%s)", i, id, want.ID, want.Content)
		}
	}
	s.quiet(t, 300*time.Millisecond)

	postMessage(t, poster, room, "live again")
	_, ev := s.nextMessage(t, 5*time.Second)
	if !strings.Contains(ev.data, "live again") {
		t.Fatalf("live message: %s", ev.data)
	}
	s.quiet(t, 300*time.Millisecond)

	t.Run("AfterQuery", func(t *testing.T) {
		// ?after= is the page's own starting point, for the first connect.
		req := reader.subscribeURL(t, room, "?after="+url.QueryEscape(stored[17].ID.String()))
		for _, want := range stored[18:] {
			if id, _ := req.nextMessage(t, 5*time.Second); id != want.ID.String() {
				t.Fatalf("got %s want %s", id, want.ID)
			}
		}
	})
}

// subscribeURL opens the stream with a query string.
func (c *client) subscribeURL(t testing.TB, room, query string) *stream {
	return c.subscribePath(t, "/rooms/"+room+"/events"+query, "")
}

func TestEventsSecurity(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner, stranger := a.signedUp(t, unique("owner")), a.signedUp(t, unique("stranger"))
	room := roomWith(t, owner)
	if s := stranger.subscribe(t, room, ""); s.status != http.StatusForbidden {
		t.Errorf("non-participant events: %d", s.status)
	}
	if p := stranger.post("/rooms/"+room+"/messages", url.Values{"content": {"hi"}}); p.StatusCode != http.StatusForbidden {
		t.Errorf("non-participant post: %d", p.StatusCode)
	}
	if s := owner.subscribe(t, room, "not-a-uuid"); s.status != http.StatusBadRequest {
		t.Errorf("bad Last-Event-ID: %d", s.status)
	}
}

// TestSlowSubscriberDoesNotDelayOthers opens one stream that never reads
// (with a tiny receive buffer, so the server's writes stall) and one that
// reads, posts many large messages, and checks that the reader gets every
// one promptly, posting never blocks, and the stalled stream is dropped.
func TestSlowSubscriberDoesNotDelayOthers(t *testing.T) {
	a := newApp(t, nil, nil)
	poster, reader := a.signedUp(t, unique("poster")), a.signedUp(t, unique("reader"))
	room := roomWith(t, poster, reader)

	stalled := openStalled(t, a, reader, room)
	defer stalled.Close()
	live := reader.subscribe(t, room, "")

	const n = 1000
	body := strings.Repeat("x", 3900)
	var worst time.Duration
	var total time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		postMessage(t, poster, room, fmt.Sprintf("%d %s", i, body))
		_, ev := live.nextMessage(t, 10*time.Second)
		if !strings.Contains(ev.data, fmt.Sprintf(">%d x", i)) {
			t.Fatalf("message %d out of order: %.60s", i, ev.data)
		}
		d := time.Since(start)
		total += d
		worst = max(worst, d)
	}
	t.Logf("reader: %d messages, post→event mean %v, worst %v, with a stalled subscriber", n, total/n, worst)

	// The stalled connection was dropped: reading it now gives fewer than
	// n messages and then the end of the stream.
	_ = stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := countMessages(stalled)
	if got >= n {
		t.Fatalf("the stalled subscriber received all %d messages: it was never dropped", got)
	}
	t.Logf("stalled subscriber got %d of %d before it was dropped", got, n)
}

// openStalled opens a stream over a raw connection with a small receive
// buffer and does not read it. headers are extra "Name: value" lines.
func openStalled(t *testing.T, a *app, c *client, room string, headers ...string) net.Conn {
	t.Helper()
	u, _ := url.Parse(a.URL)
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		_ = rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return err
	}}
	conn, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	var cookies []string
	for _, ck := range c.http.Jar.Cookies(u) {
		cookies = append(cookies, ck.Name+"="+ck.Value)
	}
	extra := ""
	for _, h := range headers {
		extra += h + "\r\n"
	}
	fmt.Fprintf(conn, "GET /rooms/%s/events HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\n%s\r\n", room, u.Host, strings.Join(cookies, "; "), extra)
	return conn
}

func countMessages(conn net.Conn) int {
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "id: ") {
			n++
		}
	}
	return n
}

func TestMessagesOverHTTP(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner := a.signedUp(t, unique("writer"))
	room := roomWith(t, owner)

	t.Run("ScriptShownAsText", func(t *testing.T) {
		postMessage(t, owner, room, "<script>alert('x')</script>\nsecond line")
		p := owner.get("/rooms/" + room)
		if p.doc.Find("#messages script").Length() != 0 {
			t.Fatal("a message became a script element")
		}
		if got := p.doc.Find("#messages .message .text").Last().Text(); got != "<script>alert('x')</script>\nsecond line" {
			t.Errorf("message text %q", got)
		}
	})

	t.Run("Validation", func(t *testing.T) {
		p := owner.post("/rooms/"+room+"/messages", url.Values{"content": {"   "}})
		if p.StatusCode != http.StatusUnprocessableEntity || text(p, "#composer .field-error") == "" {
			t.Errorf("empty message: %d %q", p.StatusCode, text(p, "#composer"))
		}
	})

	t.Run("HTMXPost", func(t *testing.T) {
		owner.htmx = true
		defer func() { owner.htmx = false }()
		p := owner.post("/rooms/"+room+"/messages", url.Values{"content": {"via htmx"}})
		if p.StatusCode != http.StatusOK || p.doc.Find("form#composer textarea").Text() != "" {
			t.Fatalf("htmx post: %d", p.StatusCode)
		}
		oob := p.doc.Find(`[hx-swap-oob="beforeend:#messages"] li.message`)
		if oob.Length() != 1 || !strings.Contains(oob.Text(), "via htmx") {
			t.Errorf("no out-of-band message in %s", p.body)
		}
	})

	t.Run("OlderPages", func(t *testing.T) {
		header, _ := db.Room(ctxT(t), room)
		author, _ := db.User(ctxT(t), header.CreatorLogin)
		r, _ := db.RoomFor(ctxT(t), room, author.Login) // with the author's standing
		for i := 0; i < 120; i++ {
			if _, err := db.PostMessage(ctxT(t), r, author.Ref(), fmt.Sprintf("seed %03d", i)); err != nil {
				t.Fatal(err)
			}
		}
		p := owner.get("/rooms/" + room)
		if n := p.doc.Find("#messages li.message").Length(); n != 50 {
			t.Fatalf("room page shows %d messages", n)
		}
		seen := map[string]bool{}
		p.doc.Find("#messages li.message").Each(func(_ int, s *goquery.Selection) { seen[s.AttrOr("id", "")] = true })
		older, ok := p.doc.Find("a.load-older").Attr("href")
		for pages := 0; ok; pages++ {
			p = owner.get(older)
			if p.StatusCode != http.StatusOK {
				t.Fatalf("older page: %d", p.StatusCode)
			}
			p.doc.Find("#messages li.message").Each(func(_ int, s *goquery.Selection) {
				id := s.AttrOr("id", "")
				if seen[id] {
					t.Errorf("message %s shown twice", id)
				}
				seen[id] = true
			})
			older, ok = p.doc.Find("a.load-older").Attr("href")
		}
		if p.doc.Find("li.room-start").Length() != 1 {
			t.Error("the last older page does not mark the start of the room")
		}
		// 120 seeded, 1 posted as a form and 1 through htmx above.
		if len(seen) != 122 {
			t.Errorf("walked %d messages, want 122", len(seen))
		}

		owner.htmx = true
		frag := owner.get(older0(t, owner, room))
		owner.htmx = false
		if frag.doc.Find("aside.sidebar").Length() != 0 || frag.doc.Find("li.message").Length() != 50 {
			t.Errorf("htmx older page is not a fragment of 50 messages")
		}
	})

	t.Run("MalformedBefore", func(t *testing.T) {
		for _, bad := range []string{"nope", "0f8fad5b-d9cb-469f-a165-70867728950e" /* version 4 */, ""} {
			if p := owner.get("/rooms/" + room + "/messages?before=" + bad); p.StatusCode != http.StatusBadRequest {
				t.Errorf("before=%q: %d", bad, p.StatusCode)
			}
		}
	})
}

func older0(t *testing.T, c *client, room string) string {
	t.Helper()
	href, ok := c.get("/rooms/" + room).doc.Find("a.load-older").Attr("href")
	if !ok {
		t.Fatal("no older link")
	}
	return href
}

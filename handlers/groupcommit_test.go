package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live/natshub"
	"github.com/killrchat/killrchat/store"
)

// TestPostsAtOnceAcrossInstances (issue 38): many people post into one
// room at once on instance A, most of them while the first post's
// message write is under way (held), so that their messages are written
// together (store/groupcommit.go). Each post, once answered, is on the
// room's page that instance B serves (B keeps the page in memory: the
// mark the group's write left in the day's partition tells it to read
// again); at the end each message is on the page exactly once and the
// room's head is the newest of them. The posts together cost at most what
// they cost one by one.
func TestPostsAtOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	ns := startNATS(t, -1)
	var room atomic.Value
	room.Store("")
	var armed atomic.Bool
	held, holding := make(chan struct{}), make(chan struct{})
	var holdOnce, releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(held) }) }
	t.Cleanup(release)
	var mu sync.Mutex
	var sent []store.ObservedQuery
	st, err := db.AnotherWith(func(c *store.Config) {
		c.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
		c.Observe = func(q store.ObservedQuery) {
			if !armed.Load() || len(q.Values) == 0 || q.Values[0] != room.Load() {
				return
			}
			mu.Lock()
			sent = append(sent, q)
			mu.Unlock()
			// A write of messages: a batch led by a message.
			if strings.Contains(q.Statement, "INSERT INTO chat_room_messages") && q.Batch && q.BatchIndex == 0 {
				holdOnce.Do(func() {
					close(holding)
					<-held
				})
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	var logs syncBuffer
	hub, err := natshub.New(ns.ClientURL(), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	a := newApp(t, st, hub)
	b := instance(t, ns.ClientURL(), &logs)

	const n = 10
	people := make([]*client, n)
	for i := range people {
		people[i] = a.signedUp(t, unique("many"))
	}
	name := roomWith(t, people[0], people[1:]...)
	room.Store(name)
	postMessage(t, people[0], name, "before")
	onB := make([]*client, n)
	for i, c := range people {
		c.ensureCSRF()
		onB[i] = c.on(b)
		if p := onB[i].get("/rooms/" + name); p.StatusCode != http.StatusOK { // kept on B
			t.Fatalf("B's page: %d", p.StatusCode)
		}
	}

	texts := func(c *client) (map[string]int, error) {
		req, _ := http.NewRequest(http.MethodGet, c.base+"/rooms/"+name, nil)
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET: %d", resp.StatusCode)
		}
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		if err != nil {
			return nil, err
		}
		seen := map[string]int{}
		doc.Find("#messages li[id^='msg-'] .text").Each(func(_ int, s *goquery.Selection) {
			seen[strings.TrimSpace(s.Text())]++
		})
		return seen, nil
	}
	post := func(i int) error {
		c, text := people[i], fmt.Sprintf("at once %d", i)
		form := url.Values{"content": {text}, "_csrf": {c.csrf}}
		req, _ := http.NewRequest(http.MethodPost, c.base+"/rooms/"+name+"/messages", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := c.http.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			return fmt.Errorf("post %d: %d", i, resp.StatusCode)
		}
		seen, err := texts(onB[i])
		if err == nil && seen[text] != 1 {
			err = fmt.Errorf("%q answered, on B's page %d times", text, seen[text])
		}
		return err
	}

	armed.Store(true)
	errs := make(chan error, n)
	go func() { errs <- post(0) }()
	<-holding
	var sending sync.WaitGroup
	for i := 1; i < n; i++ {
		sending.Add(1)
		go func() {
			sending.Done()
			errs <- post(i)
		}()
	}
	sending.Wait()
	// Give the posts a moment to reach the store while the first write is
	// held (they go in one write if they do, one by one if not: either
	// way every check below holds).
	time.Sleep(200 * time.Millisecond)
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	armed.Store(false)

	seen, err := texts(onB[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if text := fmt.Sprintf("at once %d", i); seen[text] != 1 {
			t.Errorf("%q is on B's page %d times", text, seen[text])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	heads, err := db.Heads(ctx, []string{name})
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.Room(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	page, _, err := db.MessagesBefore(ctx, r, chat.ID{}, 50)
	if err != nil {
		t.Fatal(err)
	}
	if newest := page[len(page)-1]; heads[name] != newest.ID {
		t.Errorf("head %s, want the newest message %s (%q)", heads[name], newest.ID, newest.Content)
	}

	mu.Lock()
	defer mu.Unlock()
	statements, batched := 0, 0
	var onPath []store.ObservedQuery
	for _, q := range sent {
		if offPath(q) { // the search index's writes, which follow
			continue
		}
		onPath = append(onPath, q)
		if q.Batch && strings.Contains(q.Statement, "INSERT INTO chat_room_messages") {
			batched++
		}
		if !q.Batch || q.BatchIndex == 0 {
			statements++
		}
	}
	t.Logf("%d posts at once: %d statements sent about the room, %d messages in batches\n%s", n, statements, batched, kinds(onPath))
	if statements > 3*n {
		t.Errorf("%d posts at once sent %d statements about the room, more than 3 each", n, statements)
	}
}

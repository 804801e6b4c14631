package main

// correctness: posters post while subscribers disconnect and reconnect at
// random with Last-Event-ID; at the end every subscriber's received
// sequence of message ids must equal the stored sequence from its first
// connection onward — nothing missing, nothing twice, nothing out of order.
//
// With -cluster, two instances share the keyspace and carry events over
// NATS: posters post to both, and each subscriber loads its page from, and
// reconnects to, either at random. A message of one instance can then be
// published after a newer one of the other, and a resume sends again what
// lies between its cursor and its last event, so the check is on the list a browser
// builds (static/app.js): the page's messages, then each event's message
// unless its id is already there, placed in id order. That list must hold
// every stored message from the page's oldest on, in id order; no
// connection may carry a message twice.
//
// With -changes, posters also edit and delete their messages and react to
// anyone's (see changes.go): each subscriber's view of the messages it
// holds must then equal what Cassandra holds.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// received is one message event as a subscriber saw it.
type received struct {
	id     string // from the data's id="msg-..."
	conn   int    // which connection (0 = first)
	nth    int    // index of the event within its connection
	lastID string // the Last-Event-ID that connection was opened with
	// since is how long after the connection's response headers it came.
	since time.Duration
}

// describe tells how connection k of sub went.
func (sub *subscriber) describe(k int) string {
	if k < 0 || k >= len(sub.connLog) {
		return ""
	}
	c := sub.connLog[k]
	how := "ended by the server"
	if c.cut {
		how = "cut by the client"
	}
	if c.err != "" {
		how += " (" + c.err + ")"
	}
	return fmt.Sprintf("[conn %d: %d events in %dms, %s]", k, c.events, c.closed.Sub(c.opened).Milliseconds(), how)
}

func (r received) String() string {
	return fmt.Sprintf("event #%d of conn %d (+%dms, opened with Last-Event-ID %.8s)", r.nth, r.conn, r.since.Milliseconds(), r.lastID)
}

// connInfo is one connection of a subscriber.
type connInfo struct {
	opened, closed time.Time // response headers in; stream closed
	events         int
	cut            bool // the client cut it (random disconnect); else the server ended it or it failed
	err            string
}

type subscriber struct {
	connLog  []connInfo
	startID  string   // the ?after= of the first connection: newest stored id when it started
	pageIDs  []string // the page's message ids, oldest first (-cluster)
	got      []received
	conns    int
	connErrs int
	anomaly  []string // named events, id/data mismatches
	done     bool
	view     *changeView
}

func runCorrectness(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("correctness", flag.ExitOnError)
	var c common
	c.register(fs)
	nPosters := fs.Int("posters", 10, "posters, each a user posting its messages one after another")
	nMsgs := fs.Int("messages", 1000, "messages per poster")
	rate := fs.Float64("rate", 40, "messages per second per poster (0: as fast as they go)")
	nSubs := fs.Int("subs", 100, "subscribers (sessions of the posters, round robin)")
	minConn := fs.Duration("min-conn", 200*time.Millisecond, "shortest connection before a random disconnect")
	maxConn := fs.Duration("max-conn", 3*time.Second, "longest connection before a random disconnect")
	maxGap := fs.Duration("max-gap", 500*time.Millisecond, "longest pause before reconnecting")
	spread := fs.Duration("start-spread", 3*time.Second, "subscribers start at random within this time")
	nExamples := fs.Int("examples", 15, "mismatches to print")
	limit := fs.Duration("limit", 5*time.Minute, "longest the run may take: posting, then every subscriber catching up (the defaults take about 2 minutes with -cluster on 2 cores, which post about 80 messages a second)")
	brokerRestart := fs.Duration("broker-restart", 0, "with -cluster: this long after posting starts, stop the NATS broker for a second and start it again (0: never)")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed")
	changes := fs.Float64("changes", 0.3, "edits, deletes and reactions per post (0: none)")
	grace := fs.Duration("grace", 2*time.Second, "how long a subscriber keeps reading after the final message, for changes still on their way")
	_ = fs.Parse(args)
	if *nPosters**nMsgs > 50000 || *nSubs > 1000 {
		return fmt.Errorf("keep posters*messages <= 50000 and -subs <= 1000")
	}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Store == nil {
		return fmt.Errorf("correctness reads the stored sequence from Cassandra: give -keyspace with -url")
	}
	logf("app %s at %s, keyspace %s, seed %d", t.Where, t.URL, t.Keyspace, *seed)

	id := runID()
	tr := newTransport(64)
	users, err := signUpMany(ctx, t.URL, "lc"+id+"u", *nPosters, tr)
	if err != nil {
		return err
	}
	roomName := "lcor" + id
	if err := setupRoom(ctx, roomName, users); err != nil {
		return err
	}
	room, err := t.Store.Room(ctx, roomName)
	if err != nil {
		return err
	}
	// pageStart loads the room page as a browser does and returns where its
	// live stream starts (the page's hx-sse:connect ?after=), which is just
	// below the room's publication bound, not simply the newest stored id.
	pageStart := func(ctx context.Context, hc *http.Client, base string) (string, []string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/rooms/"+roomName, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return "", nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		m := streamAfter.FindSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil {
			return "", nil, fmt.Errorf("room page: %s, no stream start", resp.Status)
		}
		var ids []string
		for _, pm := range pageMessage.FindAllSubmatch(body, -1) {
			ids = append(ids, string(pm[1]))
		}
		return string(m[1]), ids, nil
	}
	// bases are the instances: posters alternate between them and
	// subscribers pick one at random for each connection (-cluster).
	bases := []string{t.URL}
	if c.cluster {
		bases = append(bases, t.SubURL)
	}

	var finalID atomic.Value // string, once the posters are done
	finalID.Store("")
	postingDone := make(chan struct{})
	hardDeadline := time.Now().Add(*limit)
	subCtx, stopSubs := context.WithDeadline(ctx, hardDeadline)
	defer stopSubs()

	sseTr := newTransport(0)
	sseTr.DisableKeepAlives = true
	sseTr.MaxIdleConnsPerHost = -1
	var reloads atomic.Int64 // "reload" events, across subscribers
	subs := make([]*subscriber, *nSubs)
	var swg sync.WaitGroup
	for i := range subs {
		sub := &subscriber{view: newChangeView()}
		subs[i] = sub
		rng := rand.New(rand.NewPCG(*seed, uint64(i)))
		hc := &http.Client{Transport: sseTr, Jar: users[i%len(users)].jar}
		swg.Add(1)
		go func() {
			defer swg.Done()
			sleepCtx(subCtx, time.Duration(rng.Int64N(int64(*spread)+1)))
			// Like a page load: the newest stored message, then the stream after it.
			start, pageIDs, err := pageStart(subCtx, hc, bases[rng.IntN(len(bases))])
			if err != nil {
				sub.anomaly = append(sub.anomaly, err.Error())
				return
			}
			sub.startID, sub.pageIDs = start, pageIDs
			seen := map[string]bool{}
			finished := func() bool {
				f, _ := finalID.Load().(string)
				return f != "" && seen[f]
			}
			lastEventID := ""
			// After the final message, reading (and reconnecting, as a
			// browser does) goes on for -grace: changes made on another
			// instance before the final message may come after it. The
			// grace starts at the first check that finds the final
			// message seen, whether or not an event comes after it (the
			// final id may be known only after its event arrived).
			var graceUntil time.Time
			reading := func() bool {
				if !finished() {
					return true
				}
				if graceUntil.IsZero() {
					graceUntil = time.Now().Add(*grace)
				}
				return time.Now().Before(graceUntil)
			}
			graceLeft := reading
			for k := 0; k < 100000 && subCtx.Err() == nil && graceLeft(); k++ {
				life := *minConn + time.Duration(rng.Int64N(int64(*maxConn-*minConn)+1))
				select {
				case <-postingDone:
					life = *maxConn // no more random cuts needed once posting ended
				default:
				}
				cctx, cancel := context.WithTimeout(subCtx, life)
				resp, err := openStream(cctx, hc, bases[rng.IntN(len(bases))], roomName, start, lastEventID)
				if err != nil {
					cancel()
					if subCtx.Err() == nil && cctx.Err() == nil {
						sub.connErrs++
					}
					sleepCtx(subCtx, 100*time.Millisecond)
					continue
				}
				opened := lastEventID
				openedAt := time.Now()
				nth := 0
				rerr := readSSE(resp.Body, func(ev sseEvent) bool {
					if ev.HasID {
						lastEventID = ev.ID // EventSource keeps the last id seen, even an empty one
					}
					if ev.Event == "reload" {
						reloads.Add(1)
					}
					if ev.Event == "edit" || ev.Event == "delete" || ev.Event == "reaction" {
						if err := sub.view.event(ev.Event, ev.Data); err != nil {
							sub.anomaly = append(sub.anomaly, fmt.Sprintf("conn %d: %v", sub.conns, err))
						}
						return reading()
					}
					if ev.Event != "" {
						sub.anomaly = append(sub.anomaly, fmt.Sprintf("conn %d: named event %q data %.80q", sub.conns, ev.Event, ev.Data))
						return ev.Event != "room-deleted"
					}
					mid := messageID(ev.Data)
					if mid == "" {
						return true // participants list
					}
					// The event's id is a cursor: the message's own id, or,
					// across instances, one below it (live/watermark).
					if cur, err := chat.ParseMessageID(ev.ID); err != nil || (ev.ID != mid && !laterID(mid, cur)) {
						sub.anomaly = append(sub.anomaly, fmt.Sprintf("conn %d: event id %q is no cursor for message %s", sub.conns, ev.ID, mid))
					}
					sub.got = append(sub.got, received{id: mid, conn: sub.conns, nth: nth, lastID: opened, since: ev.At.Sub(openedAt)})
					sub.view.message(mid, ev.Data)
					nth++
					seen[mid] = true
					return reading()
				})
				resp.Body.Close()
				ci := connInfo{opened: openedAt, closed: time.Now(), events: nth, cut: cctx.Err() != nil}
				if rerr != nil && cctx.Err() == nil {
					ci.err = rerr.Error()
				}
				sub.connLog = append(sub.connLog, ci)
				cancel()
				sub.conns++
				if !graceLeft() {
					break
				}
				sleepCtx(subCtx, time.Duration(rng.Int64N(int64(*maxGap)+1)))
			}
			sub.done = finished()
		}()
	}

	if *brokerRestart > 0 && t.restartBroker != nil {
		go func() {
			if !sleepUntil(ctx, *brokerRestart) {
				return
			}
			logf("stopping the NATS broker for 1 s")
			if err := t.restartBroker(time.Second); err != nil {
				logf("broker restart: %v", err)
				return
			}
			logf("NATS broker is back")
		}()
	}

	// Posters.
	var posted, postFail, changeFail atomic.Int64
	ch := &changer{rate: *changes}
	var pwg sync.WaitGroup
	postStart := time.Now()
	for p, u := range users {
		pwg.Add(1)
		if c.cluster {
			on := *u
			on.base = bases[p%len(bases)]
			u = &on
		}
		go func() {
			defer pwg.Done()
			rng := rand.New(rand.NewPCG(*seed, uint64(1000+p)))
			mine := &own{edits: map[string]int{}, reacts: map[string]bool{}}
			var tick *time.Ticker
			if *rate > 0 {
				tick = time.NewTicker(time.Duration(float64(time.Second) / *rate))
				defer tick.Stop()
			}
			for n := 0; n < *nMsgs && subCtx.Err() == nil; n++ {
				if tick != nil {
					select {
					case <-tick.C:
					case <-subCtx.Done():
						return
					}
				}
				code, body, err := u.post(subCtx, "/rooms/"+roomName+"/messages",
					url.Values{"content": {fmt.Sprintf("poster %d message %d", p, n)}}, true)
				if err != nil || code != http.StatusOK {
					postFail.Add(1)
					if postFail.Load() <= 5 {
						logf("poster %d message %d: %d %v %.100s", p, n, code, err, body)
					}
					continue
				}
				posted.Add(1)
				if *changes > 0 {
					changeFail.Add(int64(ch.after(subCtx, p, u, mine, body, roomName, rng)))
				}
			}
		}()
	}
	pwg.Wait()
	if *changes > 0 {
		// A last message after every change: a subscriber that has it has
		// been sent every change too (and reads on for -grace).
		if code, body, err := users[0].post(ctx, "/rooms/"+roomName+"/messages", url.Values{"content": {"the end"}}, true); err != nil || code != http.StatusOK {
			return fmt.Errorf("final message: %d %v %.100s", code, err, body)
		}
	}
	postTime := time.Since(postStart)
	// Every post has returned, so the newest stored message is the last one.
	last, _, err := t.Store.MessagesBefore(ctx, room, chat.ID{}, 1)
	if err != nil || len(last) == 0 {
		return fmt.Errorf("newest message: %d %v", len(last), err)
	}
	final := last[0].ID.String()
	finalID.Store(final)
	close(postingDone)
	logf("posted %d (%d failed) in %s (%.0f/s); waiting for subscribers to catch up", posted.Load(), postFail.Load(),
		postTime.Round(time.Millisecond), float64(posted.Load())/postTime.Seconds())
	swg.Wait()
	catchUp := time.Since(postStart) - postTime

	// Compare with what Cassandra holds.
	expectedFor := map[string][]string{}
	stored := func(after string) ([]string, error) {
		if e, ok := expectedFor[after]; ok {
			return e, nil
		}
		a, err := chat.ParseID(after)
		if err != nil {
			return nil, err
		}
		ms, cut, err := t.Store.MessagesAfter(ctx, room, a, 100000)
		if err != nil || cut {
			return nil, fmt.Errorf("stored messages after %s: cut=%v %v", after, cut, err)
		}
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = m.ID.String()
		}
		expectedFor[after] = ids
		return ids, nil
	}
	var totMissing, totDup, totUnexpected, totOrder, totAnomaly, totConns, totConnErrs, unfinished, badSubs int
	var clusterTotals browserTotals
	var examples []string
	example := func(format string, args ...any) {
		if len(examples) < *nExamples {
			examples = append(examples, fmt.Sprintf(format, args...))
		}
	}
	for i, sub := range subs {
		totConns += sub.conns
		totConnErrs += sub.connErrs
		totAnomaly += len(sub.anomaly)
		for _, a := range sub.anomaly {
			example("sub %d: %s", i, a)
		}
		if !sub.done {
			unfinished++
		}
		if sub.startID == "" {
			badSubs++
			continue
		}
		if c.cluster {
			bad, err := checkAsBrowser(ctx, t, room, i, sub, &clusterTotals, example)
			if err != nil {
				return err
			}
			if bad {
				badSubs++
			}
			continue
		}
		exp, err := stored(sub.startID)
		if err != nil {
			return err
		}
		pos := make(map[string]int, len(exp))
		for j, id := range exp {
			pos[id] = j
		}
		count := map[string]int{}
		first := map[string]received{}
		maxPos := -1
		var maxAt received
		var firstOcc []string
		bad := false
		for _, r := range sub.got {
			count[r.id]++
			if count[r.id] > 1 {
				totDup++
				bad = true
				example("sub %d: duplicate %s: %s; first %s %s", i, r.id, r, first[r.id], sub.describe(first[r.id].conn))
				continue
			}
			first[r.id] = r
			p, ok := pos[r.id]
			if !ok && sub.view.deleted[r.id] {
				continue // deleted since: the page took it away
			}
			firstOcc = append(firstOcc, r.id)
			if !ok {
				totUnexpected++
				bad = true
				example("sub %d: unexpected %s, not stored after start %s: %s", i, r.id, sub.startID, r)
				continue
			}
			if p < maxPos {
				totOrder++
				bad = true
				example("sub %d: out of order: stored #%d came as %s, after stored #%d as %s %s", i, p, r, maxPos, maxAt, sub.describe(r.conn))
			}
			if p > maxPos {
				maxPos, maxAt = p, r
			}
		}
		for j, id := range exp {
			if count[id] == 0 {
				totMissing++
				bad = true
				// Where its neighbours came: within one connection, or
				// across a reconnection?
				prev, next := "none", "none"
				for k := j - 1; k >= 0; k-- {
					if r, ok := first[exp[k]]; ok {
						prev = fmt.Sprintf("#%d as %s", k, r)
						break
					}
				}
				for k := j + 1; k < len(exp); k++ {
					if r, ok := first[exp[k]]; ok {
						next = fmt.Sprintf("#%d as %s", k, r)
						break
					}
				}
				conns := ""
				if r, ok := first[exp[max(j-1, 0)]]; ok {
					conns = sub.describe(r.conn)
				}
				// The next message received: its connection, and how old
				// the missing message was when that connection opened.
				for k := j + 1; k < len(exp); k++ {
					if r, ok := first[exp[k]]; ok {
						conns += " " + sub.describe(r.conn)
						if u, err := chat.ParseID(id); err == nil && r.conn < len(sub.connLog) {
							conns += fmt.Sprintf(" (message made %dms before that connection opened)",
								sub.connLog[r.conn].opened.Sub(u.Time()).Milliseconds())
						}
						break
					}
				}
				example("sub %d: missing stored #%d %s; before it %s; after it %s %s", i, j, id, prev, next, conns)
			}
		}
		if len(firstOcc) != len(exp) {
			bad = true
		}
		if bad {
			badSubs++
		}
	}
	var cut, byServer, failed, burstDrop int
	for _, sub := range subs {
		for _, c := range sub.connLog {
			switch {
			case c.cut:
				cut++
			case c.err != "":
				failed++
			default:
				byServer++
				if c.events > 128 && c.closed.Sub(c.opened) < 500*time.Millisecond {
					burstDrop++
				}
			}
		}
	}
	storedAll, _ := stored(subs[0].startID)
	fmt.Printf("\n== correctness: %d posters x %d messages, %d subscribers, app %s\n", *nPosters, *nMsgs, *nSubs, t.Where)
	fmt.Printf("posted %d (%d failed) in %s = %.0f/s; subscribers caught up %s after posting ended\n", posted.Load(), postFail.Load(),
		postTime.Round(time.Millisecond), float64(posted.Load())/postTime.Seconds(), catchUp.Round(time.Millisecond))
	fmt.Printf("connections: %d (%.1f per subscriber), failed connects %d, unfinished subscribers %d\n",
		totConns, float64(totConns)/float64(len(subs)), totConnErrs, unfinished)
	fmt.Printf("connections cut by the client %d, ended by the server %d (of which %d within 500ms after more than 128 events), read errors %d\n",
		cut, byServer, burstDrop, failed)
	fmt.Printf("stored after subscriber 0's start: %d messages\n", len(storedAll))
	if c.cluster {
		ct := clusterTotals
		totMissing, totDup, totUnexpected, totOrder = ct.missing, ct.dup, ct.unexpected, ct.order
		fmt.Printf("as a browser builds the list: %d messages from pages, %d events; dropped by id: %d already on the page, %d sent again after a reconnect; %d late (placed in id order)\n",
			ct.fromPages, ct.events, ct.pageOverlap, ct.resent, ct.late)
		share := 0.0
		if ct.events > 0 {
			share = 100 * float64(ct.resent) / float64(ct.events)
		}
		fmt.Printf("re-sent after reconnects: %.1f%% of events\n", share)
	}
	fmt.Printf("\"reload\" events %d (each also an anomaly)\n", reloads.Load())
	fmt.Printf("missing %d, duplicated %d, unexpected %d, out of order %d, other anomalies %d; subscribers with a mismatch: %d of %d\n",
		totMissing, totDup, totUnexpected, totOrder, totAnomaly, badSubs, len(subs))
	for _, e := range examples {
		fmt.Println("  ", e)
	}
	changeBad := 0
	if *changes > 0 {
		var examples []string
		changeBad, err = checkChanges(ctx, t, room, subs, func(format string, args ...any) {
			if len(examples) < *nExamples {
				examples = append(examples, fmt.Sprintf(format, args...))
			}
		})
		if err != nil {
			return err
		}
		ch.mu.Lock()
		fmt.Printf("changes: %d edits, %d deletes, %d reactions (%d failed); views that differ from the store: %d\n",
			ch.made["edit"], ch.made["delete"], ch.made["reactions"], changeFail.Load(), changeBad)
		ch.mu.Unlock()
		for _, e := range examples {
			fmt.Println("  ", e)
		}
	}
	t.printLogCounts(ctx)
	if totMissing+totDup+totUnexpected+totOrder+totAnomaly+badSubs+unfinished+changeBad > 0 || postFail.Load()+changeFail.Load() > 0 {
		return fmt.Errorf("received sequences differ from the stored one")
	}
	if c.cluster {
		fmt.Println("OK: every subscriber's list holds exactly the stored messages, in id order")
		return nil
	}
	fmt.Println("OK: every subscriber received exactly the stored sequence")
	return nil
}

// laterID says whether message id a comes after id b.
func laterID(a string, b chat.ID) bool {
	id, err := chat.ParseMessageID(a)
	return err == nil && id.After(b)
}

// sleepUntil sleeps d, or less if ctx ends first; it says whether it slept d.
func sleepUntil(ctx context.Context, d time.Duration) bool {
	sleepCtx(ctx, d)
	return ctx.Err() == nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// streamAfter finds the live stream's starting id in a room page.
var streamAfter = regexp.MustCompile(`/events\?after=([0-9a-f-]{36})`)

// pageMessage finds a room page's message ids.
var pageMessage = regexp.MustCompile(`id="msg-([0-9a-f-]{36})"`)

// browserTotals adds up checkAsBrowser's counts.
type browserTotals struct {
	fromPages, events, pageOverlap, resent, late int
	missing, dup, unexpected, order              int
}

// checkAsBrowser builds sub's list as static/app.js does (the page's
// messages; then each event's message unless its id is in the list,
// placed in id order) and compares it with the stored messages from the
// page's oldest on. A message twice on one connection counts as
// duplicated; sent again on a later connection, it is dropped by id as a
// browser drops it, and counted apart.
func checkAsBrowser(ctx context.Context, t *target, room chat.Room, i int, sub *subscriber, tot *browserTotals, example func(string, ...any)) (bool, error) {
	parse := func(s string) chat.ID { u, _ := chat.ParseID(s); return u }
	list := make([]chat.ID, 0, len(sub.pageIDs)+len(sub.got))
	in := map[chat.ID]bool{}
	for _, id := range sub.pageIDs {
		u := parse(id)
		list = append(list, u)
		in[u] = true
	}
	tot.fromPages += len(sub.pageIDs)
	onPage := map[chat.ID]bool{}
	for k := range in {
		onPage[k] = true
	}
	bad := false
	perConn := map[int]map[chat.ID]bool{}
	for _, r := range sub.got {
		tot.events++
		u := parse(r.id)
		if perConn[r.conn] == nil {
			perConn[r.conn] = map[chat.ID]bool{}
		}
		if perConn[r.conn][u] {
			tot.dup++
			bad = true
			example("sub %d: %s twice on one connection: %s", i, r.id, r)
			continue
		}
		perConn[r.conn][u] = true
		if in[u] {
			if onPage[u] {
				tot.pageOverlap++
			} else {
				tot.resent++
			}
			continue
		}
		in[u] = true
		// Append, then move back past every later id (app.js placeInOrder).
		j := len(list)
		list = append(list, u)
		for j > 0 && list[j-1].After(u) {
			list[j] = list[j-1]
			j--
		}
		list[j] = u
		if j < len(list)-1 {
			tot.late++
		}
	}
	for k := 1; k < len(list); k++ {
		if !list[k].After(list[k-1]) {
			tot.order++
			bad = true
			example("sub %d: list out of id order at %d: %s after %s", i, k, list[k], list[k-1])
		}
	}
	// Everything stored from the list's oldest message on must be in it:
	// the page's oldest, or an older one that a resume brought again.
	from := chat.ID{}
	if len(list) > 0 {
		from = chat.MaxIDAt(list[0].Time().Add(-time.Microsecond))
	}
	ms, cut, err := t.Store.MessagesAfter(ctx, room, from, 100000)
	if err != nil || cut {
		return false, fmt.Errorf("stored messages after %s: cut=%v %v", from, cut, err)
	}
	want := map[chat.ID]bool{}
	for _, m := range ms {
		if len(list) > 0 && list[0].After(m.ID) {
			continue
		}
		want[m.ID] = true
		if !in[m.ID] {
			tot.missing++
			bad = true
			example("sub %d: missing %s (made %s)", i, m.ID, m.ID.Time().Format("15:04:05.000"))
		}
	}
	for u := range in {
		if !want[u] && !sub.view.deleted[u.String()] {
			tot.unexpected++
			bad = true
			example("sub %d: unexpected %s, not stored from the page's oldest on", i, u)
		}
	}
	return bad, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/inspect"
)

// openDB is a session on the run's keyspace at LOCAL_QUORUM. The
// driver's own log (a node it cannot reach while one is down) is left
// out: the report says what the faults did.
func openDB(hosts []string, keyspace string) (*inspect.DB, error) {
	return inspect.Open(hosts, inspect.Options{Keyspace: keyspace, Timeout: 10 * time.Second, Retries: 3, Quiet: true}) // retries: reads only
}

// onNode is a session that talks to host alone, at ONE: what that
// replica holds.
func onNode(host, keyspace string) (*inspect.DB, error) {
	return inspect.Open([]string{host}, inspect.Options{Keyspace: keyspace, Timeout: 10 * time.Second, One: true, Node: true})
}

// pct is the p-th percentile of ds (sorted in place).
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

func msf(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond)) }

// latencies are the p50 and p99 of the successful ops of kind started in
// [from, to).
func latencies(ops []op, kind string, from, to time.Time) string {
	return latenciesEnded(ops, kind, from, to, time.Time{})
}

// latenciesEnded is latencies of the ops that also ended before end (if
// set): the healthy baseline leaves out what the first fault slowed.
func latenciesEnded(ops []op, kind string, from, to, end time.Time) string {
	var ds []time.Duration
	for _, o := range ops {
		if !end.IsZero() && !o.at.Add(o.dur).Before(end) {
			continue
		}
		if o.kind == kind && o.ok && !o.at.Before(from) && o.at.Before(to) {
			ds = append(ds, o.dur)
		}
	}
	if len(ds) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s/%s (n=%d)", msf(pct(ds, .5)), msf(pct(ds, .99)), len(ds))
}

// report prints the healthy baseline and, for each fault, the errors
// clients saw, latencies while it lasted and after, how long until every
// operation succeeded again, and what /readyz said.
func (w *world) report(start time.Time, windows []window) map[string]map[string]int {
	readyz := map[string]map[string]int{}
	ops := w.rec.all()
	first := start.Add(w.o.d)
	if len(windows) > 0 {
		first = windows[0].start
	}
	fmt.Fprintf(w.o.out, "\nhealthy (first %v): post p50/p99 %s, page p50/p99 %s\n", first.Sub(start).Round(time.Second),
		latenciesEnded(ops, "post", start, first, first), latenciesEnded(ops, "page", start, first, first))
	for _, win := range windows {
		var total, failed int
		var lastFail time.Time
		kinds := map[string]int{}
		for _, o := range ops {
			if o.at.Before(win.start) || !o.at.Before(win.next) {
				continue
			}
			total++
			if !o.ok {
				failed++
				kinds[o.kind]++
				if end := o.at.Add(o.dur); end.After(lastFail) {
					lastFail = end
				}
			}
		}
		share := 0.0
		if total > 0 {
			share = 100 * float64(failed) / float64(total)
		}
		recovered := "no errors"
		if failed > 0 {
			recovered = fmt.Sprintf("every operation succeeds again %.1f s after the fault", lastFail.Sub(win.start).Seconds())
		}
		var by []string
		for k, n := range kinds {
			by = append(by, fmt.Sprintf("%s %d", k, n))
		}
		slices.Sort(by)
		answers := map[string]int{}
		w.mu.Lock()
		for _, r := range w.ready {
			if !r.at.Before(win.start) && r.at.Before(win.back) {
				answers[r.answer]++
			}
		}
		w.mu.Unlock()
		readyz[win.name] = answers
		fmt.Fprintf(w.o.out, "fault %-14s errors %d of %d (%.2f%%) [%s]; %s\n", win.name, failed, total, share, strings.Join(by, ", "), recovered)
		fmt.Fprintf(w.o.out, "  during (%v): post %s, page %s; /readyz %v\n", win.back.Sub(win.start).Round(time.Second),
			latencies(ops, "post", win.start, win.back), latencies(ops, "page", win.start, win.back), answers)
		fmt.Fprintf(w.o.out, "  after: post %s, page %s\n", latencies(ops, "post", win.back, win.next), latencies(ops, "page", win.back, win.next))
		if win.err != nil {
			fmt.Fprintf(w.o.out, "  the fault itself failed: %v\n", win.err)
		}
	}
	lwt := map[string][2]int{}
	for _, o := range ops {
		if o.kind == "signup" || o.kind == "create" || o.kind == "join" || o.kind == "leave" || o.kind == "delete" {
			c := lwt[o.kind]
			c[0]++
			if o.ok {
				c[1]++
			}
			lwt[o.kind] = c
		}
	}
	var parts []string
	for _, k := range []string{"signup", "create", "join", "leave", "delete"} {
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, lwt[k][1], lwt[k][0]))
	}
	fmt.Fprintf(w.o.out, "LWTs answered (a refusal is an answer) of made, whole run: %s\n", strings.Join(parts, ", "))
	return readyz
}

// check reads back what the run did and returns what broke.
func (w *world) check(ctx context.Context, db *inspect.DB, room string, subs []*subscriber) (result, error) {
	var res result
	w.mu.Lock()
	acks := append([]ack(nil), w.acks...)
	w.mu.Unlock()
	res.acked = len(acks)
	// Every acknowledged post is stored, once.
	var stored = map[string]int{}
	days := map[int]bool{}
	for _, a := range acks {
		id, err := chat.ParseID(a.id)
		if err != nil {
			return res, err
		}
		days[chat.BucketOf(id)] = true
	}
	for day := range days {
		contents, err := db.Contents(ctx, room, day)
		if err != nil {
			return res, fmt.Errorf("read the room's messages: %w", err)
		}
		for _, content := range contents {
			stored[content]++
		}
	}
	for _, a := range acks {
		id, _ := chat.ParseID(a.id)
		content, err := db.Content(ctx, room, id)
		if err != nil || content != a.content {
			res.lost++
			if res.lost <= 5 {
				fmt.Fprintf(w.o.out, "lost: %s %q acknowledged at %s (%v)\n", a.id, a.content, a.at.Format("15:04:05.000"), err)
			}
		}
	}
	for content, n := range stored {
		if strings.HasPrefix(content, "chaos ") && n > 1 {
			res.duplicated += n - 1
			fmt.Fprintf(w.o.out, "stored %d times: %q\n", n, content)
		}
	}
	// Every subscriber received every acknowledged post.
	for _, s := range subs {
		missing := 0
		for _, a := range acks {
			if !s.has(a.id) {
				missing++
			}
		}
		res.missing += missing
		fmt.Fprintf(w.o.out, "subscriber %s: %d connections, %d page loads, missing %d of %d\n", s.p.login, s.conns, s.reloads, missing, len(acks))
	}
	fmt.Fprintf(w.o.out, "acknowledged posts: %d; lost %d; duplicated %d\n", len(acks), res.lost, res.duplicated)

	w.mu.Lock()
	signups, rooms := w.signups, w.rooms
	deleted, created, loggedOut := w.deleted, w.created, w.loggedOut
	known := map[string]bool{}
	for _, name := range append(append(append([]string(nil), created...), deleted...), w.unsure...) {
		known[name] = true
	}
	for name, won := range rooms {
		known[name] = len(won) > 0
	}
	for _, name := range w.tried {
		// A creation answered with an error that applied after all:
		// checked as any room.
		if !known[name] {
			w.unsure = append(w.unsure, name)
		}
	}
	for _, name := range w.unsure {
		// Checked as any room if it is there; gone is as good.
		if _, err := db.Creator(ctx, name); err == nil {
			created = append(created, name)
		}
	}
	w.mu.Unlock()
	// No login and no room name has two owners.
	for login, won := range signups {
		if len(won) > 1 {
			res.broken = append(res.broken, fmt.Sprintf("login %s signed up twice", login))
		}
	}
	for name, won := range rooms {
		if len(won) > 1 {
			res.broken = append(res.broken, fmt.Sprintf("room %s created by %v", name, won))
			continue
		}
		if len(won) == 1 {
			created = append(created, name)
			creator, err := db.Creator(ctx, name)
			if err != nil || creator != won[0] {
				res.broken = append(res.broken, fmt.Sprintf("room %s: creator %q, but %s was told it created it (%v)", name, creator, won[0], err))
			}
		}
	}
	fmt.Fprintf(w.o.out, "sign-up races: %d; room-creation races: %d\n", len(signups), len(rooms))
	// No zombie room: a room whose delete was acknowledged is gone, and
	// every participant of a room lists it.
	for _, name := range deleted {
		_, err := db.Creator(ctx, name)
		if err == nil {
			res.broken = append(res.broken, fmt.Sprintf("room %s exists after its delete was acknowledged", name))
		} else if !errors.Is(err, chat.ErrNotFound) {
			return res, err
		}
	}
	for _, p := range w.people {
		// A page load repairs a list entry left by a join that raced a
		// delete (store.MyRooms), as a person's next page would.
		_, _, _ = p.send(ctx, http.MethodGet, "/", nil)
	}
	zombies := 0
	for _, name := range created {
		participants, err := db.Participants(ctx, name)
		if code, ok := w.refused[name]; ok && errors.Is(err, chat.ErrNotFound) {
			res.broken = append(res.broken, fmt.Sprintf("the delete of room %s was answered %d, yet the room is gone", name, code))
			continue
		}
		if err != nil {
			res.broken = append(res.broken, fmt.Sprintf("room %s: %v", name, err))
			continue
		}
		for login := range participants {
			if list, err := db.RoomList(ctx, login); err != nil || !slices.Contains(list, name) {
				zombies++
				res.broken = append(res.broken, fmt.Sprintf("%s takes part in %s, which their list lacks", login, name))
			}
		}
	}
	for _, p := range w.people {
		list, err := db.RoomList(ctx, p.login)
		if err != nil {
			return res, err
		}
		for _, name := range list {
			participants, err := db.Participants(ctx, name)
			if err != nil || !participants[p.login] {
				zombies++
				res.broken = append(res.broken, fmt.Sprintf("%s lists %s, which does not have them (%v)", p.login, name, err))
			}
		}
	}
	fmt.Fprintf(w.o.out, "rooms deleted while someone joined: %d; rooms checked for zombies: %d; zombies %d\n", len(deleted), len(created), zombies)
	// No ended session works again.
	for _, p := range loggedOut {
		if !endedStays(ctx, p) {
			res.broken = append(res.broken, fmt.Sprintf("%s's ended session still works", p.login))
		}
	}
	fmt.Fprintf(w.o.out, "sessions ended: %d, each refused after\n", len(loggedOut))
	if err := w.checkUnread(ctx, db, room, &res); err != nil {
		return res, err
	}
	w.agree(ctx, acks)
	return res, nil
}

// endedStays tells whether the cookies p held when it logged out are
// refused now, on each instance.
func endedStays(ctx context.Context, p *person) bool {
	for _, base := range p.bases {
		u, _ := url.Parse(base)
		jar, _ := cookiejar.New(nil)
		jar.SetCookies(u, p.jar.Cookies(u))
		hc := &http.Client{Jar: jar, Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/rooms", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return false
		}
	}
	return true
}

// agree reads a sample of 1,000 acknowledged messages at ONE from each
// node alone and counts those a node lacks or holds otherwise; if any,
// it repairs the keyspace and reads again.
func (w *world) agree(ctx context.Context, acks []ack) {
	sample := append([]ack(nil), acks...)
	rand.Shuffle(len(sample), func(i, j int) { sample[i], sample[j] = sample[j], sample[i] })
	sample = sample[:min(1000, len(sample))]
	count := func() []int {
		var off []int
		for _, host := range w.hosts {
			sess, err := onNode(host, w.keyspace)
			if err != nil {
				off = append(off, -1)
				continue
			}
			n := 0
			for _, a := range sample {
				id, _ := chat.ParseID(a.id)
				content, err := sess.Content(ctx, "ch"+w.run+"room", id)
				if err != nil || content != a.content {
					n++
				}
			}
			sess.Close()
			off = append(off, n)
		}
		return off
	}
	off := count()
	fmt.Fprintf(w.o.out, "replicas, %d sampled messages read at ONE from each node: lacking or different %v (hosts %v)\n", len(sample), off, w.hosts)
	if slices.ContainsFunc(off, func(n int) bool { return n != 0 }) {
		out, err := w.cl.nodetool(ctx, 1, "repair", w.keyspace)
		fmt.Fprintf(w.o.out, "nodetool repair %s: %v %s\n", w.keyspace, err, strings.TrimSpace(lastLine(out)))
		fmt.Fprintf(w.o.out, "after the repair: lacking or different %v\n", count())
	}
	out, _ := w.cl.nodetool(ctx, 1, "status")
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "127.0.0.") {
			fmt.Fprintf(w.o.out, "nodetool status: %s\n", strings.Join(strings.Fields(l)[:2], " "))
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// checkUnread compares each person's unread count of the room, as their
// sidebar shows it, with the count their read marker and the stored
// messages imply: others' messages newer than the marker, system ones
// aside, shown as "99+" from store.MaxUnread.
func (w *world) checkUnread(ctx context.Context, db *inspect.DB, room string, res *result) error {
	var msgs []inspect.Stored
	created, err := db.Created(ctx, room)
	if err != nil {
		return err
	}
	for day := created.UTC(); !day.After(time.Now().UTC().AddDate(0, 0, 1)); day = day.AddDate(0, 0, 1) {
		bucket := day.Year()*10000 + int(day.Month())*100 + day.Day()
		in, err := db.Messages(ctx, room, bucket)
		if err != nil {
			return err
		}
		msgs = append(msgs, in...)
	}
	badge := regexp.MustCompile(`data-unread="([^"]*)"\s*data-conversation="` + regexp.QuoteMeta(room) + `"`)
	checked := 0
	for _, p := range w.people {
		code, body, err := p.send(ctx, http.MethodGet, "/", nil)
		m := badge.FindStringSubmatch(body)
		if err != nil || code != http.StatusOK || m == nil {
			res.broken = append(res.broken, fmt.Sprintf("%s's sidebar shows no count for %s (%d %v)", p.login, room, code, err))
			continue
		}
		marker, err := db.Marker(ctx, p.login, room)
		if err != nil {
			return err
		}
		n := 0
		for _, msg := range msgs {
			if !msg.System && msg.Author.Login != p.login && msg.ID.Time().After(marker.Time()) {
				n++
			}
		}
		want := strconv.Itoa(n)
		if n >= store.MaxUnread {
			want = "99+"
		}
		if m[1] != want {
			res.broken = append(res.broken, fmt.Sprintf("%s's unread count of %s is %s; the marker and messages say %s", p.login, room, m[1], want))
		}
		checked++
	}
	fmt.Fprintf(w.o.out, "unread counts: %d people's sidebars checked against their markers and the %d stored messages\n", checked, len(msgs))
	return nil
}

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// window is one fault: when it was done, when the system was put back
// (node restarted, broker and instance started again), and when the next
// fault began.
type window struct {
	name              string
	start, back, next time.Time
	err               error
}

// readiness is one /readyz answer.
type readiness struct {
	at     time.Time
	answer string // ready, degraded, unavailable, none
}

// world is everything a run holds.
type world struct {
	o        options
	cl       *cluster
	hosts    []string
	keyspace string
	broker   *broker
	apps     []*instance
	bases    []string
	rec      recorder
	run      string

	mu        sync.Mutex
	acks      []ack
	ready     []readiness
	signups   map[string][]string // login: the passwords that won its sign-up
	rooms     map[string][]string // room: the logins that won its creation
	deleted   []string            // rooms whose delete was acknowledged
	unsure    []string            // rooms whose delete got no answer
	tried     []string            // every room name a creation was tried for
	refused   map[string]int      // rooms whose delete was refused: the answer
	loggedOut []*person           // with the cookies of their ended session
	people    []*person
	created   []string // rooms this run made (and did not delete)
}

func logf(w *world, format string, args ...any) {
	fmt.Fprintf(w.o.out, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) (result, error) {
	root, err := repoRoot()
	if err != nil {
		return result{}, err
	}
	if o.posters < 2 || o.subs < 4 || o.rate <= 0 || o.d < 30*time.Second {
		return result{}, fmt.Errorf("keep -posters >= 2, -subs >= 4, -rate > 0 and -d >= 30s")
	}
	for _, f := range o.faults {
		if !slices.Contains(allFaults, f) {
			return result{}, fmt.Errorf("unknown fault %q (known: %s)", f, strings.Join(allFaults, ", "))
		}
	}
	w := &world{o: o, cl: newCluster(root), run: strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
		signups: map[string][]string{}, rooms: map[string][]string{}, refused: map[string]int{}}
	tmp, err := os.MkdirTemp("", "chaos")
	if err != nil {
		return result{}, err
	}
	// The build needs no cluster: it runs while the nodes boot.
	type built struct {
		bin string
		err error
	}
	build := make(chan built, 1)
	go func() {
		bin, err := buildApp(ctx, root, tmp)
		build <- built{bin, err}
	}()
	w.hosts = w.cl.hosts
	if o.hosts != "" {
		w.hosts = strings.Split(o.hosts, ",")
	} else if !w.cl.running(ctx) {
		logf(w, "starting the three-node cluster (scripts/cassandra.sh start --nodes 3)")
		if err := w.cl.script(ctx, "start", "--nodes", "3"); err != nil {
			return result{}, err
		}
		if !o.keep {
			defer func() {
				logf(w, "stopping the cluster")
				_ = w.cl.script(context.Background(), "stop", "--nodes", "3")
			}()
		}
	}
	w.keyspace = "chaos_" + w.run
	if w.broker, err = startBroker(); err != nil {
		return result{}, err
	}
	defer w.broker.kill()
	b := <-build
	if b.err != nil {
		return result{}, b.err
	}
	logf(w, "app built")
	if w.apps, err = apps(b.bin, tmp, w.keyspace, w.broker.url(), w.hosts); err != nil {
		return result{}, err
	}
	defer func() {
		for _, a := range w.apps {
			a.stop()
		}
	}()
	logf(w, "keyspace %s; instance A applies the schema (logs in %s)", w.keyspace, tmp)
	for _, a := range w.apps {
		if err := a.start(ctx, 5*time.Minute); err != nil {
			return result{}, err
		}
		w.bases = append(w.bases, a.url)
	}
	db, err := openDB(w.hosts, w.keyspace)
	if err != nil {
		return result{}, err
	}
	defer db.Close()

	room, err := w.setUp(ctx)
	if err != nil {
		return result{}, err
	}
	subs, stopSubs, err := w.subscribe(ctx, room)
	if err != nil {
		return result{}, err
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	w.load(loadCtx, &wg, room)
	start := time.Now()
	windows := w.faults(ctx, start)
	stopLoad()
	wg.Wait()
	logf(w, "load stopped; subscribers catch up")
	sleepCtx(ctx, 5*time.Second)
	stopSubs()
	if ctx.Err() != nil {
		return result{}, ctx.Err()
	}
	readyz := w.report(start, windows)
	res, err := w.check(ctx, db, room, subs)
	res.readyz = readyz
	return res, err
}

// setUp signs up the posters, subscribers and the page reader, who all
// take part in one room.
func (w *world) setUp(ctx context.Context) (string, error) {
	n := w.o.posters + w.o.subs + 1
	for i := 0; i < n; i++ {
		p := newPerson(fmt.Sprintf("ch%su%d", w.run, i), w.bases, i)
		if code, err := p.signUp(ctx, "password1"); err != nil || code != http.StatusSeeOther {
			return "", fmt.Errorf("sign up %s: %d %v", p.login, code, err)
		}
		w.people = append(w.people, p)
	}
	room := "ch" + w.run + "room"
	if _, ok := w.people[0].form(ctx, &w.rec, "setup", "/rooms", map[string][]string{"room_name": {room}, "banner": {"chaos"}}); !ok {
		return "", fmt.Errorf("create room %s", room)
	}
	for _, p := range w.people[1:] {
		if _, ok := p.form(ctx, &w.rec, "setup", "/rooms/"+room+"/join", nil); !ok {
			return "", fmt.Errorf("%s joins %s", p.login, room)
		}
	}
	w.created = append(w.created, room)
	return room, nil
}

// subscribe opens the subscribers' pages and waits until each stream is
// connected once.
func (w *world) subscribe(ctx context.Context, room string) ([]*subscriber, func(), error) {
	sctx, stop := context.WithCancel(ctx)
	var subs []*subscriber
	connected := make(chan struct{}, w.o.subs)
	var wg sync.WaitGroup
	for _, p := range w.people[w.o.posters : w.o.posters+w.o.subs] {
		s := &subscriber{p: p, room: room, got: map[string]bool{}}
		subs = append(subs, s)
		wg.Add(1)
		go func() { defer wg.Done(); s.run(sctx, connected) }()
	}
	for range subs {
		select {
		case <-connected:
		case <-time.After(time.Minute):
			stop()
			return nil, nil, fmt.Errorf("subscribers did not connect within a minute")
		}
	}
	return subs, func() { stop(); wg.Wait() }, nil
}

// load starts the workers: posters, a page reader, joins and leaves,
// sign-ups and room creations racing for the same names, deletes racing
// joins, logouts, and a /readyz poll.
func (w *world) load(ctx context.Context, wg *sync.WaitGroup, room string) {
	every := func(d time.Duration, f func(n int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(d)
			defer t.Stop()
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					f(n)
				}
			}
		}()
	}
	for _, p := range w.people[:w.o.posters] {
		every(time.Duration(float64(time.Second)/w.o.rate), func(n int) {
			content := fmt.Sprintf("chaos %s %d", p.login, n)
			if id, ok := p.post(ctx, &w.rec, room, content); ok {
				w.mu.Lock()
				w.acks = append(w.acks, ack{id: id, content: content, poster: p.login, at: time.Now()})
				w.mu.Unlock()
			}
		})
	}
	reader := w.people[len(w.people)-1]
	every(250*time.Millisecond, func(int) {
		t0 := time.Now()
		code, _, err := reader.send(ctx, http.MethodGet, "/rooms/"+room, nil)
		if ctx.Err() == nil {
			w.rec.add("page", t0, err == nil && code == http.StatusOK)
		}
	})
	every(time.Second, func(int) {
		for _, a := range w.apps {
			w.poll(ctx, a.url)
		}
	})
	// Joins and leaves of the posters in a second room.
	second := "ch" + w.run + "second"
	if _, ok := reader.form(ctx, &w.rec, "create", "/rooms", map[string][]string{"room_name": {second}}); ok {
		w.mu.Lock()
		w.created = append(w.created, second)
		w.mu.Unlock()
		for i, p := range w.people[:2] {
			every(time.Duration(700+100*i)*time.Millisecond, func(n int) {
				if n%2 == 0 {
					p.form(ctx, &w.rec, "join", "/rooms/"+second+"/join", nil)
				} else {
					p.form(ctx, &w.rec, "leave", "/rooms/"+second+"/leave", nil)
				}
			})
		}
	}
	// Two people on the two instances sign up for the same login, with
	// different passwords.
	every(2*time.Second, func(n int) {
		login := fmt.Sprintf("ch%ss%d", w.run, n)
		var mu sync.Mutex
		var won []string
		var race sync.WaitGroup
		for i := range 2 {
			race.Add(1)
			go func() {
				defer race.Done()
				p := newPerson(login, w.bases, i)
				t0 := time.Now()
				pass := fmt.Sprintf("password-%d", i)
				code, err := p.signUp(ctx, pass)
				if ctx.Err() != nil {
					return
				}
				w.rec.add("signup", t0, err == nil && code < 500 && code != 0)
				if code == http.StatusSeeOther {
					mu.Lock()
					won = append(won, pass)
					mu.Unlock()
				}
			}()
		}
		race.Wait()
		w.mu.Lock()
		w.signups[login] = won
		w.mu.Unlock()
	})
	// Two people race to create the same room name.
	every(2*time.Second, func(n int) {
		name := fmt.Sprintf("ch%sr%d", w.run, n)
		w.mu.Lock()
		w.tried = append(w.tried, name)
		w.mu.Unlock()
		var mu sync.Mutex
		var won []string
		var race sync.WaitGroup
		for _, p := range w.people[w.o.posters : w.o.posters+2] {
			race.Add(1)
			go func() {
				defer race.Done()
				if _, ok := p.form(ctx, &w.rec, "create", "/rooms", map[string][]string{"room_name": {name}}); ok {
					mu.Lock()
					won = append(won, p.login)
					mu.Unlock()
				}
			}()
		}
		race.Wait()
		w.mu.Lock()
		w.rooms[name] = won
		w.mu.Unlock()
	})
	// A room created, then its delete racing a join.
	creator, joiner := w.people[w.o.posters+2], w.people[w.o.posters+3]
	every(3*time.Second, func(n int) {
		name := fmt.Sprintf("ch%sd%d", w.run, n)
		w.mu.Lock()
		w.tried = append(w.tried, name)
		w.mu.Unlock()
		if _, ok := creator.form(ctx, &w.rec, "create", "/rooms", map[string][]string{"room_name": {name}}); !ok {
			return
		}
		var race sync.WaitGroup
		var code int
		var deleted bool
		race.Add(2)
		go func() { defer race.Done(); joiner.form(ctx, &w.rec, "join", "/rooms/"+name+"/join", nil) }()
		go func() {
			defer race.Done()
			code, deleted = creator.form(ctx, &w.rec, "delete", "/rooms/"+name+"/delete", nil)
		}()
		race.Wait()
		w.mu.Lock()
		switch {
		case deleted:
			w.deleted = append(w.deleted, name)
		case code == 0 || code >= 500:
			// No answer: the delete may or may not have applied.
			w.unsure = append(w.unsure, name)
		default:
			w.created = append(w.created, name)
			w.refused[name] = code
		}
		w.mu.Unlock()
	})
	// People who log in and out; their ended sessions must stay ended.
	every(7*time.Second, func(n int) {
		p := newPerson(fmt.Sprintf("ch%so%d", w.run, n), w.bases, n)
		if code, err := p.signUp(ctx, "password1"); err != nil || code != http.StatusSeeOther {
			return
		}
		if _, ok := p.form(ctx, &w.rec, "logout", "/logout", nil); ok {
			w.mu.Lock()
			w.loggedOut = append(w.loggedOut, p)
			w.mu.Unlock()
		}
	})
}

// poll asks an instance's /readyz.
func (w *world) poll(ctx context.Context, base string) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, base+"/readyz", nil)
	answer := "none"
	if resp, err := http.DefaultClient.Do(req); err == nil {
		b := make([]byte, 64)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		answer, _, _ = strings.Cut(strings.TrimSpace(string(b[:n])), ":")
		if resp.StatusCode != http.StatusOK {
			answer = "unavailable"
		}
	}
	if ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	w.ready = append(w.ready, readiness{time.Now(), answer})
	w.mu.Unlock()
}

// faults does each fault in its slot of the run, after a healthy first
// tenth (the baseline), and returns when the run's time is up.
func (w *world) faults(ctx context.Context, start time.Time) []window {
	baseline := max(20*time.Second, w.o.d/10)
	slot := (w.o.d - baseline) / time.Duration(max(1, len(w.o.faults)))
	var windows []window
	for i, name := range w.o.faults {
		at := start.Add(baseline + time.Duration(i)*slot)
		sleepCtx(ctx, time.Until(at))
		if ctx.Err() != nil {
			break
		}
		win := window{name: name, start: time.Now(), next: at.Add(slot)}
		logf(w, "fault %d: %s", i+1, name)
		win.err = w.inject(ctx, name, slot)
		win.back = time.Now()
		if win.err != nil {
			logf(w, "fault %s: %v", name, win.err)
		}
		windows = append(windows, win)
	}
	sleepCtx(ctx, time.Until(start.Add(w.o.d)))
	return windows
}

// inject does one fault and puts things back: a node, the broker or an
// instance down for a third of the slot (a pause: 20 s).
func (w *world) inject(ctx context.Context, name string, slot time.Duration) error {
	down := min(max(slot/3, 10*time.Second), 45*time.Second)
	switch name {
	case "node-kill":
		if err := w.cl.kill(2); err != nil {
			return err
		}
		sleepCtx(ctx, down)
		return w.cl.start(ctx, 2)
	case "node-stop":
		if err := w.cl.stop(ctx, 3); err != nil {
			return err
		}
		sleepCtx(ctx, down)
		return w.cl.start(ctx, 3)
	case "node-pause":
		if err := w.cl.signal(1, syscall.SIGSTOP); err != nil {
			return err
		}
		sleepCtx(ctx, 20*time.Second)
		return w.cl.signal(1, syscall.SIGCONT)
	case "broker-restart":
		w.broker.kill()
		sleepCtx(ctx, 2*time.Second)
		return w.broker.start()
	case "app-kill":
		w.apps[1].kill()
		sleepCtx(ctx, 5*time.Second)
		return w.apps[1].start(ctx, 2*time.Minute)
	}
	return fmt.Errorf("unknown fault %q", name)
}

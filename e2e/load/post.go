package main

// post: end-to-end HTTP post throughput against raw gocql inserts into the
// same table, with the same partition scheme, at the same concurrency.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store/inspect"
	"github.com/killrchat/killrchat/store/storetest"
)

type phase struct {
	name          string
	ok, failed    int64
	elapsed       time.Duration
	lat           durations
	codes         map[int]int64
	cassCPU, mine time.Duration
	// busy is the whole machine's CPU time in the phase; others is what
	// neither Cassandra nor this process used (other work on the machine).
	busy, others time.Duration
	// app is the child app process's CPU time (with -child).
	app time.Duration
}

func (p phase) rate() float64 { return float64(p.ok) / p.elapsed.Seconds() }

func (p phase) print() {
	fmt.Printf("%-5s %8.0f ops/s  ok=%d failed=%d in %s  latency %s\n", p.name, p.rate(), p.ok, p.failed,
		p.elapsed.Round(time.Millisecond), p.lat.summary())
	if p.cassCPU > 0 && p.ok > 0 {
		fmt.Printf("      CPU per op: Cassandra %.0fµs, this process %.0fµs (Cassandra %.0f%% of a core, this process %.0f%%)\n",
			float64(p.cassCPU.Microseconds())/float64(p.ok), float64(p.mine.Microseconds())/float64(p.ok),
			100*p.cassCPU.Seconds()/p.elapsed.Seconds(), 100*p.mine.Seconds()/p.elapsed.Seconds())
		if p.app > 0 {
			fmt.Printf("      CPU per op in the child app process: %.0fµs (%.0f%% of a core)\n",
				float64(p.app.Microseconds())/float64(p.ok), 100*p.app.Seconds()/p.elapsed.Seconds())
		}
		fmt.Printf("      machine busy %.0f%% of %d cores; other processes %.0f%% of a core\n",
			100*p.busy.Seconds()/p.elapsed.Seconds(), runtime.NumCPU(), 100*p.others.Seconds()/p.elapsed.Seconds())
	}
	if len(p.codes) > 0 {
		fmt.Printf("      status codes: %v\n", p.codes)
	}
}

// drive runs op from conc goroutines for d and times each call.
func drive(ctx context.Context, name string, conc int, d time.Duration, op func(ctx context.Context, worker int, i int64) (int, error)) phase {
	return drivePaced(ctx, name, conc, d, nil, op)
}

// drivePaced is drive, each worker waiting for pace (if not nil) before
// each call, outside the call's time.
func drivePaced(ctx context.Context, name string, conc int, d time.Duration, pace func(ctx context.Context, worker int) error,
	op func(ctx context.Context, worker int, i int64) (int, error)) phase {
	cass := cassandraPID()
	c0, m0 := cpuTime(cass), cpuTime(os.Getpid())
	b0, _ := machineCPU()
	a0 := cpuTime(childPID)
	var ok, failed atomic.Int64
	var seq atomic.Int64
	var mu sync.Mutex
	var all durations
	codes := map[int]int64{}
	var firstErr atomic.Value
	t0 := time.Now()
	end := t0.Add(d)
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine durations
			myCodes := map[int]int64{}
			for time.Now().Before(end) && ctx.Err() == nil {
				if pace != nil && pace(ctx, w) != nil {
					break
				}
				s := time.Now()
				code, err := op(ctx, w, seq.Add(1))
				if code != 0 {
					myCodes[code]++
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				mine = append(mine, time.Since(s))
				ok.Add(1)
			}
			mu.Lock()
			all = append(all, mine...)
			for k, v := range myCodes {
				codes[k] += v
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	p := phase{name: name, ok: ok.Load(), failed: failed.Load(), elapsed: time.Since(t0), lat: all}
	if len(codes) > 0 {
		p.codes = codes
	}
	if cass != 0 {
		p.cassCPU = cpuTime(cass) - c0
	}
	p.mine = cpuTime(os.Getpid()) - m0
	b1, _ := machineCPU()
	p.busy = b1 - b0
	if childPID != 0 {
		p.app = cpuTime(childPID) - a0
	}
	p.others = max(0, p.busy-p.cassCPU-p.mine-p.app)
	if err, _ := firstErr.Load().(error); err != nil {
		logf("%s: first error: %v", name, err)
	}
	return p
}

func runPost(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("post", flag.ExitOnError)
	var c common
	c.register(fs)
	nUsers := fs.Int("users", 16, "users logged in, all participants of the room")
	conc := fs.Int("c", 16, "concurrency (goroutines) of both the HTTP posts and the raw inserts")
	dur := fs.Duration("d", 10*time.Second, "duration of each measured phase")
	warm := fs.Duration("warmup", 2*time.Second, "warm-up before each phase")
	cpuProfile := fs.String("cpuprofile", "", "write the app's CPU profile during the HTTP phase to this file")
	traceFile := fs.String("trace", "", "write the app's execution trace (go tool trace) of 2 s of the HTTP phase to this file")
	httpOnly := fs.Bool("http-only", false, "measure the HTTP posts alone (no raw or store phases)")
	breakdown := fs.Bool("breakdown", false, "also time the session read and the room read alone")
	htmx := fs.Bool("htmx", true, "post as htmx does (HX-Request, X-CSRF-Token; 200 with a fragment) instead of a plain form (303)")
	pushProfile := fs.String("push-profile", "", "with -push-subs: write the app's CPU profile during the push room's phase to this file")
	pushSubs := fs.Int("push-subs", 0, "then post as much again into a room where this many more people, away, are at \"everything\" with a push subscription each (to a push service here)")
	_ = fs.Parse(args)
	if *dur > 60*time.Second || *conc > 512 || *nUsers > 1000 {
		return fmt.Errorf("keep -d <= 60s, -c <= 512, -users <= 1000")
	}

	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Keyspace == "" {
		return fmt.Errorf("post needs the keyspace for the raw inserts: give -keyspace with -url")
	}
	logf("app %s at %s, keyspace %s", t.Where, t.URL, t.Keyspace)

	tr := newTransport(*conc * 2)
	id := runID()
	users, err := signUpMany(ctx, t.URL, "lp"+id+"u", *nUsers, tr)
	if err != nil {
		return err
	}
	room := "lpost" + id
	if err := setupRoom(ctx, room, users); err != nil {
		return err
	}
	logf("%d users in room %s", len(users), room)

	// Raw inserts: same table, same partition scheme (room_name, day
	// bucket yyyyMMdd, timeuuid), same consistency as the store (LOCAL_QUORUM),
	// same content size; a room of their own.
	sess, err := inspect.Open(storetest.Hosts(), inspect.Options{Keyspace: t.Keyspace, Timeout: 10 * time.Second, Retries: 2})
	if err != nil {
		return err
	}
	defer sess.Close()
	rawRoom := room + "-raw"
	author := chat.UserRef{Login: users[0].login, Firstname: "Load", Lastname: users[0].login}
	content := func(w int, i int64) string { return fmt.Sprintf("load message %d from worker %d", i, w) }
	raw := func(ctx context.Context, w int, i int64) (int, error) {
		return 0, sess.InsertMessage(ctx, rawRoom, author, content(w, i))
	}
	okCode := http.StatusSeeOther
	if *htmx {
		okCode = http.StatusOK
	}
	post := func(ctx context.Context, w int, i int64) (int, error) {
		u := users[w%len(users)]
		code, body, err := u.post(ctx, "/rooms/"+room+"/messages", url.Values{"content": {content(w, i)}}, *htmx)
		if err == nil && code != okCode {
			err = fmt.Errorf("POST: %d %.200s", code, body)
		}
		return code, err
	}

	logf("raw inserts: warm-up %s, then %s at concurrency %d", *warm, *dur, *conc)
	var rawP phase
	if !*httpOnly {
		drive(ctx, "raw", *conc, *warm, raw)
		rawP = drive(ctx, "raw", *conc, *dur, raw)
	}
	// The same Cassandra work as one HTTP post, through the store without
	// HTTP: session read, room read, message insert.
	var storeP, store3P phase
	var extra []phase
	if t.Store != nil && !*httpOnly {
		room, err := t.Store.RoomFor(ctx, room, author.Login)
		if err != nil {
			return err
		}
		sid := "loadsession" + id
		if err := t.Store.SaveSession(ctx, sid, chat.SessionRow{Login: users[0].login, Data: make([]byte, 120)}, time.Hour); err != nil {
			return err
		}
		storeOnly := func(ctx context.Context, w int, i int64) (int, error) {
			_, err := t.Store.PostMessage(ctx, room, author, content(w, i))
			return 0, err
		}
		store3 := func(ctx context.Context, w int, i int64) (int, error) {
			if _, err := t.Store.Session(ctx, sid); err != nil {
				return 0, err
			}
			r, err := t.Store.RoomFor(ctx, room.Name, author.Login)
			if err != nil {
				return 0, err
			}
			_, err = t.Store.PostMessage(ctx, r, author, content(w, i))
			return 0, err
		}
		logf("store PostMessage: warm-up %s, then %s at concurrency %d", *warm, *dur, *conc)
		drive(ctx, "store", *conc, *warm, storeOnly)
		storeP = drive(ctx, "store", *conc, *dur, storeOnly)
		logf("store Session+Room+PostMessage: %s at concurrency %d", *dur, *conc)
		store3P = drive(ctx, "store3", *conc, *dur, store3)
		if *breakdown {
			for _, ph := range []struct {
				name string
				op   func(ctx context.Context, w int, i int64) (int, error)
			}{
				{"session-read", func(ctx context.Context, w int, i int64) (int, error) {
					_, err := t.Store.Session(ctx, sid)
					return 0, err
				}},
				{"room-read", func(ctx context.Context, w int, i int64) (int, error) {
					_, err := t.Store.Room(ctx, room.Name)
					return 0, err
				}},
			} {
				logf("%s: %s at concurrency %d", ph.name, *dur, *conc)
				extra = append(extra, drive(ctx, ph.name, *conc, *dur, ph.op))
			}
		}
	}

	logf("HTTP posts: warm-up %s, then %s at concurrency %d (htmx=%v)", *warm, *dur, *conc, *htmx)
	drive(ctx, "http", *conc, *warm, post)
	profiled := make(chan struct{})
	if *cpuProfile != "" {
		go func() {
			defer close(profiled)
			secs := max(1, int(dur.Seconds())-1)
			if err := t.saveProfile(ctx, fmt.Sprintf("/_load/pprof/profile?seconds=%d", secs), *cpuProfile); err != nil {
				logf("cpu profile: %v", err)
			}
		}()
	} else {
		close(profiled)
	}
	traced := make(chan struct{})
	if *traceFile != "" {
		go func() {
			defer close(traced)
			if err := t.saveProfile(ctx, "/_load/pprof/trace?seconds=2", *traceFile); err != nil {
				logf("trace: %v", err)
			}
		}()
	} else {
		close(traced)
	}
	httpP := drive(ctx, "http", *conc, *dur, post)
	<-traced
	<-profiled

	// The same posts into a room of people away who each get a push.
	var pushP phase
	var ps *pushService
	if *pushSubs > 0 {
		ps = startPushService()
		defer ps.srv.Close()
		pushRoom := room + "-push"
		if err := setupRoom(ctx, pushRoom, users); err != nil {
			return err
		}
		logf("%d people away, at everything, with a subscription each, join %s", *pushSubs, pushRoom)
		if _, err := setupPushRoom(ctx, t, pushRoom, *pushSubs, ps, tr); err != nil {
			return err
		}
		postPush := func(ctx context.Context, w int, i int64) (int, error) {
			u := users[w%len(users)]
			code, body, err := u.post(ctx, "/rooms/"+pushRoom+"/messages", url.Values{"content": {content(w, i)}}, *htmx)
			if err == nil && code != okCode {
				err = fmt.Errorf("POST: %d %.200s", code, body)
			}
			return code, err
		}
		// The plain room's posts again right before, for a fair pair.
		logf("HTTP posts, plain room again: %s at concurrency %d", *dur, *conc)
		httpP = drive(ctx, "http", *conc, *dur, post)
		before, _ := pushCounts(ctx, t.URL)
		logf("HTTP posts into the push room: %s at concurrency %d", *dur, *conc)
		profiled := make(chan struct{})
		if *pushProfile != "" {
			go func() {
				defer close(profiled)
				secs := max(1, int(dur.Seconds())-1)
				if err := t.saveProfile(ctx, fmt.Sprintf("/_load/pprof/profile?seconds=%d", secs), *pushProfile); err != nil {
					logf("cpu profile: %v", err)
				}
			}()
		} else {
			close(profiled)
		}
		pushP = drive(ctx, "http+push", *conc, *dur, postPush)
		<-profiled
		after, _ := pushCounts(ctx, t.URL)
		defer func() {
			fmt.Printf("pushes during the http+push phase (from /metrics): sent %.0f, dropped %.0f messages (queue full), failed %.0f; the push service got %d in all so far\n",
				after["sent"]-before["sent"], after["dropped"]-before["dropped"], after["failed"]-before["failed"], ps.received.Load())
			measureDrain(ps, *dur)
		}()
	}

	fmt.Printf("\n== post: %d users, concurrency %d, %s per phase, app %s\n", len(users), *conc, *dur, t.Where)
	if rawP.ok > 0 {
		rawP.print()
	}
	if storeP.ok > 0 {
		storeP.print()
		store3P.print()
		for _, p := range extra {
			p.print()
		}
	}
	httpP.print()
	if pushP.ok > 0 {
		pushP.print()
		fmt.Printf("post rate with pushes / without = %.2f (%d people away at everything, app --push-rate %v)\n",
			pushP.rate()/httpP.rate(), *pushSubs, c.pushRate)
	}
	if rawP.ok > 0 {
		ratio := httpP.rate() / rawP.rate()
		// Issue 13's target (the messages issue asked 0.6 before the hot path
		// was measured; see its note).
		verdict := "OK (target >= 0.45)"
		if ratio < 0.45 {
			verdict = "BELOW target 0.45"
		}
		fmt.Printf("ratio http/raw = %.2f  %s\n", ratio, verdict)
	}

	t.printLogCounts(ctx)

	// What one post costs in statements: a short census with the recorder
	// on (in-process only; not part of the timed phases).
	if t.Recorder != nil {
		t.Recorder.Start()
		census := drive(ctx, "census", *conc, time.Second, post)
		got := t.Recorder.Stop()
		// A batch is one statement sent, named by its first statement's
		// kind (a group of posts' messages: store/groupcommit.go).
		kinds := map[string]int{}
		sent := 0
		for _, q := range got {
			switch {
			case !q.Batch:
				kinds[statementKind(q.Statement)]++
				sent++
			case q.BatchIndex == 0:
				kinds["BATCH of "+statementKind(q.Statement)]++
				sent++
			}
		}
		keys := make([]string, 0, len(kinds))
		for k := range kinds {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Printf("statements per HTTP post (census of %d posts):\n", census.ok)
		for _, k := range keys {
			fmt.Printf("  %5.2f  %s\n", float64(kinds[k])/float64(max(census.ok, 1)), k)
		}
		fmt.Printf("  %5.2f  in all\n", float64(sent)/float64(max(census.ok, 1)))
	}
	return nil
}

// statementKind is "VERB table" of a CQL statement (plus " IF" for LWTs).
func statementKind(stmt string) string {
	f := strings.Fields(stmt)
	if len(f) == 0 {
		return ""
	}
	verb := strings.ToUpper(f[0])
	table := ""
	for i, w := range f[:len(f)-1] {
		u := strings.ToUpper(w)
		if u == "FROM" || u == "INTO" || (verb == "UPDATE" && i == 0) {
			table = f[i+1]
			break
		}
	}
	k := verb + " " + table
	for _, w := range f {
		if strings.ToUpper(w) == "IF" {
			return k + " IF"
		}
	}
	return k
}

package main

// sse: delivery latency from "POST accepted" to "event received" with many
// subscribers in one room, and the memory and goroutines an idle SSE
// connection costs the server.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const seqMark = "loadseq-"

// seqOf is the sequence number a load message carries, or -1.
func seqOf(data string) int {
	i := strings.Index(data, seqMark)
	if i < 0 {
		return -1
	}
	j := i + len(seqMark)
	k := j
	for k < len(data) && data[k] >= '0' && data[k] <= '9' {
		k++
	}
	n, err := strconv.Atoi(data[j:k])
	if err != nil {
		return -1
	}
	return n
}

func printStats(label string, s serverStats) {
	fmt.Printf("  %-28s goroutines=%-6d heap_inuse=%-10s heap_alloc=%-10s stack_inuse=%-10s sys=%-10s rss=%s\n", label,
		s.Goroutines, mib(float64(s.HeapInuse)), mib(float64(s.HeapAlloc)), mib(float64(s.StackInuse)), mib(float64(s.Sys)), mib(float64(s.RSS)))
}

func runSSE(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sse", flag.ExitOnError)
	var c common
	c.register(fs)
	nSubs := fs.Int("subs", 1000, "SSE subscribers, each its own HTTP connection")
	nUsers := fs.Int("users", 10, "users the subscribers' sessions belong to (round robin)")
	rate := fs.Float64("rate", 20, "messages posted per second")
	dur := fs.Duration("d", 20*time.Second, "how long to post")
	idle := fs.Duration("idle", 3*time.Second, "idle wait before measuring memory with all connected")
	settle := fs.Duration("settle", 5*time.Second, "wait after all disconnect before measuring again")
	cycles := fs.Int("cycles", 1, "connect/disconnect cycles without posting after the main one, to see whether memory creeps")
	cpuProfile := fs.String("cpuprofile", "", "write the app's CPU profile while posting to this file")
	heapProfile := fs.String("heapprofile", "", "write the app's heap profile with all connected and idle to this file")
	readers := fs.Int("readers", 2, "threads the load generator reads the streams with")
	loadProfile := fs.String("loadprofile", "", "write the load generator's own CPU profile while posting to this file")
	floor := fs.Bool("floor", true, "run floor (with the same subscribers, rate and duration) before the app and again after it, and compare (with -child)")
	floorSize := fs.Int("floorsize", 2241, "bytes a frame for the floor before the app (the one after writes the app's event size as measured)")
	_ = fs.Parse(args)
	if *nSubs > 10000 || *dur > 60*time.Second || *rate > 200 {
		return fmt.Errorf("keep -subs <= 10000, -d <= 60s, -rate <= 200")
	}
	// Each subscriber is a descriptor on both sides: with both in one
	// process, more than ~9,000 exceed the 20,000 descriptors per process.
	if *nSubs > 9000 && !c.child && c.url == "" {
		return fmt.Errorf("-subs over 9000 needs -child or -url (client and app in one process would need %d descriptors)", 2**nSubs)
	}
	nMsgs := int(*rate * dur.Seconds())
	// The floor before the app and again after it, on the same machine
	// within minutes: runs apart differ more than the app and the floor do.
	*floor = *floor && c.child
	var floorBefore time.Duration
	if *floor {
		var err error
		if floorBefore, err = measureFloor(ctx, *nSubs, *rate, *dur, *floorSize, *readers); err != nil {
			return err
		}
	}

	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	logf("app %s at %s", t.Where, t.URL)
	id := runID()
	tr := newTransport(16)
	users, err := signUpMany(ctx, t.URL, "ls"+id+"u", *nUsers, tr)
	if err != nil {
		return err
	}
	room := "lsse" + id
	if err := setupRoom(ctx, room, users); err != nil {
		return err
	}

	base, err := t.Stats(ctx, true)
	if err != nil {
		return fmt.Errorf("server stats: %w", err)
	}

	// Subscribers: one connection each, no keep-alive reuse.
	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	recv := make([][]int64, *nSubs) // recv[sub][seq] = unix nanos received
	for i := range recv {
		recv[i] = make([]int64, nMsgs)
	}
	var connected, failedConn, deleted, foreign, dupes, ended, frameBytes atomic.Int64
	var wg sync.WaitGroup
	poller, err := newStreamPoller(subCtx, *readers)
	if err != nil {
		return err
	}
	sem := make(chan struct{}, 50)
	ready := make(chan struct{}, *nSubs)
	t0 := time.Now()
	for i := 0; i < *nSubs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			st, err := dialStream(subCtx, t.subURL(), room, users[i%len(users)].jar)
			<-sem
			if err != nil {
				failedConn.Add(1)
				ready <- struct{}{}
				logf("subscriber %d: %v", i, err)
				return
			}
			connected.Add(1)
			ready <- struct{}{}
			mine := recv[i]
			streamEnded, err := poller.add(st, func(ev []byte, at time.Time) bool {
				if !bytes.Contains(ev, []byte("data: ")) {
					return true // a comment
				}
				if string(eventName(ev)) == "room-deleted" {
					deleted.Add(1)
					return false
				}
				n := seqOfBytes(ev)
				switch {
				case n < 0 && !bytes.Contains(ev, []byte(`id="msg-`)):
					// participants list or other non-message event
				case n < 0 || n >= len(mine):
					foreign.Add(1)
				case atomic.LoadInt64(&mine[n]) != 0:
					dupes.Add(1)
				default:
					atomic.StoreInt64(&mine[n], at.UnixNano())
					frameBytes.Store(int64(len(ev) + 1))
				}
				return true
			})
			if err != nil {
				logf("subscriber %d: %v", i, err)
				return
			}
			<-streamEnded
			if subCtx.Err() == nil {
				ended.Add(1) // the server ended the stream
			}
		}()
	}
	connectDeadline := time.After(max(90*time.Second, time.Duration(*nSubs)*15*time.Millisecond))
	for n := 0; n < *nSubs; n++ {
		select {
		case <-ready:
		case <-connectDeadline:
			return fmt.Errorf("only %d of %d subscribers connected in time", connected.Load(), *nSubs)
		}
	}
	connectTime := time.Since(t0)
	if failedConn.Load() > 0 {
		return fmt.Errorf("%d subscribers failed to connect", failedConn.Load())
	}
	logf("%d subscribers connected in %s; idle %s", connected.Load(), connectTime.Round(time.Millisecond), *idle)
	// What the app spends with every stream open and nothing to send
	// (heartbeats, timers, the runtime), to set beside the posting CPU.
	idle0, idleStart := cpuTime(childPID), time.Now()
	time.Sleep(*idle)
	idleRate := float64(cpuTime(childPID)-idle0) / float64(time.Since(idleStart))
	full, err := t.Stats(ctx, true)
	if err != nil {
		return err
	}
	if *heapProfile != "" {
		if err := t.saveProfile(ctx, "/_load/pprof/heap", *heapProfile); err != nil {
			logf("heap profile: %v", err)
		}
	}
	if *cpuProfile != "" {
		secs := max(1, int(dur.Seconds())-2)
		go func() {
			if err := t.saveProfile(ctx, fmt.Sprintf("/_load/pprof/profile?seconds=%d", secs), *cpuProfile); err != nil {
				logf("cpu profile: %v", err)
			}
		}()
	}
	if *loadProfile != "" {
		f, err := os.Create(*loadProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
	}
	cpu0, app0 := cpuTime(os.Getpid()), cpuTime(childPID)

	// Post at a steady rate; each post in its own goroutine so a slow one
	// does not delay the schedule. Times: sent and accepted (response in).
	sent := make([]int64, nMsgs)
	accepted := make([]int64, nMsgs)
	var postFail atomic.Int64
	postTr := newTransport(64)
	poster := newClient(t.URL, postTr)
	poster.jar, poster.hc.Jar, poster.csrf = users[0].jar, users[0].jar, users[0].csrf
	logf("posting %d messages at %.0f/s", nMsgs, *rate)
	interval := time.Duration(float64(time.Second) / *rate)
	tick := time.NewTicker(interval)
	var pw sync.WaitGroup
	postStart := time.Now()
	for n := 0; n < nMsgs; n++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		pw.Add(1)
		go func() {
			defer pw.Done()
			sent[n] = time.Now().UnixNano()
			code, body, err := poster.post(ctx, "/rooms/"+room+"/messages",
				url.Values{"content": {fmt.Sprintf("%s%d here", seqMark, n)}}, true)
			accepted[n] = time.Now().UnixNano()
			if err != nil || code != http.StatusOK {
				postFail.Add(1)
				accepted[n] = 0
				logf("post %d: %d %v %.100s", n, code, err, body)
			}
		}()
	}
	tick.Stop()
	pw.Wait()
	postTime := time.Since(postStart)
	cpuLoad, cpuApp := cpuTime(os.Getpid())-cpu0, cpuTime(childPID)-app0
	if *loadProfile != "" {
		pprof.StopCPUProfile()
	}
	// Let the last deliveries arrive: until every subscriber has every
	// accepted message, or 15 s.
	drainDeadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(drainDeadline) {
		missing := 0
		for s := range recv {
			for n := range recv[s] {
				if accepted[n] != 0 && atomic.LoadInt64(&recv[s][n]) == 0 {
					missing++
				}
			}
		}
		if missing == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	during, _ := t.Stats(ctx, false)

	var fromAccepted, fromSent durations
	early, missing := 0, 0
	var perMsgMax durations
	for n := 0; n < nMsgs; n++ {
		if accepted[n] == 0 {
			continue
		}
		var worst time.Duration
		for s := range recv {
			r := atomic.LoadInt64(&recv[s][n])
			if r == 0 {
				missing++
				continue
			}
			d := time.Duration(r - accepted[n])
			if d < 0 {
				early++
				d = 0
			}
			fromAccepted = append(fromAccepted, d)
			fromSent = append(fromSent, time.Duration(r-sent[n]))
			worst = max(worst, d)
		}
		perMsgMax = append(perMsgMax, worst)
	}

	// Disconnect everyone, then see the server return to its baseline.
	stopSubs()
	wg.Wait()
	// Idle keep-alive connections are not SSE connections: close them too.
	tr.CloseIdleConnections()
	postTr.CloseIdleConnections()
	var after serverStats
	deadline := time.Now().Add(*settle + 20*time.Second)
	time.Sleep(*settle)
	for {
		after, err = t.Stats(ctx, true)
		if err != nil || after.Goroutines <= base.Goroutines+5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}

	n := float64(*nSubs)
	fmt.Printf("\n== sse: %d subscribers (%d users), %d messages at %.0f/s over %s, app %s\n",
		*nSubs, len(users), nMsgs, *rate, postTime.Round(time.Millisecond), t.Where)
	fmt.Printf("connect: all %d in %s; a message event is %d bytes on the wire\n", connected.Load(), connectTime.Round(time.Millisecond), frameBytes.Load())
	fmt.Printf("delivery latency from POST accepted: %s\n", fromAccepted.summary())
	fmt.Printf("delivery latency from POST sent:     %s\n", fromSent.summary())
	fmt.Printf("slowest subscriber per message:      %s\n", perMsgMax.summary())
	fmt.Printf("deliveries: %d of %d expected; missing %d, duplicated %d, foreign %d, before-accept %d, posts failed %d, streams ended by server %d, room-deleted %d\n",
		len(fromAccepted), int(n)*(nMsgs-int(postFail.Load())), missing, dupes.Load(), foreign.Load(), early, postFail.Load(), ended.Load(), deleted.Load())
	if d := float64(len(fromAccepted)); d > 0 {
		if childPID != 0 {
			fmt.Printf("CPU while posting: app %.0f%% of a core (%.1fµs per delivered event), load generator %.0f%% (%.1fµs per event)\n",
				100*cpuApp.Seconds()/postTime.Seconds(), float64(cpuApp.Microseconds())/d,
				100*cpuLoad.Seconds()/postTime.Seconds(), float64(cpuLoad.Microseconds())/d)
			fmt.Printf("CPU while idle before posting, all connected: app %.1f%% of a core (%.1fµs per delivered event over the posting time)\n",
				100*idleRate, idleRate*float64(postTime.Microseconds())/d)
		} else {
			fmt.Printf("CPU while posting: app + load generator %.0f%% of a core (%.1fµs per delivered event)\n",
				100*cpuLoad.Seconds()/postTime.Seconds(), float64(cpuLoad.Microseconds())/d)
		}
	}
	if t.inProcess {
		fmt.Println("memory (in-process: figures include the load generator's client side of every connection):")
	} else {
		fmt.Println("memory (app process only):")
	}
	printStats("baseline (after GC)", base)
	printStats(fmt.Sprintf("%d idle connected (GC)", *nSubs), full)
	printStats("while posting (no GC)", during)
	printStats("all disconnected (GC)", after)
	fmt.Printf("  per idle connection: rss %.1f KiB, heap_inuse %.1f KiB, stack_inuse %.1f KiB, goroutines %.2f\n",
		(float64(full.RSS)-float64(base.RSS))/n/1024, (float64(full.HeapInuse)-float64(base.HeapInuse))/n/1024,
		(float64(full.StackInuse)-float64(base.StackInuse))/n/1024, float64(full.Goroutines-base.Goroutines)/n)
	fmt.Printf("  after disconnect vs baseline: goroutines %+d, rss %+.1f MiB, heap_inuse %+.1f MiB\n",
		after.Goroutines-base.Goroutines, (float64(after.RSS)-float64(base.RSS))/(1<<20), (float64(after.HeapInuse)-float64(base.HeapInuse))/(1<<20))
	for cy := 1; cy <= *cycles && ctx.Err() == nil; cy++ {
		if err := idleCycle(ctx, t, room, users, *nSubs, *idle); err != nil {
			return err
		}
		time.Sleep(*settle)
		st, err := t.Stats(ctx, true)
		if err != nil {
			return err
		}
		printStats(fmt.Sprintf("after idle cycle %d (GC)", cy), st)
	}
	t.printLogCounts(ctx)
	if missing > 0 || dupes.Load() > 0 || postFail.Load() > 0 {
		return fmt.Errorf("deliveries incomplete: missing %d, duplicated %d, posts failed %d", missing, dupes.Load(), postFail.Load())
	}
	if *floor && childPID != 0 && len(fromAccepted) > 0 {
		floorAfter, err := measureFloor(ctx, *nSubs, *rate, *dur, int(frameBytes.Load()), *readers)
		if err != nil {
			return err
		}
		app := float64(cpuApp.Nanoseconds()) / float64(len(fromAccepted))
		before, after := float64(floorBefore.Nanoseconds()), float64(floorAfter.Nanoseconds())
		fmt.Printf("\n== app / floor: %.2f× the floors' mean (app %.1fµs of CPU per delivered event; floor %.1fµs per write before the app, %d-byte frames, and %.1fµs after, %d-byte frames: %.2f× and %.2f×)\n",
			app/((before+after)/2), app/1000, before/1000, *floorSize, after/1000, frameBytes.Load(), app/before, app/after)
	}
	return nil
}

// idleCycle connects n subscribers, waits idle, and disconnects them all.
func idleCycle(ctx context.Context, t *target, room string, users []*user, n int, idle time.Duration) error {
	tr := newTransport(0)
	tr.DisableKeepAlives = true
	defer tr.CloseIdleConnections()
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Int64
	var resps sync.Map
	sem := make(chan struct{}, 50)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			resp, err := openStream(cctx, &http.Client{Transport: tr, Jar: users[i%len(users)].jar}, t.URL, room, "", "")
			if err != nil {
				failed.Add(1)
				return
			}
			resps.Store(i, resp)
		}()
	}
	wg.Wait()
	time.Sleep(idle)
	resps.Range(func(_, v any) bool {
		v.(*http.Response).Body.Close()
		return true
	})
	if failed.Load() > 0 {
		return fmt.Errorf("idle cycle: %d of %d connections failed", failed.Load(), n)
	}
	return nil
}

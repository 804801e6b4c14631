package main

// roompage: the latency of a room page as a person sees it, one request
// after another: a page of 50 messages, with a sidebar of 12 rooms and 3
// DMs, everything read (issue 13's "room page p50/p99"). Its figure is
// mostly waiting on Cassandra: the statements the page runs, whether they
// run one after another or at once, and the rows they read. -messages puts
// that many messages in the room's newest day bucket (issue 22: a page
// must cost the same in a bucket of 50 messages and one of 20,000).
// With -c it also loads the page from that many readers at once for -d:
// pages a second, latency, status codes, CPU per page of Cassandra and
// (with -child) of the app, optionally under a CPU profile of the app;
// and it reports the page's weight with and without gzip and, with the
// app in this process, the statements and rows one page reads.

import (
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/killrchat/killrchat/store"
)

// pagePosts are the messages of a room page posted through HTTP, as a
// person would; any more that -messages asks for are written straight to
// the store, which takes seconds instead of minutes.
const pagePosts = 50

func runRoomPage(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("roompage", flag.ExitOnError)
	var c common
	c.register(fs)
	n := fs.Int("n", 1000, "room pages to load, one after another")
	rooms := fs.Int("rooms", 12, "rooms of the reader (the page's room is one of them)")
	dms := fs.Int("dms", 3, "DMs of the reader")
	messages := fs.Int("messages", pagePosts, "messages in the room's newest day bucket (the page shows the newest 50)")
	conc := fs.Int("c", 0, "then load the page from this many readers at once for -d (0: only the sequential run)")
	dur := fs.Duration("d", 10*time.Second, "with -c: how long")
	cpuProfile := fs.String("cpuprofile", "", "with -c: write the app's CPU profile of that phase to this file")
	gz := fs.Bool("gzip", false, "with -c: the readers accept gzip, as browsers do (the answer is read, not inflated)")
	_ = fs.Parse(args)
	if *n > 100_000 || *rooms > 500 || *dms > 100 || *messages < 1 || *messages > 1_000_000 {
		return fmt.Errorf("keep -n <= 100000, -rooms <= 500, -dms <= 100, 1 <= -messages <= 1000000")
	}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	logf("app %s at %s", t.Where, t.URL)
	id := runID()
	tr := newTransport(8)
	users, err := signUpMany(ctx, t.URL, "rp"+id+"u", 1+*dms, tr)
	if err != nil {
		return err
	}
	reader := users[0]
	var room string
	for i := 0; i < *rooms; i++ {
		room = fmt.Sprintf("rpage%s%d", id, i)
		if err := setupRoom(ctx, room, users[:1]); err != nil {
			return err
		}
	}
	if *messages > pagePosts {
		if t.Store == nil {
			return errors.New("-messages over 50 writes to the app's keyspace: give -keyspace with -url")
		}
		t0 := time.Now()
		if err := fillRoom(ctx, t.Store, room, reader.login, *messages-pagePosts); err != nil {
			return err
		}
		logf("%d messages written to %s in %v", *messages-pagePosts, room, time.Since(t0).Round(time.Millisecond))
	}
	for i := 0; i < min(*messages, pagePosts); i++ {
		if code, _, err := reader.post(ctx, "/rooms/"+room+"/messages", url.Values{"content": {fmt.Sprintf("message %d of the page", i)}}, true); err != nil || code != http.StatusOK {
			return fmt.Errorf("post %d: %d %v", i, code, err)
		}
	}
	for _, partner := range users[1:] {
		logins := []string{reader.login, partner.login}
		sort.Strings(logins)
		path := "/dm/" + logins[0] + "+" + logins[1] + "/messages"
		if code, _, err := partner.post(ctx, path, url.Values{"content": {"hello"}}, true); err != nil || code != http.StatusOK {
			return fmt.Errorf("dm: %d %v", code, err)
		}
		if code, _, err := reader.get(ctx, "/dm/"+logins[0]+"+"+logins[1]); err != nil || code != http.StatusOK {
			return fmt.Errorf("read dm: %d %v", code, err)
		}
	}
	var lat durations
	failed := 0
	for i := 0; i < *n && ctx.Err() == nil; i++ {
		t0 := time.Now()
		code, _, err := reader.get(ctx, "/rooms/"+room)
		if err != nil || code != http.StatusOK {
			failed++
			continue
		}
		lat = append(lat, time.Since(t0))
	}
	fmt.Printf("room page (%d messages in its newest bucket; %d rooms, %d DMs in the sidebar), sequential: %s (failed %d)\n",
		*messages, *rooms, *dms, lat.summary(), failed)
	if err := pageWeight(ctx, reader, "/rooms/"+room); err != nil {
		return err
	}
	if t.Recorder != nil {
		pageCensus(ctx, t, reader, "/rooms/"+room)
	}
	if *conc <= 0 {
		return nil
	}
	if *cpuProfile != "" {
		secs := max(1, int(dur.Seconds()))
		go func() {
			if err := t.saveProfile(ctx, fmt.Sprintf("/_load/pprof/profile?seconds=%d", secs), *cpuProfile); err != nil {
				logf("cpu profile: %v", err)
			}
		}()
	}
	fetch := reader.get
	if *gz {
		fetch = reader.getGzip
	}
	get := func(ctx context.Context, _ int, _ int64) (int, error) {
		code, _, err := fetch(ctx, "/rooms/"+room)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("room page: %d", code)
		}
		return code, err
	}
	logf("room page from %d readers at once for %v", *conc, *dur)
	p := drive(ctx, "page", *conc, *dur, get)
	p.print()
	if *cpuProfile != "" {
		time.Sleep(2 * time.Second) // the profile's answer
	}
	return nil
}

// pageWeight prints what the page weighs as sent without and with gzip,
// and what gzip costs a page at its fastest level and at its default
// (echo's unless set), measured here on the page's bytes.
func pageWeight(ctx context.Context, u *user, path string) error {
	var page []byte
	weigh := func(gz bool) (int, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.base+path, nil)
		if err != nil {
			return 0, 0, err
		}
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		t0 := time.Now()
		code, body, err := u.do(req)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET %s: %d", path, code)
		}
		if !gz {
			page = []byte(body)
		}
		return len(body), time.Since(t0), err
	}
	plain, _, err := weigh(false)
	if err != nil {
		return err
	}
	zipped, _, err := weigh(true)
	if err != nil {
		return err
	}
	fmt.Printf("page weight: %d bytes, %d with gzip as the app sends it (%.0f%%)\n",
		plain, zipped, 100*float64(zipped)/float64(max(plain, 1)))
	for _, level := range []int{gzip.BestSpeed, gzip.DefaultCompression} {
		const rounds = 200
		// One writer reset for each page, as echo's middleware keeps its
		// writers in a pool.
		var out countingWriter
		zw, _ := gzip.NewWriterLevel(&out, level)
		c0 := cpuTime(os.Getpid())
		for range rounds {
			out = 0
			zw.Reset(&out)
			_, _ = zw.Write(page)
			_ = zw.Close()
		}
		fmt.Printf("  gzip level %2d: %d bytes, %v CPU a page\n", level, out, (cpuTime(os.Getpid())-c0)/rounds)
	}
	return nil
}

// countingWriter counts what is written to it.
type countingWriter int

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

// pageCensus prints the statements and rows that one page reads, over a
// few pages with the app's statement recorder on.
func pageCensus(ctx context.Context, t *target, u *user, path string) {
	const pages = 10
	t.Recorder.Start()
	for range pages {
		_, _, _ = u.get(ctx, path)
	}
	got := t.Recorder.Stop()
	kinds, rows := map[string]int{}, map[string]int{}
	for _, q := range got {
		k := statementKind(q.Statement)
		kinds[k]++
		rows[k] += q.Rows
	}
	keys := make([]string, 0, len(kinds))
	for k := range kinds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("statements and rows per room page (census of %d pages):\n", pages)
	total, totalRows := 0, 0
	for _, k := range keys {
		fmt.Printf("  %5.2f statements %7.1f rows  %s\n", float64(kinds[k])/pages, float64(rows[k])/pages, k)
		total += kinds[k]
		totalRows += rows[k]
	}
	fmt.Printf("  %5.2f statements %7.1f rows  in all\n", float64(total)/pages, float64(totalRows)/pages)
}

// fillRoom writes n messages by author into room through the store, 32 at
// a time: all in today's bucket, like a busy day's. The room is read with
// the author's standing (rooms keep one row per member): without it the
// author is no participant and every post is refused.
func fillRoom(ctx context.Context, st *store.Store, room, author string, n int) error {
	r, err := st.RoomFor(ctx, room, author)
	if err != nil {
		return err
	}
	u, err := st.User(ctx, author)
	if err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				_, err := st.PostMessage(ctx, r, u.Ref(), fmt.Sprintf("message %d of a busy day", i))
				if err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return cmp.Or(first, ctx.Err())
}

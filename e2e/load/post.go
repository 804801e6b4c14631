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
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
)

const rawInsert = `INSERT INTO chat_room_messages (room_name, time_bucket, message_id, author, content, system_message)
	VALUES (?, ?, ?, ?, ?, ?)`

type phase struct {
	name          string
	ok, failed    int64
	elapsed       time.Duration
	lat           durations
	codes         map[int]int64
	cassCPU, mine time.Duration
}

func (p phase) rate() float64 { return float64(p.ok) / p.elapsed.Seconds() }

func (p phase) print() {
	fmt.Printf("%-5s %8.0f ops/s  ok=%d failed=%d in %s  latency %s\n", p.name, p.rate(), p.ok, p.failed,
		p.elapsed.Round(time.Millisecond), p.lat.summary())
	if p.cassCPU > 0 && p.ok > 0 {
		fmt.Printf("      CPU per op: Cassandra %.0fµs, this process %.0fµs (Cassandra %.0f%% of a core, this process %.0f%%)\n",
			float64(p.cassCPU.Microseconds())/float64(p.ok), float64(p.mine.Microseconds())/float64(p.ok),
			100*p.cassCPU.Seconds()/p.elapsed.Seconds(), 100*p.mine.Seconds()/p.elapsed.Seconds())
	}
	if len(p.codes) > 0 {
		fmt.Printf("      status codes: %v\n", p.codes)
	}
}

// drive runs op from conc goroutines for d and times each call.
func drive(ctx context.Context, name string, conc int, d time.Duration, op func(ctx context.Context, worker int, i int64) (int, error)) phase {
	cass := cassandraPID()
	c0, m0 := cpuTime(cass), cpuTime(os.Getpid())
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
	htmx := fs.Bool("htmx", true, "post as htmx does (HX-Request, X-CSRF-Token; 200 with a fragment) instead of a plain form (303)")
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
	cl := gocql.NewCluster(storetest.Hosts()...)
	cl.Keyspace = t.Keyspace
	cl.Consistency = gocql.LocalQuorum
	cl.Timeout = 10 * time.Second
	cl.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 2}
	sess, err := cl.CreateSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	rawRoom := room + "-raw"
	author := store.UserRef{Login: users[0].login, Firstname: "Load", Lastname: users[0].login}
	content := func(w int, i int64) string { return fmt.Sprintf("load message %d from worker %d", i, w) }
	raw := func(ctx context.Context, w int, i int64) (int, error) {
		now := time.Now().UTC()
		y, m, d := now.Date()
		return 0, sess.Query(rawInsert, rawRoom, y*10000+int(m)*100+d, gocql.UUIDFromTime(now), author, content(w, i), false).
			WithContext(ctx).Idempotent(true).Exec()
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
	drive(ctx, "raw", *conc, *warm, raw)
	rawP := drive(ctx, "raw", *conc, *dur, raw)
	logf("HTTP posts: warm-up %s, then %s at concurrency %d (htmx=%v)", *warm, *dur, *conc, *htmx)
	drive(ctx, "http", *conc, *warm, post)
	httpP := drive(ctx, "http", *conc, *dur, post)

	fmt.Printf("\n== post: %d users, concurrency %d, %s per phase, app %s\n", len(users), *conc, *dur, t.Where)
	rawP.print()
	httpP.print()
	ratio := httpP.rate() / rawP.rate()
	verdict := "OK (target >= 0.6)"
	if ratio < 0.6 {
		verdict = "BELOW target 0.6"
	}
	fmt.Printf("ratio http/raw = %.2f  %s\n", ratio, verdict)

	// What one post costs in statements: a short census with the recorder
	// on (in-process only; not part of the timed phases).
	if t.Recorder != nil {
		t.Recorder.Start()
		census := drive(ctx, "census", *conc, time.Second, post)
		got := t.Recorder.Stop()
		kinds := map[string]int{}
		for _, q := range got {
			f := strings.Fields(q.Statement)
			k := strings.Join(f[:min(len(f), 3)], " ")
			if i := strings.Index(q.Statement, " FROM "); i > 0 && strings.HasPrefix(strings.ToUpper(f[0]), "SELECT") {
				k = "SELECT ... FROM " + strings.Fields(q.Statement[i+6:])[0]
			}
			kinds[k]++
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
	}
	return nil
}

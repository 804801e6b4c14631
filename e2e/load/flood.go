package main

// flood: what a login flood does to everyone else. Many clients post wrong
// passwords as fast as they can (each costs a bcrypt comparison at the
// real cost) while one logged-in person reads a room page over and over;
// the room page's latency is compared with the same reads before the flood.
// The app's bcrypt work is bounded to GOMAXPROCS at a time, so the flood
// queues behind itself instead of taking every core.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

func runFlood(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("flood", flag.ExitOnError)
	var c common
	c.register(fs)
	_ = fs.Set("bcrypt-cost", "10") // the production cost: the flood is about bcrypt
	attackers := fs.Int("attackers", 64, "clients posting wrong passwords at once")
	d := fs.Duration("d", 10*time.Second, "length of each phase (quiet, then flood)")
	_ = fs.Parse(args)
	if *attackers > 2000 || *d > 5*time.Minute {
		return fmt.Errorf("keep -attackers <= 2000 and -d <= 5m")
	}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	logf("app %s at %s, bcrypt cost %d", t.Where, t.URL, c.cost)
	id := runID()
	tr := newTransport(*attackers + 8)
	users, err := signUpMany(ctx, t.URL, "lf"+id+"u", 2, tr)
	if err != nil {
		return err
	}
	reader, victim := users[0], users[1]
	room := "lflood" + id
	if err := setupRoom(ctx, room, users[:1]); err != nil {
		return err
	}
	for n := 0; n < 50; n++ {
		if code, _, err := reader.post(ctx, "/rooms/"+room+"/messages", url.Values{"content": {fmt.Sprintf("message %d", n)}}, true); err != nil || code != http.StatusOK {
			return fmt.Errorf("post %d: %d %v", n, code, err)
		}
	}

	readPages := func(ctx context.Context) (durations, int) {
		var lat durations
		failed := 0
		for ctx.Err() == nil {
			t0 := time.Now()
			code, _, err := reader.get(ctx, "/rooms/"+room)
			if ctx.Err() != nil {
				break
			}
			if err != nil || code != http.StatusOK {
				failed++
				continue
			}
			lat = append(lat, time.Since(t0))
		}
		return lat, failed
	}

	qctx, cancel := context.WithTimeout(ctx, *d)
	quiet, qfail := readPages(qctx)
	cancel()
	fmt.Printf("room page, quiet:       %s (failed %d)\n", quiet.summary(), qfail)

	clients := make([]*user, *attackers)
	for i := range clients {
		clients[i] = newClient(t.URL, tr)
		if err := clients[i].readCSRF(ctx, "/login"); err != nil {
			return err
		}
	}
	fctx, cancel := context.WithTimeout(ctx, *d)
	defer cancel()
	var attempts, refused atomic.Int64
	var wg sync.WaitGroup
	for _, a := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for fctx.Err() == nil {
				code, _, err := a.post(fctx, "/login", url.Values{"login": {victim.login}, "password": {"not-the-password"}}, false)
				if err != nil {
					continue
				}
				attempts.Add(1)
				if code != http.StatusUnauthorized {
					refused.Add(1)
				}
			}
		}()
	}
	flooded, ffail := readPages(fctx)
	wg.Wait()
	fmt.Printf("room page, login flood: %s (failed %d)\n", flooded.summary(), ffail)
	fmt.Printf("login flood: %d attackers, %d attempts (%.0f/s), %d not answered 401\n",
		*attackers, attempts.Load(), float64(attempts.Load())/d.Seconds(), refused.Load())
	q, f := quiet.sorted(), flooded.sorted()
	if len(q) > 0 && len(f) > 0 {
		fmt.Printf("p99 flood/quiet = %.2f\n", float64(f.pct(.99))/float64(q.pct(.99)))
	}
	return nil
}

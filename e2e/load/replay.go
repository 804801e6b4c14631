package main

// replay: the catch-up path alone. A room holds a fixed set of messages and
// nobody posts to it; many connections resume from the same Last-Event-ID
// at once, and each must receive exactly the stored messages after it, in
// order. With no message in flight, anything missing or reordered is lost
// by the server's replay itself. Optional background posts into another
// room load the CPU as a busy server would.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
)

func runReplay(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ExitOnError)
	var c common
	c.register(fs)
	nMsgs := fs.Int("messages", 300, "messages stored in the room before the test")
	from := fs.Int("from", 100, "resume after the message with this index")
	conns := fs.Int("conns", 200, "connections per round, opened at once")
	rounds := fs.Int("rounds", 10, "rounds")
	live := fs.Bool("live", false, "post one live message into the room just after each round's connections open")
	bg := fs.Int("background", 4, "goroutines posting into another room meanwhile (0: none)")
	_ = fs.Parse(args)
	if *nMsgs > 5000 || *conns > 2000 || *rounds > 100 || *from >= *nMsgs {
		return fmt.Errorf("keep -messages <= 5000, -conns <= 2000, -rounds <= 100, -from < -messages")
	}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Store == nil {
		return fmt.Errorf("replay reads the stored sequence from Cassandra: give -keyspace with -url")
	}
	logf("app %s at %s", t.Where, t.URL)
	id := runID()
	tr := newTransport(32)
	users, err := signUpMany(ctx, t.URL, "lr"+id+"u", 4, tr)
	if err != nil {
		return err
	}
	roomName, busyRoom := "lrep"+id, "lbusy"+id
	if err := setupRoom(ctx, roomName, users); err != nil {
		return err
	}
	if err := setupRoom(ctx, busyRoom, users); err != nil {
		return err
	}
	for n := 0; n < *nMsgs; n++ {
		code, body, err := users[n%len(users)].post(ctx, "/rooms/"+roomName+"/messages",
			url.Values{"content": {fmt.Sprintf("replay %d", n)}}, true)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("post %d: %d %v %.100s", n, code, err, body)
		}
	}
	room, err := t.Store.Room(ctx, roomName)
	if err != nil {
		return err
	}
	all, _, err := t.Store.MessagesAfter(ctx, room, chat.ID{}, 100000)
	if err != nil {
		return err
	}
	// all holds the join messages first, then the posts.
	base := len(all) - *nMsgs
	since := all[base+*from].ID.String()
	var want []string
	for _, m := range all[base+*from+1:] {
		want = append(want, m.ID.String())
	}
	logf("room %s holds %d messages; resuming after #%d: %d expected per connection", roomName, len(all), *from, len(want))

	bgCtx, stopBG := context.WithCancel(ctx)
	defer stopBG()
	var bgWG sync.WaitGroup
	var bgPosts atomic.Int64
	for g := 0; g < *bg; g++ {
		bgWG.Add(1)
		go func() {
			defer bgWG.Done()
			for n := 0; n < 1_000_000 && bgCtx.Err() == nil; n++ {
				code, _, err := users[g%len(users)].post(bgCtx, "/rooms/"+busyRoom+"/messages",
					url.Values{"content": {fmt.Sprintf("busy %d", n)}}, true)
				if err == nil && code == http.StatusOK {
					bgPosts.Add(1)
				}
			}
		}()
	}

	sseTr := newTransport(0)
	sseTr.DisableKeepAlives = true
	type result struct {
		got   []string
		err   error
		ended bool
	}
	var totalOK, totalBad, missingFirst, missingOther, extra, ended int
	var examples []string
	t0 := time.Now()
	sinceID, _ := chat.ParseID(since)
	stored := func() ([]string, error) {
		ms, _, err := t.Store.MessagesAfter(ctx, room, sinceID, 100000)
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = m.ID.String()
		}
		return ids, err
	}
	for r := 0; r < *rounds && ctx.Err() == nil; r++ {
		if want, err = stored(); err != nil {
			return err
		}
		expect := len(want)
		if *live {
			expect++
		}
		res := make([]result, *conns)
		var wg sync.WaitGroup
		if *live {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(30 * time.Millisecond)
				code, body, err := users[0].post(ctx, "/rooms/"+roomName+"/messages",
					url.Values{"content": {fmt.Sprintf("live %d", r)}}, true)
				if err != nil || code != http.StatusOK {
					logf("live post: %d %v %.100s", code, err, body)
				}
			}()
		}
		for i := range res {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(ctx, 8*time.Second)
				defer cancel()
				hc := &http.Client{Transport: sseTr, Jar: users[i%len(users)].jar}
				resp, err := openStream(cctx, hc, t.URL, roomName, "", since)
				if err != nil {
					res[i].err = err
					return
				}
				defer resp.Body.Close()
				res[i].ended = true
				_ = readSSE(resp.Body, func(ev sseEvent) bool {
					if mid := messageID(ev.Data); mid != "" {
						res[i].got = append(res[i].got, mid)
					}
					return len(res[i].got) < expect
				})
				if len(res[i].got) >= expect || cctx.Err() != nil {
					res[i].ended = false
				}
			}()
		}
		wg.Wait()
		if want, err = stored(); err != nil {
			return err
		}
		for i, rs := range res {
			if rs.err != nil {
				totalBad++
				if len(examples) < 10 {
					examples = append(examples, fmt.Sprintf("round %d conn %d: %v", r, i, rs.err))
				}
				continue
			}
			if rs.ended {
				ended++
			}
			ok := len(rs.got) == len(want)
			pos := map[string]int{}
			for j, id := range want {
				pos[id] = j
			}
			seen := map[string]bool{}
			for j, id := range rs.got {
				seen[id] = true
				if p, in := pos[id]; !in || p != j {
					ok = false
				}
			}
			miss := 0
			for j, id := range want {
				if !seen[id] {
					miss++
					if j == 0 {
						missingFirst++
					} else {
						missingOther++
					}
				}
			}
			extra += max(0, len(rs.got)-(len(want)-miss))
			if ok {
				totalOK++
				continue
			}
			totalBad++
			if len(examples) < 10 {
				firstGot := -1
				if len(rs.got) > 0 {
					if p, in := pos[rs.got[0]]; in {
						firstGot = p
					}
				}
				examples = append(examples, fmt.Sprintf("round %d conn %d: got %d of %d, missing %d, first received is expected #%d, stream ended by server: %v",
					r, i, len(rs.got), len(want), miss, firstGot, rs.ended))
			}
		}
	}
	elapsed := time.Since(t0)
	stopBG()
	bgWG.Wait()
	fmt.Printf("\n== replay: %d rounds x %d connections resuming after #%d of %d stored (%d each), background posters %d (%d posts), app %s, %s\n",
		*rounds, *conns, *from, *nMsgs, len(want), *bg, bgPosts.Load(), t.Where, elapsed.Round(time.Millisecond))
	fmt.Printf("exact: %d, wrong: %d; missing the first expected message: %d, missing others: %d, extra %d, streams ended by the server early: %d\n",
		totalOK, totalBad, missingFirst, missingOther, extra, ended)
	fmt.Printf("replays refused with 503 (every replay slot busy) and retried after Retry-After: %d\n", replayRefusals.Load())
	for _, e := range examples {
		fmt.Println("  ", e)
	}
	t.printLogCounts(ctx)
	if totalBad > 0 {
		return fmt.Errorf("%d of %d replays differ from the stored sequence", totalBad, *rounds**conns)
	}
	fmt.Println("OK: every replay was exact")
	return nil
}

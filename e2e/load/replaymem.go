package main

// replaymem: the server's memory while many streams replay a large
// backlog to clients that never read. A room holds -messages messages of
// -size characters; -conns connections resume from the room's very
// beginning at once, each with a small receive buffer that it never
// reads, and are held open for -hold. The app's resident set size is
// sampled throughout, then again once the connections are closed (before
// and after a forced GC), against the baseline before they opened. Run it
// with -child, so that the app's memory is measured apart from the load
// generator's.

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// firstTimeUUID is the earliest timeuuid: "replay everything".
const firstTimeUUID = "00000000-0000-1000-8000-000000000000"

func runReplayMem(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("replaymem", flag.ExitOnError)
	var c common
	c.register(fs)
	nMsgs := fs.Int("messages", 5000, "messages stored in the room")
	size := fs.Int("size", 4000, "characters per message")
	conns := fs.Int("conns", 100, "replaying connections, opened at once, never read")
	hold := fs.Duration("hold", 20*time.Second, "how long the connections stay open")
	settle := fs.Duration("settle", 5*time.Second, "wait after closing them before measuring")
	_ = fs.Parse(args)
	if *nMsgs > 20000 || *size > 4000 || *conns > 2000 || *hold > 5*time.Minute {
		return fmt.Errorf("keep -messages <= 20000, -size <= 4000, -conns <= 2000, -hold <= 5m")
	}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Store == nil {
		return fmt.Errorf("replaymem stores the room's messages directly: give -keyspace with -url")
	}
	logf("app %s at %s", t.Where, t.URL)
	id := runID()
	users, err := signUpMany(ctx, t.URL, "lm"+id+"u", 10, newTransport(16))
	if err != nil {
		return err
	}
	roomName := "lmem" + id
	if err := setupRoom(ctx, roomName, users); err != nil {
		return err
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			author := users[w%len(users)]
			ref, err := t.Store.User(ctx, author.login)
			if err != nil {
				errs <- err
				return
			}
			room, err := t.Store.RoomFor(ctx, roomName, author.login)
			if err != nil {
				errs <- err
				return
			}
			for n := w; n < *nMsgs && ctx.Err() == nil; n += 16 {
				text := fmt.Sprintf("replaymem %d ", n)
				text += strings.Repeat("x", max(0, *size-len(text)))
				if _, err := t.Store.PostMessage(ctx, room, ref.Ref(), text); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	logf("room %s: %d messages of %d characters stored in %v", roomName, *nMsgs, *size, time.Since(t0).Round(time.Millisecond))

	base, err := t.Stats(ctx, true)
	if err != nil {
		return err
	}
	u, _ := url.Parse(t.URL)
	open := make([]net.Conn, *conns)
	t0 = time.Now()
	for i := range open {
		conn, err := dialSmallBuffer(u.Host)
		if err != nil {
			return err
		}
		open[i] = conn
		var cookies []string
		b, _ := url.Parse(t.URL)
		for _, ck := range users[i%len(users)].jar.Cookies(b) {
			cookies = append(cookies, ck.Name+"="+ck.Value)
		}
		fmt.Fprintf(conn, "GET /rooms/%s/events HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\nLast-Event-ID: %s\r\n\r\n",
			roomName, u.Host, strings.Join(cookies, "; "), firstTimeUUID)
	}
	logf("%d connections resuming from %s opened in %v; holding them %v without reading", *conns, firstTimeUUID, time.Since(t0).Round(time.Millisecond), *hold)

	var peak, last uint64
	var peakAt time.Duration
	for start := time.Now(); time.Since(start) < *hold && ctx.Err() == nil; time.Sleep(250 * time.Millisecond) {
		r := t.rss(ctx)
		if r > peak {
			peak, peakAt = r, time.Since(start)
		}
		last = r
	}
	statuses := map[string]int{}
	for _, conn := range open {
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 12)
		n, _ := conn.Read(buf)
		status := "no answer"
		if f := strings.Fields(string(buf[:n])); len(f) == 2 {
			status = f[1]
		}
		statuses[status]++
	}
	held, _ := t.Stats(ctx, false)
	for _, conn := range open {
		_ = conn.Close()
	}
	time.Sleep(*settle)
	closed, _ := t.Stats(ctx, false)
	collected, err := t.Stats(ctx, true)
	if err != nil {
		return err
	}

	fmt.Printf("\n== replaymem: %d connections resuming from the start of a room of %d messages x %d characters, never reading, held %v, app %s\n",
		*conns, *nMsgs, *size, *hold, t.Where)
	fmt.Printf("answers (status line, read after the hold): %v\n", statuses)
	printStats("baseline (after GC)", base)
	fmt.Printf("  %-28s rss=%s (%.0f s in), growth %s\n", "peak while held", mib(float64(peak)), peakAt.Seconds(), mib(float64(peak)-float64(base.RSS)))
	fmt.Printf("  %-28s rss=%s\n", "end of the hold", mib(float64(last)))
	printStats("held, before closing", held)
	printStats(fmt.Sprintf("closed, %v later", *settle), closed)
	printStats("closed, after GC", collected)
	fmt.Printf("growth after closing: %s without GC, %s after GC\n",
		mib(float64(closed.RSS)-float64(base.RSS)), mib(float64(collected.RSS)-float64(base.RSS)))
	t.printLogCounts(ctx)
	return nil
}

// rss is the app's resident set size now: read from /proc for a child
// (cheap enough to sample often), from its stats otherwise.
func (t *target) rss(ctx context.Context) uint64 {
	if childPID != 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", childPID)); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
					kb, _ := strconv.ParseUint(f[1], 10, 64)
					return kb * 1024
				}
			}
		}
	}
	st, _ := t.Stats(ctx, false)
	return st.RSS
}

// dialSmallBuffer connects with a 4 KB receive buffer, so a client that
// does not read stalls the server's writes after a few kilobytes (kernel
// send buffers aside) instead of megabytes.
func dialSmallBuffer(host string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		_ = rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return err
	}}
	return d.Dial("tcp", host)
}

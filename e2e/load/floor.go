package main

// floor: the same fan-out as sse with no app at all, to show what this
// machine's loopback TCP costs by itself. A child process accepts the
// subscribers' connections and, each time it is told to, writes one frame
// of -size bytes to every one of them from one goroutine per processor
// (as the app's fan-out does); this process reads them with the same
// epoll reader as sse and measures from the moment it told the child.
// What sse measures above these figures is the app's own.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func runFloor(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	nSubs := fs.Int("subs", 10000, "connections")
	rate := fs.Float64("rate", 5, "frames written to every connection per second")
	dur := fs.Duration("d", 15*time.Second, "how long to write")
	size := fs.Int("size", 700, "bytes a frame (the app's load message is about this)")
	readers := fs.Int("readers", 2, "threads reading the connections")
	_ = fs.Parse(args)
	_, err := measureFloor(ctx, *nSubs, *rate, *dur, *size, *readers)
	return err
}

// measureFloor runs the floor, prints its figures and returns the writer
// process's CPU per write (sse runs it too, after the app, so that the two
// figures it compares are taken minutes apart, not runs apart).
func measureFloor(ctx context.Context, nSubs int, rate float64, dur time.Duration, size, readers int) (time.Duration, error) {
	nMsgs := int(rate * dur.Seconds())

	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, exe, "floorserve", strconv.Itoa(nSubs), strconv.Itoa(size))
	cmd.Stderr = os.Stderr
	toChild, _ := cmd.StdinPipe()
	fromChild, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { toChild.Close(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(fromChild)
	if !lines.Scan() {
		return 0, fmt.Errorf("floorserve did not start")
	}
	addr := lines.Text()

	subCtx, stop := context.WithCancel(ctx)
	defer stop()
	poller, err := newStreamPoller(subCtx, readers)
	if err != nil {
		return 0, err
	}
	recv := make([][]int64, nSubs)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	for i := range recv {
		recv[i] = make([]int64, nMsgs)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return 0, fmt.Errorf("connection %d: %w", i, err)
		}
		mine := recv[i]
		ended, err := poller.add(&rawStream{conn: conn, buf: make([]byte, 8192)}, func(ev []byte, at time.Time) bool {
			if n := seqOfBytes(ev); n >= 0 && n < len(mine) {
				atomic.StoreInt64(&mine[n], at.UnixNano())
			}
			return true
		})
		if err != nil {
			return 0, err
		}
		wg.Add(1)
		go func() { defer wg.Done(); <-ended }()
	}
	if !lines.Scan() || lines.Text() != "ready" {
		return 0, fmt.Errorf("floorserve: %s", lines.Text())
	}
	time.Sleep(2 * time.Second)
	cpu0, child0 := cpuTime(os.Getpid()), cpuTime(cmd.Process.Pid)
	sent := make([]int64, nMsgs)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	for n := range nMsgs {
		<-tick.C
		sent[n] = time.Now().UnixNano()
		fmt.Fprintf(toChild, "%d\n", n)
	}
	tick.Stop()
	time.Sleep(2 * time.Second)
	cpuLoad, cpuChild := cpuTime(os.Getpid())-cpu0, cpuTime(cmd.Process.Pid)-child0
	var lat, worst durations
	missing := 0
	for n := range nMsgs {
		var w time.Duration
		for s := range recv {
			r := atomic.LoadInt64(&recv[s][n])
			if r == 0 {
				missing++
				continue
			}
			d := time.Duration(r - sent[n])
			lat = append(lat, d)
			w = max(w, d)
		}
		worst = append(worst, w)
	}
	events := float64(nSubs * nMsgs)
	perWrite := time.Duration(float64(cpuChild.Nanoseconds()) / events)
	fmt.Printf("\n== floor: %d connections, %d frames of %d bytes at %.0f/s, %d writer goroutines, no app\n",
		nSubs, nMsgs, size, rate, runtime.GOMAXPROCS(0))
	fmt.Printf("delivery latency from write order: %s\n", lat.summary())
	fmt.Printf("slowest connection per frame:      %s\n", worst.summary())
	fmt.Printf("missing %d\n", missing)
	fmt.Printf("CPU: writer process %.1fµs per write, reader %.1fµs per event\n",
		float64(cpuChild.Microseconds())/events, float64(cpuLoad.Microseconds())/events)
	if missing > 0 {
		return perWrite, fmt.Errorf("floor: %d frames missing", missing)
	}
	return perWrite, nil
}

// runFloorServe is floor's child: it accepts n connections, says "ready",
// then writes a numbered frame of size bytes to all of them for each line
// it reads.
func runFloorServe(_ context.Context, args []string) error {
	n, _ := strconv.Atoi(args[0])
	size, _ := strconv.Atoi(args[1])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	conns := make([]net.Conn, 0, n)
	for len(conns) < n {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	fmt.Println("ready")
	workers := runtime.GOMAXPROCS(0)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		frame := []byte("data: " + seqMark + in.Text() + " " + strings.Repeat("x", max(0, size-30)) + "\n\n")
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(conns); i += workers {
					_, _ = conns[i].Write(frame)
				}
			}()
		}
		wg.Wait()
	}
	return nil
}

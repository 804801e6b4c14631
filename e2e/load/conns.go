package main

// conns: connection exhaustion. The real killrchat binary runs as a child
// process (with its own open-file limit and its default --max-conns)
// while worker processes open many idle connections to it; this process
// asks /healthz all along, on a new connection each time, and reports its
// latency before and during the flood, with the app's descriptor count
// and anything it logged about accepting. The workers are separate
// processes because the flood alone needs as many descriptors as one
// process may have.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/killrchat/killrchat/store/storetest"
)

func runConns(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("conns", flag.ExitOnError)
	total := fs.Int("conns", 20000, "idle connections to attempt")
	workers := fs.Int("workers", 4, "processes that hold them")
	mode := fs.String("mode", "keepalive", "what each idle connection does: keepalive (one GET /healthz, then nothing) or silent (nothing at all)")
	redial := fs.Bool("redial", false, "reopen a connection as soon as the server closes it, as a persistent attacker would")
	rate := fs.Int("rate", 2000, "connections attempted per second, all workers together")
	hold := fs.Duration("hold", 30*time.Second, "how long the flood lasts after the last connection was attempted")
	every := fs.Duration("probe-every", 50*time.Millisecond, "how often /healthz is asked")
	bin := fs.String("bin", "", "killrchat binary (default: go build of the module in the current directory)")
	appArgs := fs.String("app-args", "", "extra flags for the app, space-separated (e.g. --max-conns=5000)")
	_ = fs.Parse(args)
	if *total > 100000 || *workers < 1 || *workers > 16 || *hold > 10*time.Minute || *rate < *workers {
		return fmt.Errorf("keep -conns <= 100000, 1 <= -workers <= 16, -hold <= 10m, -rate >= -workers")
	}
	if *mode != "keepalive" && *mode != "silent" {
		return fmt.Errorf("-mode is keepalive or silent")
	}

	app, err := startBinary(ctx, *bin, strings.Fields(*appArgs))
	if err != nil {
		return err
	}
	defer app.stop()
	logf("app pid %d at %s, open-file limit %s", app.cmd.Process.Pid, app.url, fileLimit(app.cmd.Process.Pid))

	probe := newProber(app.url)
	logf("baseline: /healthz every %v for 5 s", *every)
	base := probe.run(ctx, *every, 5*time.Second)

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var ws []*holdWorker
	per := (*total + *workers - 1) / *workers
	for i := range *workers {
		n := min(per, *total-i*per)
		w, err := startHoldWorker(exe, app.addr, n, *rate / *workers, *mode, *redial)
		if err != nil {
			return err
		}
		defer w.stop()
		ws = append(ws, w)
	}
	logf("flood: %d %s connections, %d/s from %d processes, then held %v; /healthz every %v", *total, *mode, *rate, *workers, *hold, *every)
	fds := app.sampleFDs()
	flood := make(chan probeResult, 1)
	pctx, cancel := context.WithCancel(ctx)
	go func() { flood <- probe.run(pctx, *every, 24*time.Hour) }()
	for _, w := range ws {
		w.waitRamped(ctx)
	}
	ramped := time.Now()
	logf("all connections attempted; holding %v", *hold)
	select {
	case <-time.After(*hold):
	case <-ctx.Done():
	}
	cancel()
	during := <-flood
	var sum holdReport
	for _, w := range ws {
		r := w.stop()
		sum.add(r)
	}
	maxFDs := fds()

	fmt.Printf("connection flood against %s (%s)\n", app.url, strings.Join(app.cmd.Args, " "))
	fmt.Printf("  app open-file limit %s; app descriptors: max %d during the flood\n", fileLimit(app.cmd.Process.Pid), maxFDs)
	fmt.Printf("  flood: %d dialled (%d failed to connect), %d answered a request, %d closed by the server, %d still open at the end\n",
		sum.Dialled, sum.DialErrors, sum.Answered, sum.ClosedByServer, sum.Open)
	base.print("  /healthz before the flood")
	during.print("  /healthz during the flood")
	ramp, held := during.split(ramped)
	ramp.print("    while connections were being opened")
	held.print("    while they were held open")
	app.printAcceptLog()
	if st, err := app.metrics(ctx); err == nil {
		fmt.Printf("  app metrics: %s\n", st)
	}
	return nil
}

// fileLimit reads a process's open-file limit from /proc.
func fileLimit(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			f := strings.Fields(line)
			if len(f) >= 5 {
				return f[3]
			}
		}
	}
	return "?"
}

// binaryApp is the killrchat binary running as a child process.
type binaryApp struct {
	cmd      *exec.Cmd
	url      string
	addr     string
	keyspace string
	mu       sync.Mutex
	stderr   []string // the lines that mention accepting or descriptors
	stopOnce sync.Once
}

func startBinary(ctx context.Context, bin string, extra []string) (*binaryApp, error) {
	if bin == "" {
		dir, err := os.MkdirTemp("", "killrchat-conns")
		if err != nil {
			return nil, err
		}
		bin = filepath.Join(dir, "killrchat")
		logf("building %s", bin)
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("go build (run from the module's root, or give -bin): %w", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	a := &binaryApp{addr: addr, url: "http://" + addr, keyspace: storetest.Keyspace("conns")}
	args := append([]string{"--addr", addr, "--cassandra-keyspace", a.keyspace, "--log-level", "info"}, extra...)
	a.cmd = exec.Command(bin, args...)
	a.cmd.Env = append(os.Environ(), "CASSANDRA_HOSTS="+strings.Join(storetest.Hosts(), ","))
	stderr, err := a.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := a.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "ccept") || strings.Contains(line, "too many open files") {
				a.mu.Lock()
				if len(a.stderr) < 1000 {
					a.stderr = append(a.stderr, line)
				}
				a.mu.Unlock()
			}
		}
	}()
	// Ready means Cassandra answers and the schema is applied; that can
	// take a while on a busy machine.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(a.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			a.stop()
			return nil, errors.New("the app was not ready within 3 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (a *binaryApp) stop() {
	a.stopOnce.Do(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = a.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = a.cmd.Process.Kill()
			<-done
		}
		if err := storetest.DropKeyspace(a.keyspace); err != nil {
			logf("drop keyspace %s: %v", a.keyspace, err)
		}
	})
}

// sampleFDs counts the app's descriptors every 200 ms until the returned
// function is called, which gives the largest count seen.
func (a *binaryApp) sampleFDs() func() int {
	var peak atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", a.cmd.Process.Pid)); err == nil && int64(len(fds)) > peak.Load() {
				peak.Store(int64(len(fds)))
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int {
		close(done)
		<-stopped
		return int(peak.Load())
	}
}

func (a *binaryApp) printAcceptLog() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.stderr) == 0 {
		fmt.Println("  app log: no accept errors, no \"too many open files\"")
		return
	}
	fmt.Printf("  app log: %d lines about accepting or descriptors, first: %s\n", len(a.stderr), a.stderr[0])
}

// metrics picks the connection gauges out of the app's /metrics.
func (a *binaryApp) metrics(ctx context.Context) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "killrchat_http_connections") || strings.HasPrefix(line, "process_resident_memory_bytes") {
			out = append(out, line)
		}
	}
	return strings.Join(out, ", "), sc.Err()
}

// prober asks /healthz on a new connection each time, as a visitor
// arriving during the flood would.
type prober struct{ url string }

func newProber(url string) *prober { return &prober{url: url} }

type probeResult struct {
	at       []time.Time // when each answered probe started
	lat      []time.Duration
	failedAt []time.Time
	firstErr error
	failures int
}

// split divides the probes by whether they started before t.
func (r probeResult) split(t time.Time) (before, after probeResult) {
	for i, at := range r.at {
		side := &after
		if at.Before(t) {
			side = &before
		}
		side.at, side.lat = append(side.at, at), append(side.lat, r.lat[i])
	}
	for _, at := range r.failedAt {
		side := &after
		if at.Before(t) {
			side = &before
		}
		side.failures++
		side.failedAt = append(side.failedAt, at)
		if side.firstErr == nil {
			side.firstErr = r.firstErr
		}
	}
	return before, after
}

func (r probeResult) print(label string) {
	l := storetest.Latencies(r.lat)
	slow := 0
	for _, d := range r.lat {
		if d > time.Second {
			slow++
		}
	}
	fmt.Printf("%s: %d answered (%d after more than 1 s), %d failed (5 s timeout); p50 %v p99 %v max %v\n", label, len(r.lat), slow, r.failures,
		l.Percentile(0.50).Round(10*time.Microsecond), l.Percentile(0.99).Round(10*time.Microsecond), l.Percentile(1).Round(10*time.Microsecond))
	if r.firstErr != nil {
		fmt.Printf("    first failure: %v\n", r.firstErr)
	}
}

func (p *prober) run(ctx context.Context, every, d time.Duration) probeResult {
	var (
		mu  sync.Mutex
		res probeResult
		wg  sync.WaitGroup
	)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	tick := time.NewTicker(every)
	defer tick.Stop()
	end := time.After(d)
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return res
		case <-end:
			wg.Wait()
			return res
		case <-tick.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := client.Get(p.url + "/healthz")
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %s", resp.Status)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.failures++
				res.failedAt = append(res.failedAt, start)
				if res.firstErr == nil {
					res.firstErr = err
				}
				return
			}
			res.at, res.lat = append(res.at, start), append(res.lat, time.Since(start))
		}()
	}
}

// holdReport is what one worker process did.
type holdReport struct {
	Dialled        int64 `json:"dialled"`
	DialErrors     int64 `json:"dial_errors"`
	Answered       int64 `json:"answered"`
	ClosedByServer int64 `json:"closed_by_server"`
	Open           int64 `json:"open"`
}

func (r *holdReport) add(o holdReport) {
	r.Dialled += o.Dialled
	r.DialErrors += o.DialErrors
	r.Answered += o.Answered
	r.ClosedByServer += o.ClosedByServer
	r.Open += o.Open
}

const (
	rampedLine = "HOLD-RAMPED"
	reportLine = "HOLD-REPORT "
)

// holdWorker is a child process running the hold subcommand.
type holdWorker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ramped chan struct{}
	report chan holdReport
	once   sync.Once
	final  holdReport
}

func startHoldWorker(exe, addr string, n, rate int, mode string, redial bool) (*holdWorker, error) {
	cmd := exec.Command(exe, "hold", "-addr", addr, "-n", strconv.Itoa(n), "-rate", strconv.Itoa(rate),
		"-mode", mode, "-redial="+strconv.FormatBool(redial))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &holdWorker{cmd: cmd, stdin: stdin, ramped: make(chan struct{}), report: make(chan holdReport, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == rampedLine:
				close(w.ramped)
			case strings.HasPrefix(line, reportLine):
				var r holdReport
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, reportLine)), &r)
				w.report <- r
			}
		}
	}()
	return w, nil
}

func (w *holdWorker) waitRamped(ctx context.Context) {
	select {
	case <-w.ramped:
	case <-ctx.Done():
	}
}

// stop ends the worker and returns its report.
func (w *holdWorker) stop() holdReport {
	w.once.Do(func() {
		_ = w.stdin.Close()
		select {
		case w.final = <-w.report:
		case <-time.After(30 * time.Second):
			_ = w.cmd.Process.Kill()
		}
		_ = w.cmd.Wait()
	})
	return w.final
}

// runHold is a worker: it opens n idle connections to addr, rate a
// second, keeps each open until the server closes it (and, with
// -redial, opens it again), says when all were attempted, and reports
// when its stdin closes.
func runHold(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("hold", flag.ContinueOnError)
	addr := fs.String("addr", "", "host:port")
	n := fs.Int("n", 1000, "connections")
	rate := fs.Int("rate", 500, "connections attempted per second")
	mode := fs.String("mode", "keepalive", "keepalive or silent")
	redial := fs.Bool("redial", false, "reopen closed connections")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var rep struct{ dialled, dialErrors, answered, closed, open atomic.Int64 }
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	var conns sync.Map
	one := func() {
		rep.dialled.Add(1)
		conn, err := net.DialTimeout("tcp", *addr, 5*time.Second)
		if err != nil {
			rep.dialErrors.Add(1)
			return
		}
		conns.Store(conn, true)
		rep.open.Add(1)
		defer func() {
			conns.Delete(conn)
			conn.Close()
			rep.open.Add(-1)
		}()
		br := bufio.NewReader(conn)
		if *mode == "keepalive" {
			fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", *addr)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				rep.closed.Add(1)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			rep.answered.Add(1)
		}
		// Idle: wait for the server to close (or stop to close it here).
		_, _ = io.Copy(io.Discard, br)
		select {
		case <-stop:
		default:
			rep.closed.Add(1)
		}
	}
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(max(*rate, 1)))
	defer tick.Stop()
ramp:
	for range *n {
		select {
		case <-stop:
			break ramp
		case <-ctx.Done():
			break ramp
		case <-tick.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				one()
				if !*redial {
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	fmt.Println(rampedLine)
	select {
	case <-stop:
	case <-ctx.Done():
	}
	open := rep.open.Load()
	conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	wg.Wait()
	b, _ := json.Marshal(holdReport{Dialled: rep.dialled.Load(), DialErrors: rep.dialErrors.Load(),
		Answered: rep.answered.Load(), ClosedByServer: rep.closed.Load(), Open: open})
	fmt.Println(reportLine + string(b))
	return nil
}

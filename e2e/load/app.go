package main

// The app under load: started here (in this process or a child), or a
// running server given by -url.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/killrchat/killrchat/cmd"
	"github.com/killrchat/killrchat/cmd/cmdtest"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
)

// target is the app being measured.
type target struct {
	URL string
	// SubURL is where subscribers connect, when not URL (-cluster).
	SubURL   string
	Keyspace string
	// Store reads and writes the app's keyspace directly (nil with -url
	// and no -keyspace).
	Store *store.Store
	// Recorder sees every statement the app sends (in-process only).
	Recorder *storetest.Recorder
	// Ctl serves the app process's memory and profiles (/_load/stats,
	// /_load/pprof/...), beside the app; "" for an external server.
	Ctl string
	// Where says how the app runs: "in-process", "child pid N" or "external".
	Where string
	// inProcess: stats come from this process's runtime.
	inProcess bool
	close     func()
	// restartBroker stops the NATS server and starts it again on the same
	// port after down (-cluster only).
	restartBroker func(down time.Duration) error
}

// serverStats is the app process's memory and goroutines.
type serverStats struct {
	// LogCounts counts the app's log records (info and above) by message.
	LogCounts  map[string]int64 `json:"log_counts,omitempty"`
	Goroutines int              `json:"goroutines"`
	HeapInuse  uint64           `json:"heap_inuse"`
	HeapAlloc  uint64           `json:"heap_alloc"`
	StackInuse uint64           `json:"stack_inuse"`
	Sys        uint64           `json:"sys"`
	RSS        uint64           `json:"rss"`
}

func localStats() serverStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return serverStats{LogCounts: appLogCounts.snapshot(), Goroutines: runtime.NumGoroutine(), HeapInuse: ms.HeapInuse, HeapAlloc: ms.HeapAlloc,
		StackInuse: ms.StackInuse, Sys: ms.Sys, RSS: rss()}
}

// rss is this process's resident set size, from /proc.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// Stats returns the app's memory and goroutines: from this process's
// runtime, from the child's /_load/stats, or from an external server's
// /metrics (where no GC can be forced).
func (t *target) Stats(ctx context.Context, gc bool) (serverStats, error) {
	if t.inProcess {
		if gc {
			freeMemory()
		}
		return localStats(), nil
	}
	if t.Where != "external" {
		var st serverStats
		u := t.Ctl + "/_load/stats"
		if gc {
			u += "?gc=1"
		}
		err := getJSON(ctx, u, &st)
		return st, err
	}
	return metricsStats(ctx, t.URL+"/metrics")
}

func getJSON(ctx context.Context, u string, v any) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// metricsStats reads the Go and process collectors of /metrics.
func metricsStats(ctx context.Context, u string) (serverStats, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return serverStats{}, err
	}
	defer resp.Body.Close()
	var st serverStats
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "go_goroutines":
			st.Goroutines = int(v)
		case "go_memstats_heap_inuse_bytes":
			st.HeapInuse = uint64(v)
		case "go_memstats_heap_alloc_bytes":
			st.HeapAlloc = uint64(v)
		case "go_memstats_stack_inuse_bytes":
			st.StackInuse = uint64(v)
		case "go_memstats_sys_bytes":
			st.Sys = uint64(v)
		case "process_resident_memory_bytes":
			st.RSS = uint64(v)
		}
	}
	return st, sc.Err()
}

func (t *target) Close() {
	if t.close != nil {
		t.close()
	}
}

// startTarget gives the app under test as the flags say.
func startTarget(ctx context.Context, c common) (*target, error) {
	switch {
	case c.url != "":
		t := &target{URL: strings.TrimRight(c.url, "/"), Keyspace: c.keyspace, Where: "external"}
		if c.keyspace != "" {
			st, err := openStore(ctx, c.keyspace)
			if err != nil {
				return nil, err
			}
			t.Store, t.close = st, st.Close
		}
		return t, nil
	case c.child:
		return startChild(ctx, c)
	case c.cluster:
		return startCluster(c)
	default:
		store.PasswordCost = c.cost
		maxReplays = c.replays
		searchIndexOff, searchIndexRate, pushRate = c.noIndex, c.indexRate, c.pushRate
		a, err := startApp(c.verbose)
		if err != nil {
			return nil, err
		}
		return &target{URL: a.url, Keyspace: a.keyspace, Store: a.store, Recorder: a.recorder, Ctl: a.ctl,
			Where: "in-process", inProcess: true, close: a.stop}, nil
	}
}

func openStore(ctx context.Context, keyspace string) (*store.Store, error) {
	// A loaded node can take longer than a statement's timeout to answer
	// the schema's checks (CREATE KEYSPACE IF NOT EXISTS): try again while
	// it is slow, as the tests' stores do.
	st := store.New(store.Config{Hosts: storetest.Hosts(), Keyspace: keyspace, Timeout: 30 * time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := storetest.Connect(cctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

type app struct {
	url      string
	keyspace string
	// store reads and writes the app's keyspace directly; recorder sees
	// every statement the app's own store sends.
	store    *store.Store
	recorder *storetest.Recorder
	// ctl serves this process's memory and profiles (see serveControl).
	ctl  string
	stop func()
}

// maxReplays is the app's --max-replays (-max-replays; 0: its default).
var maxReplays int

// resumeWindow is the app's --resume-window (-resume-window; 0: its
// default).
var resumeWindow time.Duration

// searchIndexOff is the app's --search-index=false (-no-index), and
// searchIndexRate its --search-index-rate (-index-rate; 0: its default).
var (
	searchIndexOff  bool
	searchIndexRate float64
)

// pushRate is the app's --push-rate (-push-rate); its pushes may go to a
// push service on 127.0.0.1 (the post command's -push-subs).
var pushRate float64

// unbounded is a per-person limit no load reaches.
const unbounded = "1073741824"

// appFlags are the flags of an app instance started here, on keyspace,
// signing cookies with key. Every user signs up, and a few users open
// thousands of streams from one address: the limits on those are
// lifted; the rest are the binary's unless a load flag says otherwise.
func appFlags(keyspace string, key []byte) []string {
	flags := append(cmdtest.Flags(keyspace, hex.EncodeToString(key)),
		"--auth-rate", unbounded, "--message-rate", "1e9", "--message-burst", unbounded,
		"--rooms-per-hour", unbounded, "--join-rate", "1e9", "--join-burst", unbounded,
		"--searches-per-minute", unbounded, "--upload-bytes-per-hour", strconv.Itoa(1<<40),
		"--max-streams-per-user", unbounded, "--max-streams-per-ip", unbounded,
		"--push-allow-http-loopback", "--push-rate", strconv.FormatFloat(pushRate, 'f', -1, 64),
		// Incoming webhooks post as fast as they can (bots); the bots'
		// outgoing webhooks reach a receiver of the load command.
		"--hook-rate", "1e9", "--hook-burst", unbounded, "--bot-allow-addresses", "127.0.0.1/32")
	flags = append(flags, extraAppFlags...)
	if maxReplays > 0 {
		flags = append(flags, "--max-replays", strconv.Itoa(maxReplays))
	}
	if resumeWindow > 0 {
		flags = append(flags, "--resume-window", resumeWindow.String())
	}
	if searchIndexOff {
		flags = append(flags, "--search-index=false")
	}
	if searchIndexRate != 0 {
		flags = append(flags, "--search-index-rate", strconv.FormatFloat(searchIndexRate, 'f', -1, 64))
	}
	return flags
}

// startMain parses flags as the binary does (with no environment), runs
// cmd.Main with log and observe, and waits until it is ready.
func startMain(log *slog.Logger, observe func(store.ObservedQuery), flags []string) (*cmd.Main, string, error) {
	cfg, err := cmd.Parse(flags, func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, "", err
	}
	m := cmd.NewMain(cfg)
	m.Log, m.Observe = log, observe
	if err := m.Run(context.Background()); err != nil {
		_ = m.Close()
		return nil, "", err
	}
	url := "http://" + m.Addr().String()
	if err := cmdtest.WaitReady(url, 5*time.Minute); err != nil {
		_ = m.Close()
		return nil, "", err
	}
	return m, url, nil
}

// startApp starts the program on 127.0.0.1, as the binary runs it
// (cmd.Main with its flags), on a fresh keyspace that stop drops, and
// beside it a control server of this process (serveControl).
func startApp(verbose bool) (*app, error) {
	ks := storetest.Keyspace("load")
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	var fwd slog.Handler
	if verbose {
		fwd = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
	}
	log := slog.New(&countingHandler{counts: appLogCounts, fwd: fwd})
	rec := &storetest.Recorder{}
	m, url, err := startMain(log, rec.Observe, appFlags(ks, key))
	if err != nil {
		_ = storetest.DropKeyspace(ks)
		return nil, err
	}
	st, err := openStore(context.Background(), ks)
	if err != nil {
		_ = m.Close()
		_ = storetest.DropKeyspace(ks)
		return nil, err
	}
	ctl, stopCtl, err := serveControl()
	if err != nil {
		st.Close()
		_ = m.Close()
		_ = storetest.DropKeyspace(ks)
		return nil, err
	}
	return &app{url: url, keyspace: ks, store: st, recorder: rec, ctl: ctl, stop: func() {
		stopCtl()
		st.Close()
		_ = m.Close()
		if err := storetest.DropKeyspace(ks); err != nil {
			logf("drop keyspace %s: %v", ks, err)
		}
	}}, nil
}

// serveControl serves, on loopback, what the load commands ask of the
// app's process: /_load/stats (memory and goroutines, ?gc=1 collects
// first) and its profiles.
func serveControl() (string, func(), error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_load/stats", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("gc") != "" {
			freeMemory()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(localStats())
	})
	mux.HandleFunc("GET /_load/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /_load/pprof/trace", pprof.Trace)
	mux.Handle("GET /_load/pprof/heap", pprof.Handler("heap"))
	mux.Handle("GET /_load/pprof/goroutine", pprof.Handler("goroutine"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = hs.Close() }, nil
}

const readyPrefix = "LOAD-APP "

// childPID is the app process started by -child (0 otherwise).
var childPID int

// runServe is the child of -child: it starts the app, prints its URL and
// keyspace on one line, and stops (dropping the keyspace) when its stdin
// closes or it is signalled.
func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cost := fs.Int("bcrypt-cost", 4, "bcrypt cost")
	replays := fs.Int("max-replays", 0, "the app's --max-replays (0: its default)")
	verbose := fs.Bool("v", false, "log warnings")
	noIndex := fs.Bool("no-index", false, "do not index posted messages for search")
	indexRate := fs.Float64("index-rate", 0, "messages indexed a second at most (0: the app's default; negative: unpaced)")
	pushes := fs.Float64("push-rate", 0, "pushes sent a second at most (0: the default, 300; negative: no bound)")
	fs.Func("app-flag", "one more flag of the app (repeated)", func(v string) error {
		extraAppFlags = append(extraAppFlags, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	store.PasswordCost = *cost
	maxReplays = *replays
	searchIndexOff, searchIndexRate, pushRate = *noIndex, *indexRate, *pushes
	a, err := startApp(*verbose)
	if err != nil {
		return err
	}
	defer a.stop()
	fmt.Printf("%s%s %s %s\n", readyPrefix, a.url, a.keyspace, a.ctl)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	select {
	case <-eof:
	case <-ctx.Done():
	}
	return nil
}

// startChild runs this binary's serve subcommand and waits for its line.
func startChild(ctx context.Context, c common) (*target, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "-bcrypt-cost", strconv.Itoa(c.cost), "-max-replays", strconv.Itoa(c.replays)}
	if c.verbose {
		args = append(args, "-v")
	}
	if c.noIndex {
		args = append(args, "-no-index")
	}
	args = append(args, "-index-rate", strconv.FormatFloat(c.indexRate, 'f', -1, 64),
		"-push-rate", strconv.FormatFloat(c.pushRate, 'f', -1, 64))
	for _, f := range extraAppFlags {
		args = append(args, "-app-flag", f)
	}
	cmd := exec.Command(exe, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	childPID = cmd.Process.Pid
	stopChild := func() {
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			logf("child %d did not stop; killing it", cmd.Process.Pid)
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), readyPrefix) {
				line <- strings.TrimPrefix(sc.Text(), readyPrefix)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var got string
	select {
	case got = <-line:
	case <-time.After(6 * time.Minute):
		stopChild()
		return nil, errors.New("child app did not start in 6 minutes (its migrations and readiness take up to 5)")
	case <-ctx.Done():
		stopChild()
		return nil, ctx.Err()
	}
	url, rest, _ := strings.Cut(got, " ")
	ks, ctl, _ := strings.Cut(rest, " ")
	st, err := openStore(ctx, ks)
	if err != nil {
		stopChild()
		return nil, err
	}
	return &target{URL: url, Keyspace: ks, Store: st, Ctl: ctl, Where: fmt.Sprintf("child pid %d", cmd.Process.Pid),
		close: func() { st.Close(); stopChild() }}, nil
}

// saveProfile fetches one of the app's profiles into file.
func (t *target) saveProfile(ctx context.Context, path, file string) error {
	if t.Where == "external" {
		return errors.New("no profiles from an external server")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.Ctl+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// logCounts counts log records by message.
type logCounts struct {
	mu sync.Mutex
	n  map[string]int64
}

var appLogCounts = &logCounts{n: map[string]int64{}}

func (l *logCounts) snapshot() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int64, len(l.n))
	for k, v := range l.n {
		out[k] = v
	}
	return out
}

// countingHandler counts the app's info-and-above records by message and
// forwards them (warnings and above) when -v is given.
type countingHandler struct {
	counts *logCounts
	fwd    slog.Handler
}

func (h *countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	h.counts.mu.Lock()
	h.counts.n[r.Level.String()+" "+r.Message]++
	h.counts.mu.Unlock()
	if h.fwd != nil && h.fwd.Enabled(ctx, r.Level) {
		return h.fwd.Handle(ctx, r)
	}
	return nil
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	d := *h
	if h.fwd != nil {
		d.fwd = h.fwd.WithAttrs(as)
	}
	return &d
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	d := *h
	if h.fwd != nil {
		d.fwd = h.fwd.WithGroup(name)
	}
	return &d
}

// printLogCounts shows what the app logged during the run.
func (t *target) printLogCounts(ctx context.Context) {
	if t.Where == "external" {
		return
	}
	st, err := t.Stats(ctx, false)
	if err != nil || len(st.LogCounts) == 0 {
		fmt.Println("app log: nothing at info level or above")
		return
	}
	keys := make([]string, 0, len(st.LogCounts))
	for k := range st.LogCounts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("app log records (info and above) during the run:")
	for _, k := range keys {
		fmt.Printf("  %7d  %s\n", st.LogCounts[k], k)
	}
}

// Command load measures KillrChat under load, against a real Cassandra:
//
//	go run ./e2e/load post         HTTP post throughput vs raw gocql inserts
//	go run ./e2e/load sse          SSE delivery latency with 1,000 subscribers, memory per connection
//	go run ./e2e/load correctness  every subscriber, reconnecting at random, gets exactly the stored sequence
//	go run ./e2e/load replay       the Last-Event-ID catch-up alone, with nothing in flight
//	go run ./e2e/load flood        a room page's latency while a login flood runs
//	go run ./e2e/load roompage     a room page's latency, one request after another
//	go run ./e2e/load conns        /healthz latency while 20,000 idle connections flood the real binary
//	go run ./e2e/load replaymem    server memory while many replays go to clients that never read
//	go run ./e2e/load bigroom      join, leave, post (cold and warm caches) and room page in a 10,000-member room vs a 10-member one
//	go run ./e2e/load upload       attachment MB/s through HTTP vs raw gocql chunks; server RSS while 20 upload and 50 download 25 MiB
//	go run ./e2e/load search       search latency over 1,000,000 messages in 200 conversations; indexing cost; post ratio with and without the index
//	go run ./e2e/load versus       ours beside the original KillrChat: latest-50 pages and posts, same load, ratios
//	go run ./e2e/load moving       killrchat import slack of 1,000,000 generated messages vs the store's post rate; export rate; peak RSS of each
//	go run ./e2e/load bots         incoming-webhook posts/s vs browser posts/s in one room; outgoing delivery latency p50/p99
//	go run ./e2e/load maildown     post and room page latency with the SMTP server up, down 30 s, back; each missed-message email once
//	go run ./e2e/load hostile      chunk reads of a 400-range download; server RSS and CPU for two decompression-bomb PNGs at once
//
// Unless -url is given it starts its own app instance (cmd.Main with the
// binary's flags, as the browser tests do) on a fresh keyspace that it
// drops at the end: in this
// process by default, or with -child in a child process of this binary, so
// that the server's memory and goroutines are measured apart from the
// load generator's. With -url it drives a running server; give -keyspace
// (and CASSANDRA_HOSTS) for what reads or writes Cassandra directly, and run
// that server with a high AUTH_RATE, since every user here signs up.
//
// Every loop is bounded in count and time, and all traffic stays on the
// addresses given (loopback by default).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type common struct {
	url       string
	keyspace  string
	child     bool
	cluster   bool
	cost      int
	replays   int
	window    time.Duration
	verbose   bool
	noIndex   bool
	indexRate float64
	pushRate  float64
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "base URL of a running KillrChat (default: start an app instance on a fresh keyspace)")
	fs.StringVar(&c.keyspace, "keyspace", "", "with -url: the server's keyspace, for direct Cassandra reads/writes")
	fs.BoolVar(&c.child, "child", false, "run the app instance in a child process (server memory measured apart from the load generator)")
	fs.BoolVar(&c.cluster, "cluster", false, "two in-process app instances sharing the keyspace, live events over an embedded NATS; posts go to one, subscribers to the other (sse only)")
	fs.IntVar(&c.cost, "bcrypt-cost", 4, "bcrypt cost of the app instance started here (setup only; not what is measured)")
	fs.IntVar(&c.replays, "max-replays", 0, "the app's --max-replays (0: its default) for an app instance started here")
	fs.DurationVar(&c.window, "resume-window", 0, "with -cluster: the app's --resume-window, how far behind the clock cursors stay before an instance has heard the others (0: its default)")
	fs.BoolVar(&c.verbose, "v", false, "log the app's warnings to stderr")
	fs.BoolVar(&c.noIndex, "no-index", false, "the app started here does not index posted messages for search")
	fs.Float64Var(&c.pushRate, "push-rate", 0, "the app's --push-rate for an app started here (0: its default, 300; negative: no bound)")
	fs.Float64Var(&c.indexRate, "index-rate", 0, "the app's --search-index-rate for an app started here (0: its default; negative: unpaced)")
	fs.Func("app-flag", "one more flag of the app started here, such as --push-off (repeated)", func(v string) error {
		extraAppFlags = append(extraAppFlags, v)
		return nil
	})
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: go run ./e2e/load <post|sse|floor|correctness|replay|flood|roompage|conns|replaymem|upload|search|hostile|bigroom|versus|moving|bots|maildown> [flags]
       go run ./e2e/load <subcommand> -h   for its flags`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	raiseFileLimit()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "post":
		err = runPost(ctx, os.Args[2:])
	case "sse":
		err = runSSE(ctx, os.Args[2:])
	case "correctness":
		err = runCorrectness(ctx, os.Args[2:])
	case "replay":
		err = runReplay(ctx, os.Args[2:])
	case "roompage":
		err = runRoomPage(ctx, os.Args[2:])
	case "flood":
		err = runFlood(ctx, os.Args[2:])
	case "conns":
		err = runConns(ctx, os.Args[2:])
	case "upload":
		err = runUpload(ctx, os.Args[2:])
	case "search":
		err = runSearch(ctx, os.Args[2:])
	case "hostile":
		err = runHostile(ctx, os.Args[2:])
	case "versus":
		err = runVersus(ctx, os.Args[2:])
	case "bigroom":
		err = runBigRoom(ctx, os.Args[2:])
	case "moving":
		err = runMoving(ctx, os.Args[2:])
	case "bots":
		err = runBots(ctx, os.Args[2:])
	case "maildown":
		err = runMailDown(ctx, os.Args[2:])
	case "hold": // internal: a worker process of conns
		err = runHold(ctx, os.Args[2:])
	case "replaymem":
		err = runReplayMem(ctx, os.Args[2:])
	case "floor":
		err = runFloor(ctx, os.Args[2:])
	case "floorserve": // internal: the writer process of floor
		err = runFloorServe(ctx, os.Args[2:])
	case "serve": // internal: the app instance of -child
		err = runServe(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

// raiseFileLimit lifts the soft open-file limit to the hard one: 1,000+
// SSE connections need two descriptors each in one process (client and
// server side).
func raiseFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	if lim.Cur < 4096 {
		fmt.Fprintf(os.Stderr, "warning: open-file limit is %d; 1,000 SSE connections need more\n", lim.Cur)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

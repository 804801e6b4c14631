// Command chaos runs a mixed load against KillrChat on three Cassandra
// nodes, two app instances and a NATS broker, while it does one fault
// after another to them, and then checks that nothing acknowledged was
// lost and that the invariants of the data model held (issue 23).
//
//	go run ./e2e/chaos [-d 6m] [-hosts 127.0.0.2,127.0.0.3,127.0.0.4] [-faults node-kill,node-stop,node-pause,broker-restart,app-kill]
//
// By default it starts the local three-node cluster (scripts/cassandra.sh
// start --nodes 3) unless it runs already, and stops it after if it
// started it; -hosts says the cluster is up already and is left running.
// The node faults act on the local cluster's processes either way. Each
// run has a keyspace of its own at NetworkTopologyStrategy dc1 = 3.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if addr := os.Getenv(brokerEnv); addr != "" {
		if err := serveBroker(addr); err != nil {
			fmt.Fprintln(os.Stderr, "broker:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.DurationVar(&o.d, "d", 6*time.Minute, "how long the load runs, faults included")
	flag.StringVar(&o.hosts, "hosts", "", "contact points of a running cluster (default: start the local three-node cluster, and stop it after)")
	faults := flag.String("faults", strings.Join(allFaults, ","), "the faults, in order, comma-separated")
	flag.IntVar(&o.posters, "posters", 4, "people posting")
	flag.IntVar(&o.subs, "subs", 6, "people keeping the room open (SSE)")
	flag.Float64Var(&o.rate, "rate", 5, "posts a second per poster")
	flag.BoolVar(&o.keep, "keep", false, "leave the cluster running even if this run started it")
	flag.Parse()
	o.faults = strings.Split(*faults, ",")
	o.out = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	fmt.Println(res.line())
	if !res.held() {
		os.Exit(1)
	}
}

// options of a run.
type options struct {
	d             time.Duration
	hosts         string
	faults        []string
	posters, subs int
	rate          float64
	keep          bool
	out           io.Writer
}

// allFaults are the faults a run does by default, in this order.
var allFaults = []string{"node-kill", "node-stop", "node-pause", "broker-restart", "app-kill"}

// result is what a run found.
type result struct {
	acked, lost, duplicated, missing int
	broken                           []string
	// readyz counts the /readyz answers while each fault lasted, by
	// fault and answer (ready, degraded, unavailable, none).
	readyz map[string]map[string]int
}

func (r result) held() bool {
	return r.lost == 0 && r.duplicated == 0 && r.missing == 0 && len(r.broken) == 0
}

// line is the run's last line.
func (r result) line() string {
	if r.held() {
		return fmt.Sprintf("lost %d, duplicated %d, invariants held", r.lost, r.duplicated)
	}
	s := fmt.Sprintf("lost %d, duplicated %d, missing deliveries %d", r.lost, r.duplicated, r.missing)
	if len(r.broken) > 0 {
		s += "; broken: " + strings.Join(r.broken, "; ")
	}
	return s
}

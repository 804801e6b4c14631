package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(brokerEnv); addr != "" {
		if err := serveBroker(addr); err != nil {
			fmt.Fprintln(os.Stderr, "broker:", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// testLog writes a run's lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// TestNodeLoss is the short version of the command for make test (issue
// 23, item 4): the three local nodes (started here unless they run, and
// then stopped after), two instances over NATS, posters, subscribers and
// racing sign-ups, creations, joins and deletes; one node is killed with
// SIGKILL during the posts and started again. Nothing acknowledged may be
// lost, duplicated or missed by a subscriber, no invariant may break, and
// /readyz must say degraded while the node is down. The command itself
// (go run ./e2e/chaos) adds a graceful stop, a pause, a broker restart and
// an instance's death, and runs for minutes.
func TestNodeLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	res, err := run(ctx, options{d: 80 * time.Second, faults: []string{"node-kill"}, posters: 3, subs: 4, rate: 4, out: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.held() {
		t.Fatal(res.line())
	}
	if res.acked < 500 {
		t.Errorf("only %d posts were acknowledged in 80 s (3 posters at 4 a second)", res.acked)
	}
	if res.readyz["node-kill"]["degraded"] == 0 {
		t.Errorf("/readyz never said degraded while a node was down: %v", res.readyz["node-kill"])
	}
}

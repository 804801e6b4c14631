package cmdtest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/killrchat/killrchat/cmd"
	"github.com/killrchat/killrchat/store/storetest"
)

// Flags are the flags of a test's server on keyspace, on the test
// Cassandra (storetest.Hosts) with storetest's statement timeout (a
// loaded test machine is slower than a cluster), signing cookies with
// sessionKey (hex).
func Flags(keyspace, sessionKey string) []string {
	return []string{"--addr", "127.0.0.1:0", "--cassandra-hosts", strings.Join(storetest.Hosts(), ","),
		"--cassandra-keyspace", keyspace, "--cassandra-timeout", "30s", "--session-key", sessionKey}
}

// Start parses args as the binary's flags, with an empty environment,
// and runs Main, logging to log; it returns Main (the caller closes it)
// and its base URL, without waiting for Cassandra.
func Start(log *slog.Logger, args ...string) (*cmd.Main, string, error) {
	cfg, err := cmd.Parse(args, func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, "", err
	}
	m := cmd.NewMain(cfg)
	m.Log = log
	if err := m.Run(context.Background()); err != nil {
		_ = m.Close()
		return nil, "", err
	}
	return m, "http://" + m.Addr().String(), nil
}

// readyWithin bounds the wait for a started program to say it is ready.
const readyWithin = 5 * time.Minute

// StartReady is Start, then waits up to five minutes for /readyz to
// answer 200: a fresh keyspace's migrations, on a node that every test
// package of make test asks at once, were seen to take over 90 s.
func StartReady(log *slog.Logger, args ...string) (*cmd.Main, string, error) {
	m, url, err := Start(log, args...)
	if err != nil {
		return nil, "", err
	}
	if err := WaitReady(url, readyWithin); err != nil {
		_ = m.Close()
		return nil, "", err
	}
	return m, url, nil
}

// WaitReady polls url's /readyz until it answers 200, for at most within.
func WaitReady(url string, within time.Duration) error {
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the program at %s was not ready within %s", url, within)
		}
	}
}

package main

// cluster: two app instances on one keyspace, carrying live events over an
// embedded NATS server, so the sse measurement can post on one instance and
// subscribe on the other (-cluster).

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/killrchat/killrchat/cmd"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
)

// startCluster starts instance A (posts) and B (subscribers) in this
// process, each as the binary runs it (cmd.Main) with --nats-url; the
// target's URL is A and its SubURL is B.
func startCluster(c common) (*target, error) {
	store.PasswordCost = c.cost
	maxReplays = c.replays
	resumeWindow = c.window
	ks := storetest.Keyspace("load")
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		return nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return nil, fmt.Errorf("nats did not start")
	}
	natsURL := ns.ClientURL()
	port := ns.Addr().(*net.TCPAddr).Port
	var nsMu sync.Mutex
	restart := func(down time.Duration) error {
		nsMu.Lock()
		defer nsMu.Unlock()
		ns.Shutdown()
		ns.WaitForShutdown()
		time.Sleep(down)
		fresh, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true})
		if err != nil {
			return err
		}
		go fresh.Start()
		if !fresh.ReadyForConnections(10 * time.Second) {
			return fmt.Errorf("nats did not start again")
		}
		ns = fresh
		return nil
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec := &storetest.Recorder{}
	var (
		mains []*cmd.Main
		st    *store.Store
	)
	stop := func() {
		if st != nil {
			st.Close()
		}
		for _, m := range mains {
			_ = m.Close()
		}
		nsMu.Lock()
		ns.Shutdown()
		nsMu.Unlock()
		if err := storetest.DropKeyspace(ks); err != nil {
			logf("drop keyspace %s: %v", ks, err)
		}
	}
	// A first, alone: it makes the keyspace; B then finds it made.
	var urls []string
	for _, observe := range []func(store.ObservedQuery){rec.Observe, nil} {
		m, url, err := startMain(log, observe, append(appFlags(ks, key), "--nats-url", natsURL))
		if err != nil {
			stop()
			return nil, err
		}
		mains, urls = append(mains, m), append(urls, url)
	}
	if st, err = openStore(context.Background(), ks); err != nil {
		stop()
		return nil, err
	}
	return &target{URL: urls[0], SubURL: urls[1], Keyspace: ks, Store: st, Recorder: rec,
		Where: "in-process, two instances over NATS (post on A, subscribe on B)", inProcess: true, close: stop,
		restartBroker: restart}, nil
}

// subURL is where subscribers connect.
func (t *target) subURL() string {
	if t.SubURL != "" {
		return t.SubURL
	}
	return t.URL
}

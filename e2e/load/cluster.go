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
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/handlers/routes"
	"github.com/killrchat/killrchat/live/natshub"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
	"github.com/killrchat/killrchat/web/metrics"
)

// startCluster starts instance A (posts) and B (subscribers) in this
// process; the target's URL is A and its SubURL is B.
func startCluster(c common) (*target, error) {
	store.PasswordCost = c.cost
	maxReplays = c.replays
	resumeWindow = c.window
	db, err := storetest.Open("load")
	if err != nil {
		return nil, err
	}
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		_ = db.Drop()
		return nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		_ = db.Drop()
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
	storeB, err := db.Another()
	if err != nil {
		ns.Shutdown()
		_ = db.Drop()
		return nil, err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var stops []func()
	serve := func(st *store.Store) (string, error) {
		hub, err := natshub.New(natsURL, log)
		if err != nil {
			return "", err
		}
		srv := handlers.New(st, metrics.New(), hub, appConfig(key), log)
		e := echo.New()
		routes.Register(e, srv)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		hs := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		stops = append(stops, func() {
			srv.Shutdown()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = hs.Shutdown(sctx)
			cancel()
			_ = hub.Close()
		})
		return "http://" + ln.Addr().String(), nil
	}
	stop := func() {
		for _, s := range stops {
			s()
		}
		storeB.Close()
		nsMu.Lock()
		ns.Shutdown()
		nsMu.Unlock()
		if err := db.Drop(); err != nil {
			logf("drop keyspace %s: %v", db.Keyspace, err)
		}
	}
	urlA, err := serve(db.Store)
	if err != nil {
		stop()
		return nil, err
	}
	urlB, err := serve(storeB)
	if err != nil {
		stop()
		return nil, err
	}
	return &target{URL: urlA, SubURL: urlB, Keyspace: db.Keyspace, Store: db.Store, Recorder: db.Recorder,
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

package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/store"
)

// Hosts are the Cassandra contact points tests use.
func Hosts() []string {
	if h := os.Getenv("CASSANDRA_HOSTS"); h != "" {
		return strings.Split(h, ",")
	}
	return []string{"127.0.0.1"}
}

// Keyspace returns a fresh keyspace name for pkg.
func Keyspace(pkg string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("test_%s_%s", pkg, hex.EncodeToString(b))
}

// Recorder collects the statements a store sends while it is on.
type Recorder struct {
	mu  sync.Mutex
	on  bool
	got []store.ObservedQuery
}

// Observe is the store's Config.Observe.
func (r *Recorder) Observe(q store.ObservedQuery) {
	r.mu.Lock()
	if r.on {
		r.got = append(r.got, q)
	}
	r.mu.Unlock()
}

// Start clears and starts recording.
func (r *Recorder) Start() {
	r.mu.Lock()
	r.on, r.got = true, nil
	r.mu.Unlock()
}

// Stop stops recording and returns what was recorded.
func (r *Recorder) Stop() []store.ObservedQuery {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.got
}

// DB is a store on a fresh keyspace.
type DB struct {
	*store.Store
	Keyspace string
	Recorder *Recorder
	cfg      store.Config
}

// connectTimeout bounds connecting a store and applying the schema: a
// dozen schema statements, each waiting its turn on a node that every
// test binary of make test (and, on a shared machine, other runs) asks
// at once. Two minutes for Open, and one for Another, were seen to run
// out at load average 40; a node that does not answer still fails at
// once.
const connectTimeout = 5 * time.Minute

// Open connects a store to a fresh keyspace for pkg, applying the schema.
func Open(pkg string) (*DB, error) {
	rec := &Recorder{}
	cfg := store.Config{Hosts: Hosts(), Keyspace: Keyspace(pkg), Observe: rec.Observe, Timeout: 30 * time.Second}
	st := store.New(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if err := Connect(ctx, st); err != nil {
		return nil, fmt.Errorf("storetest: Cassandra at %v is required (run `make cassandra-start`): %w", cfg.Hosts, err)
	}
	return &DB{Store: st, Keyspace: cfg.Keyspace, Recorder: rec, cfg: cfg}, nil
}

// Connect connects st, trying again while Cassandra is there but slow: a
// node serves schema statements one at a time, and when several test
// binaries apply their schemas at once, on a loaded machine, one CREATE
// KEYSPACE or CREATE TABLE IF NOT EXISTS can wait longer than a
// statement's timeout. Every step of the schema is safe to run again (IF
// NOT EXISTS, and the migration lock); a node that does not answer at all
// fails at once.
func Connect(ctx context.Context, st *store.Store) error {
	for {
		err := st.Connect(ctx)
		if err == nil || !errors.Is(err, gocql.ErrTimeoutNoResponse) || ctx.Err() != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "storetest: Cassandra is slow to apply the schema; trying again:", err)
	}
}

// Another returns a second store on the same keyspace, as another app
// instance would have.
func (db *DB) Another() (*store.Store, error) {
	st := store.New(db.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	return st, Connect(ctx, st)
}

// AnotherWith is Another with its config changed by change first (a test
// that slows a statement down, say).
func (db *DB) AnotherWith(change func(*store.Config)) (*store.Store, error) {
	cfg := db.cfg
	change(&cfg)
	st := store.New(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	return st, Connect(ctx, st)
}

// Session is a raw gocql session on the test keyspace, for checks that go
// around the store.
func (db *DB) Session() (*gocql.Session, error) {
	c := gocql.NewCluster(Hosts()...)
	c.Keyspace = db.Keyspace
	c.Timeout = 10 * time.Second
	c.Consistency = gocql.Quorum
	return c.CreateSession()
}

// Drop closes the store and drops its keyspace.
func (db *DB) Drop() error {
	db.Close()
	return DropKeyspace(db.Keyspace)
}

// DropKeyspace drops a keyspace.
func DropKeyspace(ks string) error {
	c := gocql.NewCluster(Hosts()...)
	c.Timeout = 30 * time.Second
	sess, err := c.CreateSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	return sess.Query("DROP KEYSPACE IF EXISTS " + ks).Exec()
}

// Main runs a package's tests with a fresh keyspace in *db, dropped
// afterwards. Use it from TestMain: os.Exit(storetest.Main(m, "pkg", &db)).
func Main(m *testing.M, pkg string, db **DB) int {
	d, err := Open(pkg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	*db = d
	code := m.Run()
	if err := d.Drop(); err != nil {
		fmt.Fprintln(os.Stderr, "storetest: drop keyspace:", err)
	}
	return code
}

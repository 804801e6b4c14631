package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/sync/semaphore"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/schema"
)

// ObservedQuery is what Config.Observe learns about each statement sent.
type ObservedQuery struct {
	Statement string
	Values    []any
	Duration  time.Duration
	// Start is when the statement was sent: tests check that independent
	// reads overlap.
	Start time.Time
	Err   error
	// Rows is how many rows the statement's first page returned.
	Rows  int
	Batch bool
	// BatchIndex is the statement's place in its batch: 0 starts a batch.
	BatchIndex int
}

// Config says how to reach Cassandra.
type Config struct {
	Hosts []string
	// Port is the CQL port of every host (9042 if 0).
	Port        int
	Keyspace    string
	Replication string
	Consistency gocql.Consistency
	// SerialConsistency is set explicitly on every conditional statement.
	SerialConsistency gocql.SerialConsistency
	Timeout           time.Duration
	// LocalDC is the data centre whose nodes coordinate (with
	// LOCAL_QUORUM, the one whose replicas answer); empty: every node
	// in turn.
	LocalDC string
	// Speculative is how long an idempotent read or write waits for its
	// coordinator before the same statement goes to a second node as
	// well; zero: never (see speculation).
	Speculative time.Duration
	// Observe, if set, is called after every statement and batch.
	Observe func(ObservedQuery)
	Log     *slog.Logger
	// ChunkBuffers bounds the attachment chunks that all uploads of this
	// process hold at once (default 8, of 1000 KB each).
	ChunkBuffers int
	// DecodeBudget bounds the memory, in bytes, that the image decodes of
	// this process (for previews) take together (default 256 MiB), each
	// counted as twice its decoded bytes; an image whose decode alone
	// needs more gets no preview.
	DecodeBudget int64
	// ReadBudget bounds the memory, in bytes, of the attachment chunks
	// that the downloads and decodes of this process hold at once
	// (default 32 MiB: 32 chunks); a reader waits for room.
	ReadBudget int64
	// Username and Password log in to a cluster that requires it
	// (PasswordAuthenticator); empty: no login.
	Username, Password string
	// TLS, if set, is how connections to the nodes are encrypted and the
	// nodes' certificates checked.
	TLS *tls.Config
	// ExistingKeyspace forbids creating the keyspace: Connect fails with
	// schema.ErrNoKeyspace when it is missing.
	ExistingKeyspace bool
	// NoMigrate makes Connect check the schema instead of applying it:
	// it fails with schema.ErrOutdated when migrations are missing.
	NoMigrate bool
}

// ErrBadCredentials is wrapped by Connect's error when Cassandra refuses
// the user name or password, or asks for one and none is configured.
var ErrBadCredentials = errors.New("store: Cassandra refused the user name or password")

// ErrCertificate is wrapped by Connect's error when a node's TLS
// certificate does not verify.
var ErrCertificate = errors.New("store: the Cassandra node's TLS certificate did not verify")

// Store is the application's handle on Cassandra. It can be created before
// Cassandra is up: until Connect succeeds every method returns chat.ErrUnavailable.
type Store struct {
	cfg     Config
	log     *slog.Logger
	session atomic.Pointer[gocql.Session]
	// emailDues are the due times of pending emails this process listed.
	emailDues dues

	// Now is the clock; tests replace it to place messages on chosen days.
	Now func() time.Time

	// knownBuckets remembers (room, bucket) pairs already recorded in
	// messages_bucket by this process; it only saves writes.
	knownBuckets sync.Map
	ids          chat.IDGenerator
	// groups coalesces the writes of a conversation's posts (see
	// postGrouped).
	groups groups
	// writer names this store in the writers of the days it writes to
	// (see writerKey); lastMark is the write time of its last mark.
	writer     string
	writerOnce sync.Once
	lastMark   atomic.Int64

	// chunkBufs is the pool of upload chunk buffers (see chunkBuffer).
	chunkBufs     chan []byte
	chunkBufsOnce sync.Once
	// decodeBudget holds the bytes of the decodes under way (see
	// Config.DecodeBudget).
	decodeBudget     *semaphore.Weighted
	decodeBudgetSize int64
	// readBudget holds the bytes of the chunks open readers hold (see
	// Config.ReadBudget).
	readBudget     *semaphore.Weighted
	readBudgetSize int64
	// chunkReads counts the attachment chunks read (see ChunkReads).
	chunkReads atomic.Int64

	// words remembers the search index's words already written (see
	// IndexMessage); it only saves writes.
	words wordMemo
	// months remembers conversations' months with messages (see Search).
	months monthsMemo
	// places is the first month whose term_places are complete (see
	// placesFrom).
	places placesSetting
	// speculative is Config.Speculative as the driver's policy, set by
	// Connect before the session is published (see oneNode).
	speculative gocql.SpeculativeExecutionPolicy
	// connected is closed once Connect succeeds (see Connected).
	connected     chan struct{}
	connectedOnce sync.Once
}

// New returns a Store that is not yet connected.
func New(cfg Config) *Store {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Consistency == 0 {
		cfg.Consistency = gocql.LocalQuorum
	}
	if cfg.SerialConsistency == 0 {
		cfg.SerialConsistency = gocql.LocalSerial
	}
	if cfg.Replication == "" {
		cfg.Replication = "SimpleStrategy:1"
	}
	if cfg.DecodeBudget <= 0 {
		cfg.DecodeBudget = DefaultDecodeBudget
	}
	if cfg.ReadBudget <= 0 {
		cfg.ReadBudget = DefaultReadBudget
	}
	return &Store{cfg: cfg, log: cfg.Log, Now: time.Now, speculative: speculation(cfg.Speculative), connected: make(chan struct{}),
		decodeBudget: semaphore.NewWeighted(cfg.DecodeBudget), decodeBudgetSize: cfg.DecodeBudget,
		readBudget: semaphore.NewWeighted(cfg.ReadBudget), readBudgetSize: cfg.ReadBudget}
}

func (s *Store) cluster() gocql.ClusterConfig {
	c := gocql.NewCluster(s.cfg.Hosts...)
	if s.cfg.Port != 0 {
		c.Port = s.cfg.Port
	}
	c.Consistency = s.cfg.Consistency
	c.SerialConsistency = s.cfg.SerialConsistency
	c.Timeout = s.cfg.Timeout
	c.ConnectTimeout = s.cfg.Timeout
	c.WriteTimeout = s.cfg.Timeout
	// Notice a restarted node quickly instead of after the default minute.
	c.ReconnectInterval = time.Second
	c.ReconnectionPolicy = &gocql.ExponentialReconnectionPolicy{MaxRetries: 1 << 20, InitialInterval: 500 * time.Millisecond, MaxInterval: 5 * time.Second}
	// Only idempotent statements may be retried by the driver; conditional
	// statements are never marked idempotent (see lwt.go, driver.go).
	c.RetryPolicy = idempotentRetry{driverRetries}
	c.DisableSkipMetadata = false
	if s.cfg.Username != "" {
		c.Authenticator = gocql.PasswordAuthenticator{Username: s.cfg.Username, Password: s.cfg.Password}
	}
	if s.cfg.TLS != nil {
		// The config says what to verify (see its VerifyPeerCertificate
		// when host names are not checked).
		c.SslOpts = &gocql.SslOptions{Config: s.cfg.TLS, EnableHostVerification: !s.cfg.TLS.InsecureSkipVerify}
	}
	if s.cfg.Observe != nil {
		c.QueryObserver = queryObserver{s.cfg.Observe}
		c.BatchObserver = queryObserver{s.cfg.Observe}
	}
	return *c
}

// Connect makes one attempt to reach Cassandra, apply the schema (with
// NoMigrate: check it) and open the session. It returns an error wrapping
// chat.ErrUnavailable if Cassandra does not answer; otherwise one that
// Permanent reports: schema.ErrChanged if a migration was edited,
// schema.ErrNoKeyspace, schema.ErrOutdated, ErrBadCredentials or
// ErrCertificate.
func (s *Store) Connect(ctx context.Context) error {
	if s.session.Load() != nil {
		return nil
	}
	cluster := s.cluster()
	var err error
	if s.cfg.NoMigrate {
		err = schema.Check(ctx, cluster, s.schemaOptions())
	} else {
		err = schema.Apply(ctx, cluster, s.schemaOptions())
	}
	if err != nil {
		return s.connectFailed(err)
	}
	cluster.Keyspace = s.cfg.Keyspace
	// A token-aware policy serves one session only: the migrations' own
	// sessions go round the nodes.
	cluster.PoolConfig.HostSelectionPolicy = hostPolicy(s.cfg.LocalDC)
	sess, err := cluster.CreateSession()
	if err != nil {
		return s.connectFailed(err)
	}
	if err := s.moveRooms(ctx, sess); err != nil {
		sess.Close()
		return fmt.Errorf("store: connect: %w (%w)", chat.ErrUnavailable, err)
	}
	if err := s.settleSite(ctx, sess); err != nil {
		sess.Close()
		return fmt.Errorf("store: connect: %w (%w)", chat.ErrUnavailable, err)
	}
	if err := s.mergeSiteSettings(ctx, sess); err != nil {
		sess.Close()
		return fmt.Errorf("store: connect: %w (%w)", chat.ErrUnavailable, err)
	}
	if err := s.movePeople(ctx, sess); err != nil {
		sess.Close()
		return fmt.Errorf("store: connect: %w (%w)", chat.ErrUnavailable, err)
	}
	single, err := oneNode(ctx, sess)
	if err != nil {
		sess.Close()
		return fmt.Errorf("store: connect: %w (%w)", chat.ErrUnavailable, err)
	}
	if single && s.cfg.Speculative > 0 {
		// The driver sends a speculative attempt to the next host of the
		// query plan; with no other host, that attempt fails at once with
		// "no hosts available" and its error is taken as the answer, so
		// every statement slower than the delay would fail.
		s.speculative = speculation(0)
		s.log.Info("store: speculative execution off: the cluster has one node")
	}
	if !s.session.CompareAndSwap(nil, sess) {
		sess.Close()
	}
	s.connectedOnce.Do(func() { close(s.connected) })
	return nil
}

func (s *Store) schemaOptions() schema.Options {
	return schema.Options{Keyspace: s.cfg.Keyspace, Replication: s.cfg.Replication, ExistingKeyspace: s.cfg.ExistingKeyspace, Log: s.log}
}

// Permanent reports whether err, from Connect, is one that trying again
// cannot mend: a changed or missing schema, a missing keyspace, refused
// credentials, a certificate that does not verify.
func Permanent(err error) bool {
	for _, e := range []error{schema.ErrChanged, schema.ErrNoKeyspace, schema.ErrOutdated, ErrBadCredentials, ErrCertificate} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// connectFailed classifies a failed connection or schema step. The
// driver flattens the server's refusals into text, so they are told by
// their words.
func (s *Store) connectFailed(err error) error {
	msg := err.Error()
	switch {
	case Permanent(err):
		return err
	case strings.Contains(msg, "and/or password are incorrect") || strings.Contains(msg, "authentication required") ||
		strings.Contains(msg, "Failed to authenticate"):
		return fmt.Errorf("%w (%v)", ErrBadCredentials, err)
	case strings.Contains(msg, "x509: ") || strings.Contains(msg, "tls: failed to verify"):
		return fmt.Errorf("%w (%v)", ErrCertificate, err)
	}
	return fmt.Errorf("store: connect: %w (%w)", chat.ErrUnavailable, err)
}

// SchemaStatus reads where the keyspace's schema stands, changing
// nothing; schema.ErrNoKeyspace if the keyspace does not exist.
func (s *Store) SchemaStatus(ctx context.Context) (schema.Status, error) {
	st, err := schema.ReadStatus(ctx, s.cluster(), s.schemaOptions())
	if err != nil {
		return st, s.connectFailed(err)
	}
	return st, nil
}

// Migrate applies the schema (creating the keyspace unless
// ExistingKeyspace) without opening the store's session, and returns
// where it stood before and stands after; errors as Connect's.
func (s *Store) Migrate(ctx context.Context) (before, after schema.Status, err error) {
	before, err = s.SchemaStatus(ctx)
	if err != nil && !(errors.Is(err, schema.ErrNoKeyspace) && !s.cfg.ExistingKeyspace) {
		return before, after, err
	}
	if err := schema.Apply(ctx, s.cluster(), s.schemaOptions()); err != nil {
		return before, after, s.connectFailed(err)
	}
	after, err = s.SchemaStatus(ctx)
	return before, after, err
}

// oneNode reports whether the cluster is one node: it knows no peers.
func oneNode(ctx context.Context, sess *gocql.Session) (bool, error) {
	var peer string
	iter := sess.Query(`SELECT peer FROM system.peers LIMIT 1`).WithContext(ctx).Iter()
	found := iter.Scan(&peer)
	return !found, iter.Close()
}

// Connected is closed once Connect has succeeded: what needs the database
// to start (the VAPID keys, the avatars) waits for it instead of failing
// while Cassandra is not up yet.
func (s *Store) Connected() <-chan struct{} { return s.connected }

// ConnectWithRetry calls Connect until it succeeds, backing off up to 15 s
// between attempts and logging each failure. It returns early on an error
// a retry cannot mend (see Permanent) or when ctx ends.
func (s *Store) ConnectWithRetry(ctx context.Context) error {
	wait := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := s.Connect(ctx)
		if err == nil {
			s.log.Info("cassandra connected", "hosts", s.cfg.Hosts, "keyspace", s.cfg.Keyspace, "attempts", attempt)
			return nil
		}
		if Permanent(err) {
			return err
		}
		s.log.Warn("cassandra not reachable yet; retrying", "hosts", s.cfg.Hosts, "in", wait, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 15*time.Second)
	}
}

// Close closes the session, if any.
func (s *Store) Close() {
	if sess := s.session.Swap(nil); sess != nil {
		sess.Close()
	}
}

// selectHealth reads one row of the keyspace (every keyspace has it: the
// first migration), at the consistency Health asks.
const selectHealth = `SELECT version FROM schema_migrations WHERE version = 1`

// healthAll bounds the read at ALL: a replica that is slow to answer, not
// only one that is down, makes the cluster degraded.
const healthAll = time.Second

// Health tells whether the application can work now: an error wrapping
// chat.ErrUnavailable if a read at the configured consistency (LOCAL_QUORUM)
// fails; else degraded is non-empty, saying why, when a read at ALL fails,
// which is a replica down or too slow while a quorum still answers. (The
// row read lives on RF nodes: on a cluster of more nodes than RF, a node
// that holds no replica of it can be down unnoticed here.)
func (s *Store) Health(ctx context.Context) (degraded string, err error) {
	q, err := s.query(ctx, selectHealth)
	if err != nil {
		return "", err
	}
	var v int
	if err := q.Scan(&v); err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return "", s.fail("health", err)
	}
	if s.cfg.Consistency == gocql.All {
		return "", nil
	}
	actx, cancel := context.WithTimeout(ctx, healthAll)
	defer cancel()
	q, err = s.query(actx, selectHealth)
	if err != nil {
		return "", err
	}
	err = q.Consistency(gocql.All).SetSpeculativeExecutionPolicy(&gocql.NonSpeculativeExecution{}).RetryPolicy(nil).Scan(&v)
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return fmt.Sprintf("not every replica answers (%v); a quorum does", err), nil
	}
	return "", nil
}

func (s *Store) db() (*gocql.Session, error) {
	sess := s.session.Load()
	if sess == nil {
		return nil, fmt.Errorf("store: %w: not connected yet", chat.ErrUnavailable)
	}
	return sess, nil
}

// query prepares a statement with the store's defaults. Plain statements are
// idempotent in this application (inserts of server-made ids, set and map
// updates, deletes), so the driver may retry them.
func (s *Store) query(ctx context.Context, stmt string, values ...any) (*gocql.Query, error) {
	sess, err := s.db()
	if err != nil {
		return nil, err
	}
	return sess.Query(stmt, values...).WithContext(ctx).Idempotent(true).SetSpeculativeExecutionPolicy(s.speculative), nil
}

// exec runs one statement that returns no rows; op names it in errors.
func (s *Store) exec(ctx context.Context, op, stmt string, values ...any) error {
	q, err := s.query(ctx, stmt, values...)
	if err != nil {
		return err
	}
	if err := q.Exec(); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// fail wraps a driver error for operation op, marking unreachability and
// timeouts as chat.ErrUnavailable.
func (s *Store) fail(op string, err error) error {
	if isUnavailable(err) {
		return fmt.Errorf("store: %s: %w (%w)", op, chat.ErrUnavailable, err)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

func isUnavailable(err error) bool {
	if errors.Is(err, chat.ErrUnavailable) || errors.Is(err, gocql.ErrNoConnections) ||
		errors.Is(err, gocql.ErrSessionClosed) || errors.Is(err, gocql.ErrTimeoutNoResponse) ||
		errors.Is(err, gocql.ErrConnectionClosed) || errors.Is(err, gocql.ErrNoHosts) ||
		errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var (
		unavail *gocql.RequestErrUnavailable
		wto     *gocql.RequestErrWriteTimeout
		rto     *gocql.RequestErrReadTimeout
		netErr  net.Error
	)
	return errors.As(err, &unavail) || errors.As(err, &wto) || errors.As(err, &rto) || errors.As(err, &netErr)
}

type queryObserver struct{ fn func(ObservedQuery) }

func (o queryObserver) ObserveQuery(_ context.Context, q gocql.ObservedQuery) {
	o.fn(ObservedQuery{Statement: q.Statement, Values: q.Values, Duration: q.End.Sub(q.Start), Start: q.Start, Err: q.Err, Rows: q.Rows})
}

func (o queryObserver) ObserveBatch(_ context.Context, b gocql.ObservedBatch) {
	for i, st := range b.Statements {
		o.fn(ObservedQuery{Statement: st, Values: b.Values[i], Duration: b.End.Sub(b.Start), Start: b.Start, Err: b.Err, Batch: true, BatchIndex: i})
	}
}

package schema

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"
)

// Files holds the migrations, named NNN_description.cql.
//
//go:embed *.cql
var Files embed.FS

// ErrChanged is returned when a migration that was already applied no longer
// has the checksum it was applied with.
var ErrChanged = errors.New("schema: an applied migration was changed")

// ErrNoKeyspace is returned when the keyspace does not exist and may not
// be created (Options.ExistingKeyspace), or is only checked (Check).
// Its text completes "keyspace NAME ...".
var ErrNoKeyspace = errors.New("does not exist")

// ErrOutdated is returned by Check when migrations of this program are
// not applied to the keyspace yet.
var ErrOutdated = errors.New("schema: the keyspace's schema is older than this program needs")

const (
	createMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version int PRIMARY KEY, name text, checksum text, applied_at timestamp)`
	createLock = `CREATE TABLE IF NOT EXISTS schema_lock (
		name text PRIMARY KEY, owner text)`
	selectApplied = `SELECT checksum FROM schema_migrations WHERE version = ?`
	// The bookkeeping is a few dozen rows: reading it whole is reading
	// what is wanted.
	selectAllApplied = `SELECT version, name, checksum, applied_at FROM %s.schema_migrations`
	selectKeyspace   = `SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?`
	selectTable      = `SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = 'schema_migrations'`
	insertApplied    = `INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)`
	acquireLock      = `INSERT INTO schema_lock (name, owner) VALUES ('migrate', ?) IF NOT EXISTS USING TTL 120`
	releaseLock      = `DELETE FROM schema_lock WHERE name = 'migrate' IF owner = ?`
)

// Options says where and how to apply the migrations.
type Options struct {
	Keyspace string
	// Replication is "SimpleStrategy:RF" or "NetworkTopologyStrategy:dc1=3,dc2=3".
	Replication string
	// ExistingKeyspace forbids creating the keyspace: Apply returns
	// ErrNoKeyspace when it is missing (a managed cluster, where the
	// application's user may not create keyspaces).
	ExistingKeyspace bool
	// Files overrides the embedded migrations (tests use it).
	Files fs.FS
	Log   *slog.Logger
}

// Migration is one numbered .cql file.
type Migration struct {
	Version  int
	Name     string
	Checksum string
	Body     string
}

var keyspaceName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,47}$`)

// ValidKeyspace reports whether name can be used unquoted as a keyspace name.
func ValidKeyspace(name string) bool { return keyspaceName.MatchString(name) }

// ReplicationCQL turns a replication setting into a CQL replication map.
// It returns an error for anything but SimpleStrategy:N and
// NetworkTopologyStrategy:dc=N[,dc=N...].
func ReplicationCQL(s string) (string, error) {
	class, params, ok := strings.Cut(s, ":")
	if !ok {
		return "", fmt.Errorf("schema: replication %q: want SimpleStrategy:RF or NetworkTopologyStrategy:dc=RF,...", s)
	}
	switch class {
	case "SimpleStrategy":
		rf, err := strconv.Atoi(params)
		if err != nil || rf < 1 {
			return "", fmt.Errorf("schema: replication %q: bad replication factor", s)
		}
		return fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", rf), nil
	case "NetworkTopologyStrategy":
		parts := []string{"'class': 'NetworkTopologyStrategy'"}
		for _, dc := range strings.Split(params, ",") {
			name, rfs, ok := strings.Cut(strings.TrimSpace(dc), "=")
			rf, err := strconv.Atoi(rfs)
			if !ok || err != nil || rf < 1 || !regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`).MatchString(name) {
				return "", fmt.Errorf("schema: replication %q: bad data centre %q", s, dc)
			}
			parts = append(parts, fmt.Sprintf("'%s': %d", name, rf))
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	}
	return "", fmt.Errorf("schema: replication %q: unknown strategy %q", s, class)
}

// Load reads the migrations of fsys in version order.
func Load(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.cql")
	if err != nil {
		return nil, fmt.Errorf("schema: list migrations: %w", err)
	}
	var ms []Migration
	seen := map[int]string{}
	for _, name := range names {
		num, _, ok := strings.Cut(path.Base(name), "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("schema: migration %q: name must start with a number and '_'", name)
		}
		if other, dup := seen[version]; dup {
			return nil, fmt.Errorf("schema: migrations %q and %q share version %d", other, name, version)
		}
		seen[version] = name
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("schema: read %q: %w", name, err)
		}
		sum := sha256.Sum256(body)
		ms = append(ms, Migration{Version: version, Name: name, Checksum: hex.EncodeToString(sum[:]), Body: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Statements splits a migration into its CQL statements, dropping comments.
func (m Migration) Statements() []string {
	var b strings.Builder
	for _, line := range strings.Split(m.Body, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	var out []string
	for _, st := range strings.Split(b.String(), ";") {
		if st = strings.TrimSpace(st); st != "" {
			out = append(out, st)
		}
	}
	return out
}

// Apply creates the keyspace if needed and applies every migration not yet
// applied, holding an LWT lock row so that concurrent runners take turns.
// cluster is copied, never changed. It returns ErrChanged (wrapped) if an
// applied migration's checksum differs from the file's.
func Apply(ctx context.Context, cluster gocql.ClusterConfig, opts Options) error {
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	if !ValidKeyspace(opts.Keyspace) {
		return fmt.Errorf("schema: invalid keyspace name %q", opts.Keyspace)
	}
	repl, err := ReplicationCQL(opts.Replication)
	if err != nil {
		return err
	}
	files := opts.Files
	if files == nil {
		files = Files
	}
	migrations, err := Load(files)
	if err != nil {
		return err
	}

	cluster.Keyspace = ""
	admin, err := cluster.CreateSession()
	if err != nil {
		return fmt.Errorf("schema: connect: %w", err)
	}
	if opts.ExistingKeyspace {
		err = keyspaceExists(ctx, admin, opts.Keyspace, repl)
	} else {
		err = admin.Query(fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", opts.Keyspace, repl)).
			WithContext(ctx).Exec()
		if err != nil {
			err = fmt.Errorf("schema: create keyspace %s: %w", opts.Keyspace, err)
		}
	}
	admin.Close()
	if err != nil {
		return err
	}

	cluster.Keyspace = opts.Keyspace
	sess, err := cluster.CreateSession()
	if err != nil {
		return fmt.Errorf("schema: connect to keyspace %s: %w", opts.Keyspace, err)
	}
	defer sess.Close()
	for _, st := range []string{createMigrations, createLock} {
		if err := sess.Query(st).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("schema: bookkeeping tables: %w", err)
		}
	}

	owner, err := lock(ctx, sess, log)
	if err != nil {
		return err
	}
	defer func() {
		// A fresh context: the lock must be released even if ctx was cancelled.
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := sess.Query(releaseLock, owner).WithContext(rctx).SerialConsistency(gocql.Serial).
			MapScanCAS(map[string]any{}); err != nil {
			log.Warn("schema: release migration lock", "err", err)
		}
	}()

	for _, m := range migrations {
		var applied string
		err := sess.Query(selectApplied, m.Version).WithContext(ctx).Consistency(gocql.Quorum).Scan(&applied)
		switch {
		case err == nil && applied != m.Checksum:
			return fmt.Errorf("%w: %s was applied with checksum %s, the file now has %s; add a new migration instead of editing it",
				ErrChanged, m.Name, applied[:12], m.Checksum[:12])
		case err == nil:
			continue
		case !errors.Is(err, gocql.ErrNotFound):
			return fmt.Errorf("schema: read applied %s: %w", m.Name, err)
		}
		for _, st := range m.Statements() {
			if err := sess.Query(st).WithContext(ctx).Exec(); err != nil {
				return fmt.Errorf("schema: apply %s: %w", m.Name, err)
			}
		}
		if err := sess.Query(insertApplied, m.Version, m.Name, m.Checksum, time.Now()).
			WithContext(ctx).Consistency(gocql.Quorum).Exec(); err != nil {
			return fmt.Errorf("schema: record %s: %w", m.Name, err)
		}
		log.Info("schema: applied migration", "keyspace", opts.Keyspace, "file", m.Name)
	}
	return nil
}

// lock takes the migration lock row, waiting while another runner holds it.
// The row has a TTL so a runner that died does not block the next start forever.
func lock(ctx context.Context, sess *gocql.Session, log *slog.Logger) (string, error) {
	var idb [12]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return "", fmt.Errorf("schema: lock owner id: %w", err)
	}
	owner := hex.EncodeToString(idb[:])
	for waited := false; ; waited = true {
		applied, err := sess.Query(acquireLock, owner).WithContext(ctx).SerialConsistency(gocql.Serial).
			MapScanCAS(map[string]any{})
		if err != nil {
			return "", fmt.Errorf("schema: take migration lock: %w", err)
		}
		if applied {
			return owner, nil
		}
		if !waited {
			log.Info("schema: another instance is migrating; waiting for it")
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("schema: wait for migration lock: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// keyspaceExists returns nil if keyspace exists, else ErrNoKeyspace
// saying what to create (with replication repl, a CQL map).
func keyspaceExists(ctx context.Context, sess *gocql.Session, keyspace, repl string) error {
	var name string
	err := sess.Query(selectKeyspace, keyspace).WithContext(ctx).Scan(&name)
	if errors.Is(err, gocql.ErrNotFound) {
		return fmt.Errorf("schema: keyspace %s %w: create it (CREATE KEYSPACE %s WITH replication = %s) or let KillrChat create it",
			keyspace, ErrNoKeyspace, keyspace, repl)
	}
	if err != nil {
		return fmt.Errorf("schema: look up keyspace %s: %w", keyspace, err)
	}
	return nil
}

// Applied is one migration recorded as applied in a keyspace.
type Applied struct {
	Version        int
	Name, Checksum string
	At             time.Time
}

// Status is where a keyspace's schema stands against the migrations.
type Status struct {
	Keyspace string
	// Applied are the migrations recorded in the keyspace, by version.
	Applied []Applied
	// Pending are the migrations not applied yet, by version.
	Pending []Migration
	// Changed are the applied migrations whose file now differs.
	Changed []Migration
	// Latest is the version of the newest migration this program has.
	Latest int
}

// Version is the highest applied version; 0 when none is.
func (s Status) Version() int {
	if len(s.Applied) == 0 {
		return 0
	}
	return s.Applied[len(s.Applied)-1].Version
}

// ReadStatus reads which migrations (opts.Files, else the embedded ones)
// are applied to opts.Keyspace, changing nothing. It returns ErrNoKeyspace
// if the keyspace does not exist. cluster is copied, never changed.
func ReadStatus(ctx context.Context, cluster gocql.ClusterConfig, opts Options) (Status, error) {
	st := Status{Keyspace: opts.Keyspace}
	if !ValidKeyspace(opts.Keyspace) {
		return st, fmt.Errorf("schema: invalid keyspace name %q", opts.Keyspace)
	}
	files := opts.Files
	if files == nil {
		files = Files
	}
	migrations, err := Load(files)
	if err != nil {
		return st, err
	}
	if n := len(migrations); n > 0 {
		st.Latest = migrations[n-1].Version
	}
	cluster.Keyspace = ""
	sess, err := cluster.CreateSession()
	if err != nil {
		return st, fmt.Errorf("schema: connect: %w", err)
	}
	defer sess.Close()
	repl, err := ReplicationCQL(opts.Replication)
	if err != nil {
		repl = "{...}"
	}
	if err := keyspaceExists(ctx, sess, opts.Keyspace, repl); err != nil {
		return st, err
	}
	var table string
	switch err := sess.Query(selectTable, opts.Keyspace).WithContext(ctx).Scan(&table); {
	case errors.Is(err, gocql.ErrNotFound):
		st.Pending = migrations
		return st, nil
	case err != nil:
		return st, fmt.Errorf("schema: read %s's tables: %w", opts.Keyspace, err)
	}
	iter := sess.Query(fmt.Sprintf(selectAllApplied, opts.Keyspace)).WithContext(ctx).Consistency(gocql.Quorum).Iter()
	var a Applied
	for iter.Scan(&a.Version, &a.Name, &a.Checksum, &a.At) {
		st.Applied = append(st.Applied, a)
		a = Applied{}
	}
	if err := iter.Close(); err != nil {
		return st, fmt.Errorf("schema: read applied migrations of %s: %w", opts.Keyspace, err)
	}
	sort.Slice(st.Applied, func(i, j int) bool { return st.Applied[i].Version < st.Applied[j].Version })
	done := map[int]string{}
	for _, a := range st.Applied {
		done[a.Version] = a.Checksum
	}
	for _, m := range migrations {
		sum, ok := done[m.Version]
		switch {
		case !ok:
			st.Pending = append(st.Pending, m)
		case sum != m.Checksum:
			st.Changed = append(st.Changed, m)
		}
	}
	return st, nil
}

// Check returns nil if every migration is applied to opts.Keyspace,
// unchanged, and changes nothing. It returns ErrNoKeyspace if the
// keyspace does not exist, ErrChanged if an applied file was edited, and
// ErrOutdated, naming what is missing, if migrations are pending.
func Check(ctx context.Context, cluster gocql.ClusterConfig, opts Options) error {
	st, err := ReadStatus(ctx, cluster, opts)
	if err != nil {
		return err
	}
	if len(st.Changed) > 0 {
		return fmt.Errorf("%w: %s was applied with another checksum", ErrChanged, st.Changed[0].Name)
	}
	if n := len(st.Pending); n > 0 {
		return fmt.Errorf("%w: keyspace %s is at version %d and this program needs version %d (%d migrations, from %s, are not applied)",
			ErrOutdated, opts.Keyspace, st.Version(), st.Latest, n, st.Pending[0].Name)
	}
	return nil
}

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

const (
	createMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version int PRIMARY KEY, name text, checksum text, applied_at timestamp)`
	createLock = `CREATE TABLE IF NOT EXISTS schema_lock (
		name text PRIMARY KEY, owner text)`
	selectApplied = `SELECT checksum FROM schema_migrations WHERE version = ?`
	insertApplied = `INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)`
	acquireLock   = `INSERT INTO schema_lock (name, owner) VALUES ('migrate', ?) IF NOT EXISTS USING TTL 120`
	releaseLock   = `DELETE FROM schema_lock WHERE name = 'migrate' IF owner = ?`
)

// Options says where and how to apply the migrations.
type Options struct {
	Keyspace string
	// Replication is "SimpleStrategy:RF" or "NetworkTopologyStrategy:dc1=3,dc2=3".
	Replication string
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
	err = admin.Query(fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", opts.Keyspace, repl)).
		WithContext(ctx).Exec()
	admin.Close()
	if err != nil {
		return fmt.Errorf("schema: create keyspace %s: %w", opts.Keyspace, err)
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

package schema_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/schema"
	"github.com/killrchat/killrchat/store/storetest"
)

func cluster() gocql.ClusterConfig {
	c := gocql.NewCluster(storetest.Hosts()...)
	c.Timeout = 20 * time.Second
	return *c
}

// freshKeyspace names a keyspace that is dropped when the test ends.
func freshKeyspace(t *testing.T) string {
	t.Helper()
	ks := storetest.Keyspace("schema")
	t.Cleanup(func() {
		if err := storetest.DropKeyspace(ks); err != nil {
			t.Errorf("drop %s: %v", ks, err)
		}
	})
	return ks
}

type appliedRow struct {
	checksum  string
	appliedAt time.Time
}

func applied(t *testing.T, ks string) map[int]appliedRow {
	t.Helper()
	c := cluster()
	c.Keyspace = ks
	sess, err := c.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out := map[int]appliedRow{}
	iter := sess.Query(`SELECT version, checksum, applied_at FROM schema_migrations`).Iter()
	var (
		v   int
		row appliedRow
	)
	for iter.Scan(&v, &row.checksum, &row.appliedAt) {
		out[v] = row
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func tables(t *testing.T, ks string) map[string]bool {
	t.Helper()
	c := cluster()
	sess, err := c.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out := map[string]bool{}
	iter := sess.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, ks).Iter()
	var name string
	for iter.Scan(&name) {
		out[name] = true
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	ks := freshKeyspace(t)
	opts := schema.Options{Keyspace: ks, Replication: "SimpleStrategy:1"}

	t.Run("FreshKeyspace", func(t *testing.T) {
		if err := schema.Apply(ctx, cluster(), opts); err != nil {
			t.Fatal(err)
		}
		got := tables(t, ks)
		for _, want := range []string{"users", "sessions", "chat_rooms", "chat_room_messages", "messages_bucket", "schema_migrations"} {
			if !got[want] {
				t.Errorf("table %s missing; have %v", want, got)
			}
		}
		if n := len(embedded(t)); len(applied(t, ks)) != n {
			t.Errorf("applied = %v, want %d migrations", applied(t, ks), n)
		}
	})

	t.Run("RerunIsNoOp", func(t *testing.T) {
		before := applied(t, ks)
		if err := schema.Apply(ctx, cluster(), opts); err != nil {
			t.Fatal(err)
		}
		after := applied(t, ks)
		if len(after) != len(before) {
			t.Fatalf("rows %d → %d", len(before), len(after))
		}
		for v, row := range before {
			if !after[v].appliedAt.Equal(row.appliedAt) {
				t.Errorf("migration %d re-applied at %v (first %v)", v, after[v].appliedAt, row.appliedAt)
			}
		}
	})

	t.Run("NewFileApplies", func(t *testing.T) {
		files := embedded(t)
		n := len(files)
		// A version far above the project's own, so it never collides.
		files["999_extra.cql"] = &fstest.MapFile{Data: []byte("CREATE TABLE IF NOT EXISTS extra (id int PRIMARY KEY);")}
		o := opts
		o.Files = files
		if err := schema.Apply(ctx, cluster(), o); err != nil {
			t.Fatal(err)
		}
		if !tables(t, ks)["extra"] || len(applied(t, ks)) != n+1 {
			t.Errorf("999 not applied: tables %v, applied %v", tables(t, ks), applied(t, ks))
		}
	})

	t.Run("ErrChanged", func(t *testing.T) {
		files := embedded(t)
		files["001_init.cql"].Data = append(append([]byte{}, files["001_init.cql"].Data...), []byte("\n-- edited\n")...)
		o := opts
		o.Files = files
		err := schema.Apply(ctx, cluster(), o)
		if !errors.Is(err, schema.ErrChanged) {
			t.Fatalf("err = %v, want ErrChanged", err)
		}
	})
}

func TestApplyConcurrent(t *testing.T) {
	ks := freshKeyspace(t)
	opts := schema.Options{Keyspace: ks, Replication: "SimpleStrategy:1"}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = schema.Apply(context.Background(), cluster(), opts)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("runner %d: %v", i, err)
		}
	}
	got := applied(t, ks)
	if n := len(embedded(t)); len(got) != n {
		t.Fatalf("applied = %v, want exactly one row per migration (%d)", got, n)
	}
	for _, want := range []string{"users", "chat_rooms", "chat_room_messages"} {
		if !tables(t, ks)[want] {
			t.Errorf("table %s missing", want)
		}
	}
}

func embedded(t *testing.T) fstest.MapFS {
	t.Helper()
	ms, err := schema.Load(schema.Files)
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for _, m := range ms {
		out[m.Name] = &fstest.MapFile{Data: []byte(m.Body)}
	}
	return out
}

func TestReplicationCQL(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"SimpleStrategy:1", "{'class': 'SimpleStrategy', 'replication_factor': 1}", true},
		{"NetworkTopologyStrategy:dc1=3,dc2=2", "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 2}", true},
		{"SimpleStrategy:0", "", false},
		{"SimpleStrategy", "", false},
		{"NetworkTopologyStrategy:dc1=x", "", false},
		{"NetworkTopologyStrategy:dc'1=3", "", false},
		{"EverywhereStrategy:1", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := schema.ReplicationCQL(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ReplicationCQL(%q) = %q, %v", tt.in, got, err)
			}
		})
	}
}

// TestCheck: without leave to create the keyspace, a missing one is
// ErrNoKeyspace saying what to create; Check changes nothing and tells
// an older schema (ErrOutdated, naming the first missing file) from a
// current one; ReadStatus lists what is applied and what is pending.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	ks := freshKeyspace(t)
	two := fstest.MapFS{
		"001_a.cql": &fstest.MapFile{Data: []byte("CREATE TABLE IF NOT EXISTS a (id int PRIMARY KEY);")},
		"002_b.cql": &fstest.MapFile{Data: []byte("CREATE TABLE IF NOT EXISTS b (id int PRIMARY KEY);")},
	}
	three := fstest.MapFS{"003_c.cql": &fstest.MapFile{Data: []byte("CREATE TABLE IF NOT EXISTS c (id int PRIMARY KEY);")}}
	for name, f := range two {
		three[name] = f
	}
	opts := schema.Options{Keyspace: ks, Replication: "SimpleStrategy:1", Files: two}

	t.Run("ErrNoKeyspace", func(t *testing.T) {
		o := opts
		o.ExistingKeyspace = true
		err := schema.Apply(ctx, cluster(), o)
		if !errors.Is(err, schema.ErrNoKeyspace) || !strings.Contains(err.Error(), "CREATE KEYSPACE "+ks+" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}") {
			t.Fatalf("Apply: %v, want ErrNoKeyspace with the CREATE KEYSPACE", err)
		}
		if err := schema.Check(ctx, cluster(), opts); !errors.Is(err, schema.ErrNoKeyspace) {
			t.Fatalf("Check: %v, want ErrNoKeyspace", err)
		}
	})
	if err := schema.Apply(ctx, cluster(), opts); err != nil {
		t.Fatal(err)
	}
	t.Run("Current", func(t *testing.T) {
		if err := schema.Check(ctx, cluster(), opts); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrOutdated", func(t *testing.T) {
		o := opts
		o.Files = three
		err := schema.Check(ctx, cluster(), o)
		if !errors.Is(err, schema.ErrOutdated) || !strings.Contains(err.Error(), "is at version 2 and this program needs version 3") ||
			!strings.Contains(err.Error(), "003_c.cql") {
			t.Fatalf("Check: %v, want ErrOutdated naming 003_c.cql", err)
		}
		st, err := schema.ReadStatus(ctx, cluster(), o)
		if err != nil {
			t.Fatal(err)
		}
		if st.Version() != 2 || st.Latest != 3 || len(st.Applied) != 2 || len(st.Pending) != 1 || st.Pending[0].Name != "003_c.cql" ||
			st.Applied[0].Name != "001_a.cql" || st.Applied[0].At.IsZero() {
			t.Errorf("status %+v", st)
		}
		if tables(t, ks)["c"] {
			t.Error("Check created table c")
		}
	})
}

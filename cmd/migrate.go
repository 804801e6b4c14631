// This file owns the migrate command: it applies the schema to the
// keyspace, as serve does at start unless told not to, and prints where
// the schema stands.

package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/killrchat/killrchat/schema"
	"github.com/killrchat/killrchat/store"
)

// migrate runs `killrchat migrate` and returns its exit code: 0 with the
// schema up to date, 1 with one sentence on stderr.
func migrate(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	sc := cfg.Cassandra.Store()
	sc.Log = cfg.Logger(stderr)
	db := store.New(sc)
	defer db.Close()
	before, after, err := db.Migrate(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "killrchat migrate: %s.\n", advise(err))
		return 1
	}
	writeStatus(stdout, before, after)
	return 0
}

// writeStatus prints the schema's version, what this run applied, and
// every applied migration.
func writeStatus(w io.Writer, before, after schema.Status) {
	now := len(after.Applied) - len(before.Applied)
	fmt.Fprintf(w, "keyspace %s: schema version %d of %d, up to date; %d migrations applied now, %d before\n",
		after.Keyspace, after.Version(), after.Latest, now, len(before.Applied))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "version\tmigration\tapplied at\tchecksum")
	for _, a := range after.Applied {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.12s\n", a.Version, a.Name, a.At.UTC().Format(time.RFC3339), a.Checksum)
	}
	tw.Flush()
}

// advise is err with what the operator can do about it, in the
// settings' words.
func advise(err error) string {
	switch {
	case errors.Is(err, schema.ErrOutdated):
		return err.Error() + ": run killrchat migrate first, or serve with --migrate=true"
	case errors.Is(err, schema.ErrNoKeyspace):
		return err.Error() + " (--cassandra-create-keyspace)"
	case errors.Is(err, schema.ErrChanged):
		return err.Error()
	case errors.Is(err, store.ErrBadCredentials):
		return err.Error() + ": check --cassandra-username and the password"
	case errors.Is(err, store.ErrCertificate):
		return err.Error() + ": check --cassandra-tls-ca (the authority that signed the nodes' certificates) and --cassandra-tls-verify-host"
	}
	return err.Error()
}

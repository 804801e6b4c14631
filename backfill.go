// This file owns the `index-backfill` command: it indexes the messages
// stored before the search index existed (or whose index write was lost),
// and lists the rooms created before room_names existed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/store"
)

// backfillMain runs `killrchat index-backfill [flags]` and returns the
// exit code.
func backfillMain(args []string) int {
	fs := flag.NewFlagSet("killrchat index-backfill", flag.ContinueOnError)
	hosts := fs.String("cassandra-hosts", env("CASSANDRA_HOSTS", "127.0.0.1"), "Cassandra contact points, comma-separated (env CASSANDRA_HOSTS)")
	keyspace := fs.String("cassandra-keyspace", env("CASSANDRA_KEYSPACE", "killrchat"), "keyspace (env CASSANDRA_KEYSPACE)")
	replication := fs.String("cassandra-replication", env("CASSANDRA_REPLICATION", "SimpleStrategy:1"), "keyspace replication if it is created (env CASSANDRA_REPLICATION)")
	consistency := fs.String("cassandra-consistency", env("CASSANDRA_CONSISTENCY", "LOCAL_QUORUM"), "consistency of reads and writes (env CASSANDRA_CONSISTENCY)")
	job := fs.String("job", "backfill", "name of the run's progress: the same name resumes where it stopped, another starts again")
	rate := fs.Float64("rate", 500, "messages indexed per second at most (0: unpaced)")
	until := fs.Int("until", 0, "newest day bucket to index, yyyyMMdd (0: today, UTC); messages posted since the indexer ran need none")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	var cons gocql.Consistency
	if err := cons.UnmarshalText([]byte(*consistency)); err != nil {
		fmt.Fprintf(os.Stderr, "consistency %q: %v\n", *consistency, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	db := store.New(store.Config{Hosts: strings.Split(*hosts, ","), Keyspace: *keyspace, Replication: *replication, Consistency: cons})
	defer db.Close()
	if err := db.Connect(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "index-backfill:", err)
		return 1
	}
	progress := func(s store.BackfillStats) {
		fmt.Fprintf(os.Stderr, "index-backfill: %d/%d conversations, %d buckets, %d messages, %.0f messages/s\n",
			s.Done, s.Conversations, s.Buckets, s.Messages, float64(s.Messages)/max(s.Elapsed.Seconds(), 0.001))
	}
	st, err := db.IndexBackfill(ctx, store.Backfill{Job: *job, Rate: *rate, Until: *until, Progress: progress})
	fmt.Printf("index-backfill %s: %d of %d conversations done, %d rooms listed by name, %d day buckets, %d messages indexed in %s\n",
		*job, st.Done, st.Conversations, st.Rooms, st.Buckets, st.Messages, st.Elapsed.Round(1e6))
	if err != nil {
		fmt.Fprintf(os.Stderr, "index-backfill: stopped: %v (run it again with -job %s to resume)\n", err, *job)
		return 1
	}
	return 0
}

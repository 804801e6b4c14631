// This file owns the index-backfill command: it indexes the messages
// stored before the search index existed (or whose index write was lost),
// and lists the rooms created before room_names existed.

package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/killrchat/killrchat/store"
)

// backfill runs `killrchat index-backfill` and returns its exit code.
func backfill(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	sc := cfg.Cassandra.Store()
	db := store.New(sc)
	defer db.Close()
	if err := db.Connect(ctx); err != nil {
		fmt.Fprintln(stderr, "index-backfill:", err)
		return 1
	}
	progress := func(s store.BackfillStats) {
		fmt.Fprintf(stderr, "index-backfill: %d/%d conversations, %d buckets, %d messages, %.0f messages/s\n",
			s.Done, s.Conversations, s.Buckets, s.Messages, float64(s.Messages)/max(s.Elapsed.Seconds(), 0.001))
	}
	b := cfg.Backfill
	st, err := db.IndexBackfill(ctx, store.Backfill{Job: b.Job, Rate: b.Rate, Until: b.Until, Progress: progress})
	fmt.Fprintf(stdout, "index-backfill %s: %d of %d conversations done, %d rooms listed by name, %d day buckets, %d messages indexed in %s\n",
		b.Job, st.Done, st.Conversations, st.Rooms, st.Buckets, st.Messages, st.Elapsed.Round(1e6))
	if err != nil {
		fmt.Fprintf(stderr, "index-backfill: stopped: %v (run it again with --job %s to resume)\n", err, b.Job)
		return 1
	}
	return 0
}

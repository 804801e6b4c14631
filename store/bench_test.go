package store_test

// Benchmarks of the room lightweight transactions and of LWT versus plain
// inserts, on the real Cassandra in this package's test keyspace.
//
// TestMain (main_test.go) sets store.PasswordCost = 4, so the users these
// benchmarks create are cheap; bcrypt is not what is measured here.
//
//	go test -run '^$' -bench . -benchtime 200x ./store/
//	go test -run '^$' -bench InsertPlainVsLWT -benchtime 5000x ./store/

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store/storetest"
)

// BenchmarkCreateRoom times CreateRoom (INSERT ... IF NOT EXISTS, then the
// creator's chat_rooms update) for distinct room names, one at a time.
func BenchmarkCreateRoom(b *testing.B) {
	ctx := context.Background()
	creator := newUser(b, unique("bcreator"))
	lat := make(storetest.Latencies, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := unique("bcroom")
		t0 := time.Now()
		if _, err := db.CreateRoom(ctx, creator.Ref(), chat.NewRoom{Name: name}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.Report(b)
}

// BenchmarkJoinRoom times JoinRoom (UPDATE ... IF EXISTS, the joiner's
// chat_rooms update and a SERIAL read of the room), each on a fresh room
// created outside the timing.
func BenchmarkJoinRoom(b *testing.B) {
	ctx := context.Background()
	creator, joiner := newUser(b, unique("bjcreator")), newUser(b, unique("bjoiner"))
	names := make([]string, b.N)
	for i := range names {
		names[i] = unique("bjroom")
		if _, err := db.CreateRoom(ctx, creator.Ref(), chat.NewRoom{Name: names[i]}); err != nil {
			b.Fatal(err)
		}
	}
	lat := make(storetest.Latencies, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := db.JoinRoom(ctx, joiner.Ref(), names[i]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.Report(b)
}

// BenchmarkDeleteRoom times DeleteRoom (SERIAL read, DELETE ... IF
// creator_login = ? AND participants = ?, then the clean-up batch), each on
// a fresh room with a second participant and one message, prepared outside
// the timing.
func BenchmarkDeleteRoom(b *testing.B) {
	ctx := context.Background()
	creator, other := newUser(b, unique("bdcreator")), newUser(b, unique("bdother"))
	names := make([]string, b.N)
	for i := range names {
		names[i] = unique("bdroom")
		if _, err := db.CreateRoom(ctx, creator.Ref(), chat.NewRoom{Name: names[i]}); err != nil {
			b.Fatal(err)
		}
		joined, err := db.JoinRoom(ctx, other.Ref(), names[i])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.PostMessage(ctx, joined, other.Ref(), "hello"); err != nil {
			b.Fatal(err)
		}
	}
	lat := make(storetest.Latencies, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := db.DeleteRoom(ctx, creator.Login, names[i]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.Report(b)
}

// benchConcurrency is how many goroutines the insert comparison uses.
const benchConcurrency = 16

var benchKVRun atomic.Int64

// BenchmarkInsertPlainVsLWT writes b.N rows with a plain INSERT and b.N rows
// with INSERT ... IF NOT EXISTS into the same throwaway table, on the same
// node, from benchConcurrency goroutines each, and reports both rates and
// their ratio. Keys are distinct, so every LWT applies (a full Paxos round:
// prepare/promise, read, propose/accept, commit).
func BenchmarkInsertPlainVsLWT(b *testing.B) {
	sess, err := db.Session()
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	if err := sess.Query(`CREATE TABLE IF NOT EXISTS bench_kv (k text PRIMARY KEY, v text)`).Exec(); err != nil {
		b.Fatal(err)
	}
	run := benchKVRun.Add(1)
	const (
		plainStmt = `INSERT INTO bench_kv (k, v) VALUES (?, ?)`
		lwtStmt   = `INSERT INTO bench_kv (k, v) VALUES (?, ?) IF NOT EXISTS`
	)
	// do runs n statements from benchConcurrency goroutines and returns the
	// elapsed time and the per-statement latencies.
	do := func(kind string, n int, lwt bool) (time.Duration, storetest.Latencies) {
		var next atomic.Int64
		var mu sync.Mutex
		var all storetest.Latencies
		var failed atomic.Value
		var wg sync.WaitGroup
		t0 := time.Now()
		for g := 0; g < benchConcurrency; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine storetest.Latencies
				for {
					i := next.Add(1)
					if i > int64(n) {
						break
					}
					k := fmt.Sprintf("%s-%d-%d", kind, run, i)
					s := time.Now()
					var err error
					if lwt {
						var applied bool
						applied, err = sess.Query(lwtStmt, k, "v").SerialConsistency(gocql.LocalSerial).ScanCAS()
						if err == nil && !applied {
							err = fmt.Errorf("LWT on fresh key %s did not apply", k)
						}
					} else {
						err = sess.Query(plainStmt, k, "v").Exec()
					}
					if err != nil {
						failed.Store(err)
						break
					}
					mine = append(mine, time.Since(s))
				}
				mu.Lock()
				all = append(all, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatalf("%s: %v", kind, err)
		}
		return time.Since(t0), all
	}
	// Warm up both paths (statement preparation, connections, Paxos state).
	do("warm-plain", 20*benchConcurrency, false)
	do("warm-lwt", 20*benchConcurrency, true)

	b.ResetTimer()
	plainTime, plainLat := do("plain", b.N, false)
	lwtTime, lwtLat := do("lwt", b.N, true)
	b.StopTimer()

	plainRate := float64(b.N) / plainTime.Seconds()
	lwtRate := float64(b.N) / lwtTime.Seconds()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(plainRate, "plain-ops/s")
	b.ReportMetric(lwtRate, "lwt-ops/s")
	b.ReportMetric(plainRate/lwtRate, "plain/lwt")
	b.ReportMetric(ms(plainLat.Percentile(0.5)), "plain-p50-ms")
	b.ReportMetric(ms(plainLat.Percentile(0.99)), "plain-p99-ms")
	b.ReportMetric(ms(lwtLat.Percentile(0.5)), "lwt-p50-ms")
	b.ReportMetric(ms(lwtLat.Percentile(0.99)), "lwt-p99-ms")
}

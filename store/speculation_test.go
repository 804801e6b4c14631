package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
)

// TestSpeculationOnOneNode: on a cluster of one node (the test Cassandra,
// and make run's), a statement slower than the speculative delay is still
// answered. The driver's speculative attempt goes to the next host of the
// query plan; with none, it failed at once with "no hosts available", and
// that answered the statement: every idempotent statement slower than the
// delay (200 ms by default) failed with 503 on a loaded machine. A delay
// of 1 ns makes every statement slower than it.
func TestSpeculationOnOneNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(store.Config{Hosts: storetest.Hosts(), Keyspace: db.Keyspace, Timeout: 30 * time.Second, Speculative: time.Nanosecond})
	defer st.Close()
	if err := storetest.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	u := newUser(t, unique("spec"))
	for i := range 50 {
		if _, err := st.User(ctx, u.Login); err != nil {
			t.Fatalf("read %d of a one-node cluster with a 1 ns speculative delay: %v", i, err)
		}
	}
}

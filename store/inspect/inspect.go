// This file owns the connection: a session on a keyspace, on a cluster
// or on one node alone, at the consistency a tool asks for.

package inspect

import (
	"io"
	"log"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/chat"
)

// Options say how to connect.
type Options struct {
	Keyspace string
	// Timeout bounds each statement (and, with Node, the connection).
	Timeout time.Duration
	// One reads and writes at ONE; otherwise LOCAL_QUORUM, or the
	// driver's default with Default.
	One, Default bool
	// Retries is how many times a failed statement is tried again
	// (0: never).
	Retries int
	// Node talks to the first host alone: no ring discovery, so what it
	// reads is that replica's.
	Node bool
	// Quiet drops the driver's own log (a node it cannot reach while
	// one is down, a dial that failed while polling).
	Quiet bool
}

// DB is a session on a keyspace.
type DB struct{ s *gocql.Session }

// Open connects to hosts as o says.
func Open(hosts []string, o Options) (*DB, error) {
	if o.Quiet {
		gocql.Logger = log.New(io.Discard, "", 0)
	}
	c := gocql.NewCluster(hosts...)
	c.Keyspace = o.Keyspace
	if o.Timeout > 0 {
		c.Timeout = o.Timeout
	}
	switch {
	case o.One:
		c.Consistency = gocql.One
	case !o.Default:
		c.Consistency = gocql.LocalQuorum
	}
	if o.Retries > 0 {
		c.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: o.Retries}
	}
	if o.Node {
		c.HostFilter = gocql.WhiteListHostFilter(hosts[0])
		c.DisableInitialHostLookup = true
	}
	s, err := c.CreateSession()
	if err != nil {
		return nil, err
	}
	return &DB{s: s}, nil
}

// Close ends the session.
func (db *DB) Close() { db.s.Close() }

// notFound maps the driver's "no row" to the domain's.
func notFound(err error) error {
	if err == gocql.ErrNotFound {
		return chat.ErrNotFound
	}
	return err
}

// bind turns the domain's ids among args into the driver's.
func bind(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if id, ok := a.(chat.ID); ok {
			a = gocql.UUID(id)
		}
		out[i] = a
	}
	return out
}

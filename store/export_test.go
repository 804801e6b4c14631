package store

import "github.com/gocql/gocql"

// SetTracer has Cassandra trace every statement s sends from now on (nil:
// none), so a test can read from system_traces the rows a read cost.
func (s *Store) SetTracer(t gocql.Tracer) { s.session.Load().SetTrace(t) }

// This file owns how the driver treats a cluster (issue 23): which node
// coordinates a statement, which statements it may send twice, and when it
// asks a second node without waiting for the first.

package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
)

// driverRetries is how often the driver retries an idempotent statement,
// each time on the next host of the plan.
const driverRetries = 2

// hostPolicy picks a replica of the statement's partition as coordinator
// (token-aware, replicas shuffled so that one partition's load spreads
// over its replicas), falling back to the nodes of the local data centre
// when dc is set, or to every node in turn.
func hostPolicy(dc string) gocql.HostSelectionPolicy {
	fallback := gocql.RoundRobinHostPolicy()
	if dc != "" {
		fallback = gocql.DCAwareRoundRobinPolicy(dc)
	}
	return gocql.TokenAwareHostPolicy(fallback, gocql.ShuffleReplicas())
}

// idempotentRetry retries a failed statement on the next host only if it
// is marked idempotent (a batch: every entry is). gocql's own policies
// retry whatever they are given, Idempotent(false) only turns speculative
// execution off; a conditional statement sent twice could apply on the
// first try and report "not applied" on the second, so a Paxos write must
// never be retried blindly (its unknown outcome is settled by a SERIAL
// read, see lwt.go).
type idempotentRetry struct{ retries int }

func (p idempotentRetry) Attempt(q gocql.RetryableQuery) bool {
	idem, ok := q.(interface{ IsIdempotent() bool })
	return ok && idem.IsIdempotent() && q.Attempts() <= p.retries
}

// GetRetryType retries on another node what another node may answer: a
// timeout, an unavailable or overloaded coordinator, a broken connection.
// A statement the cluster refused (invalid, unauthorised, a bad query)
// would be refused again.
func (p idempotentRetry) GetRetryType(err error) gocql.RetryType {
	var reqErr gocql.RequestError
	if errors.As(err, &reqErr) {
		switch reqErr.Code() {
		case gocql.ErrCodeUnavailable, gocql.ErrCodeReadTimeout, gocql.ErrCodeWriteTimeout,
			gocql.ErrCodeOverloaded, gocql.ErrCodeBootstrapping, gocql.ErrCodeServer,
			gocql.ErrCodeTruncate, gocql.ErrCodeReadFailure, gocql.ErrCodeWriteFailure:
			return gocql.RetryNextHost
		}
		return gocql.Rethrow
	}
	return gocql.RetryNextHost // no answer: a timeout or a lost connection
}

// speculation is the driver's speculative execution for idempotent
// statements: after delay without an answer, the same statement goes to
// the next host too, and the first answer wins. Zero turns it off.
func speculation(delay time.Duration) gocql.SpeculativeExecutionPolicy {
	if delay <= 0 {
		return &gocql.NonSpeculativeExecution{}
	}
	return &gocql.SimpleSpeculativeExecution{NumAttempts: 1, TimeoutDelay: delay}
}

// ParseConsistency is the consistency level named name (ONE, QUORUM,
// LOCAL_QUORUM, ...), as Config.Consistency wants it; an error if no level
// has that name.
func ParseConsistency(name string) (gocql.Consistency, error) {
	var c gocql.Consistency
	if err := c.UnmarshalText([]byte(name)); err != nil {
		return 0, fmt.Errorf("store: consistency %q: %w", name, err)
	}
	return c, nil
}

// ParseSerialConsistency is the serial consistency named name (SERIAL or
// LOCAL_SERIAL), as Config.SerialConsistency wants it; an error if none
// has that name.
func ParseSerialConsistency(name string) (gocql.SerialConsistency, error) {
	var c gocql.SerialConsistency
	if err := c.UnmarshalText([]byte(name)); err != nil {
		return 0, fmt.Errorf("store: serial consistency %q: %w", name, err)
	}
	return c, nil
}

// This file owns how conditional statements (lightweight transactions) run:
// serial consistency set explicitly, no driver retries, and an unknown
// outcome resolved by a SERIAL read instead of a blind retry.

package store

import (
	"context"
	"errors"

	"github.com/gocql/gocql"
)

// lwt runs a conditional statement once. If the outcome is unknown (a
// timeout), resolve is asked, with a SERIAL read, whether the write applied.
// prev receives the current values when the condition failed.
func (s *Store) lwt(ctx context.Context, op, stmt string, values []any, prev map[string]any,
	resolve func(context.Context) (bool, error)) (bool, error) {
	sess, err := s.db()
	if err != nil {
		return false, err
	}
	q := sess.Query(stmt, values...).WithContext(ctx).
		SerialConsistency(s.cfg.SerialConsistency).
		Idempotent(false).
		RetryPolicy(nil)
	return s.settle(ctx, op, prev, resolve, func(prev map[string]any) (bool, error) { return q.MapScanCAS(prev) })
}

// lwtBatch is lwt for a conditional batch: statements on one partition,
// all applied if every condition holds. prev receives the values of the
// first row the conditions read (the header's columns are in each).
func (s *Store) lwtBatch(ctx context.Context, op string, stmts []batchStmt, prev map[string]any,
	resolve func(context.Context) (bool, error)) (bool, error) {
	if len(stmts) == 1 {
		return s.lwt(ctx, op, stmts[0].stmt, stmts[0].values, prev, resolve)
	}
	sess, err := s.db()
	if err != nil {
		return false, err
	}
	b := sess.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	b.SerialConsistency(s.cfg.SerialConsistency)
	b.RetryPolicy(nil)
	for _, st := range stmts {
		b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: st.stmt, Args: st.values})
	}
	return s.settle(ctx, op, prev, resolve, func(prev map[string]any) (bool, error) {
		applied, iter, err := sess.MapExecuteBatchCAS(b, prev)
		if iter != nil {
			iter.Close()
		}
		return applied, err
	})
}

// settle runs cas once and resolves an unknown outcome (see lwt).
func (s *Store) settle(ctx context.Context, op string, prev map[string]any, resolve func(context.Context) (bool, error),
	cas func(map[string]any) (bool, error)) (bool, error) {
	if prev == nil {
		prev = map[string]any{}
	}
	applied, err := cas(prev)
	if err == nil {
		return applied, nil
	}
	if unknownOutcome(err) && resolve != nil {
		// The Paxos round may or may not have committed; only a SERIAL
		// read, which finishes any in-flight round, can tell.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout)
		ok, rerr := resolve(rctx)
		cancel()
		if rerr == nil {
			s.log.Warn("store: LWT outcome was unknown; resolved by SERIAL read", "op", op, "applied", ok, "err", err)
			return ok, nil
		}
		return false, s.fail(op, errors.Join(err, rerr))
	}
	return false, s.fail(op, err)
}

// serialRead runs a read at the serial consistency level, which sees every
// committed LWT and completes any one in progress.
func (s *Store) serialRead(ctx context.Context, stmt string, values ...any) (*gocql.Query, error) {
	q, err := s.query(ctx, stmt, values...)
	if err != nil {
		return nil, err
	}
	return q.Consistency(gocql.Consistency(s.cfg.SerialConsistency)), nil
}

// unknownOutcome tells whether a conditional statement that failed with
// err may have applied: a timeout (Cassandra's or the driver's), a Paxos
// round Cassandra could not finish (CAS write unknown), or a connection
// that closed while the answer was awaited (the chaos command's instance
// of it: a leave answered 503 whose LWT had applied, leaving the room in
// the person's list).
func unknownOutcome(err error) bool {
	var (
		wto *gocql.RequestErrWriteTimeout
		cas *gocql.RequestErrCASWriteUnknown
	)
	return errors.As(err, &wto) || errors.As(err, &cas) || errors.Is(err, gocql.ErrTimeoutNoResponse) ||
		errors.Is(err, gocql.ErrConnectionClosed) || errors.Is(err, context.DeadlineExceeded)
}

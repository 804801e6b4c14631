package store

import (
	"errors"
	"testing"

	"github.com/gocql/gocql"
)

// TestRetryOnlyIdempotent: the driver retries a statement marked
// idempotent (a batch: when every entry is) on the next host, at most
// driverRetries times, and never a conditional one, which gocql's own
// policies would retry (Idempotent(false) only stops speculation there).
func TestRetryOnlyIdempotent(t *testing.T) {
	p := idempotentRetry{driverRetries}
	sess := &gocql.Session{}
	plain := sess.Query(`SELECT login FROM users WHERE login = ?`, "ada").Idempotent(true)
	if !p.Attempt(plain) {
		t.Error("an idempotent read is not retried")
	}
	lwt := sess.Query(`INSERT INTO users (login) VALUES (?) IF NOT EXISTS`, "ada").Idempotent(false)
	if p.Attempt(lwt) {
		t.Error("a conditional statement is retried")
	}
	b := sess.NewBatch(gocql.LoggedBatch)
	b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: `DELETE FROM users WHERE login = ?`, Args: []any{"ada"}, Idempotent: true})
	if !p.Attempt(b) {
		t.Error("a batch of idempotent statements is not retried")
	}
	b.Query(`UPDATE users SET bio = ? WHERE login = ?`, "x", "ada") // not marked
	if p.Attempt(b) {
		t.Error("a batch with an unmarked statement is retried")
	}
	for _, tt := range []struct {
		name string
		err  error
		want gocql.RetryType
	}{
		{"WriteTimeout", &gocql.RequestErrWriteTimeout{}, gocql.RetryNextHost},
		{"Unavailable", &gocql.RequestErrUnavailable{}, gocql.RetryNextHost},
		{"NoAnswer", gocql.ErrTimeoutNoResponse, gocql.RetryNextHost},
		{"Invalid", requestErr(gocql.ErrCodeInvalid), gocql.Rethrow},
		{"Syntax", requestErr(gocql.ErrCodeSyntax), gocql.Rethrow},
	} {
		if got := p.GetRetryType(tt.err); got != tt.want {
			t.Errorf("%s: retry type %v, want %v", tt.name, got, tt.want)
		}
	}
}

type codeErr int

func (c codeErr) Error() string   { return "refused" }
func (c codeErr) Code() int       { return int(c) }
func (c codeErr) Message() string { return "refused" }

func requestErr(code int) error { return errors.Join(codeErr(code)) }

// TestUnknownOutcome: which failures of a conditional statement leave its
// outcome open, to be settled by a SERIAL read.
func TestUnknownOutcome(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"WriteTimeout", &gocql.RequestErrWriteTimeout{}, true},
		{"CASWriteUnknown", &gocql.RequestErrCASWriteUnknown{}, true},
		{"NoAnswer", gocql.ErrTimeoutNoResponse, true},
		{"ConnectionClosed", gocql.ErrConnectionClosed, true},
		{"Unavailable", &gocql.RequestErrUnavailable{}, false}, // refused before any Paxos round
		{"NoConnections", gocql.ErrNoConnections, false},
	} {
		if got := unknownOutcome(tt.err); got != tt.want {
			t.Errorf("%s: unknown outcome %v, want %v", tt.name, got, tt.want)
		}
	}
}

// This file owns cqlping's side: a node answering CQL, and the rows of
// statements run on it.

package inspect

import (
	"errors"
	"fmt"
	"io"
	"log"
	"reflect"
	"strings"
	"time"

	"github.com/gocql/gocql"
)

// Node is how to reach one node.
type Node struct {
	Host string
	// Port is the CQL port (0: 9042).
	Port    int
	Timeout time.Duration
	// User and Password log in; CA connects over TLS, trusting that
	// authority and checking the host name.
	User, Password, CA string
}

// Ping connects to n and runs stmts, printing each one's rows to out, one
// per line, as tab-separated name=value pairs; with no stmts it prints
// the node's release_version.
func Ping(out io.Writer, n Node, stmts []string) error {
	cluster := gocql.NewCluster(n.Host)
	if n.User != "" {
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: n.User, Password: n.Password}
	}
	if n.CA != "" {
		cluster.SslOpts = &gocql.SslOptions{CaPath: n.CA, EnableHostVerification: true}
	}
	if n.Port != 0 {
		cluster.Port = n.Port
	}
	// Protocol v4 is what gocql speaks best and Cassandra 5.0 accepts; fixing
	// it skips the version negotiation round trips.
	cluster.ProtoVersion = 4
	cluster.Timeout = n.Timeout
	cluster.ConnectTimeout = n.Timeout
	cluster.Consistency = gocql.One
	// One node, one connection, one dial per attempt: no ring discovery
	// through system.peers, no backoff that would slow down polling. (gocql
	// counts MaxRetries as attempts: 0 would never dial and leave a nil
	// connection in the pool, which panics.)
	cluster.DisableInitialHostLookup = true
	cluster.NumConns = 1
	cluster.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 1, Interval: 100 * time.Millisecond}
	// gocql logs every failed dial; while polling a starting node that is noise.
	cluster.Logger = log.New(io.Discard, "", 0)

	session, err := cluster.CreateSession()
	if err != nil {
		return err
	}
	defer session.Close()

	if len(stmts) == 0 {
		var version string
		if err := session.Query(`SELECT release_version FROM system.local`).Scan(&version); err != nil {
			return err
		}
		fmt.Fprintln(out, version)
		return nil
	}
	for _, stmt := range stmts {
		if err := printRows(out, session.Query(stmt).Iter()); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

func printRows(out io.Writer, iter *gocql.Iter) error {
	if len(iter.Columns()) == 0 { // DDL and writes return no rows
		return iter.Close()
	}
	rd, err := iter.RowData()
	if err != nil {
		return errors.Join(err, iter.Close())
	}
	for iter.Scan(rd.Values...) {
		fields := make([]string, len(rd.Columns))
		for i, col := range rd.Columns {
			fields[i] = fmt.Sprintf("%s=%v", col, reflect.ValueOf(rd.Values[i]).Elem().Interface())
		}
		fmt.Fprintln(out, strings.Join(fields, "\t"))
	}
	return iter.Close()
}

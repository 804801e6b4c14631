// Command cqlping checks that a Cassandra node really answers CQL, not merely
// that its port is open: it connects with gocql and runs a query (by default
// `SELECT release_version FROM system.local`). scripts/cassandra.sh uses it to
// decide whether a node is ready or can be reused.
//
// Usage:
//
//	cqlping [-host 127.0.0.1] [-port 9042] [-timeout 5s] [-wait 0] [-q]
//	        [-user U -password P] [-ca ca.pem] [-e CQL]...
//
// Exit status 0 when every statement succeeded, 1 otherwise. With -wait it
// retries until the node answers or the duration has passed. Each -e runs one
// statement in order and prints its rows, one per line, as tab-separated
// name=value pairs; without -e it prints the server's release_version.
// -user and -password log in (PasswordAuthenticator); -ca connects over
// TLS, trusting that certificate authority and checking the host name.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"
)

// stmts collects repeated -e flags.
type stmts []string

func (s *stmts) String() string     { return strings.Join(*s, "; ") }
func (s *stmts) Set(v string) error { *s = append(*s, v); return nil }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func main() {
	defPort, err := strconv.Atoi(envOr("CASSANDRA_PORT", "9042"))
	if err != nil {
		defPort = 9042
	}
	host := flag.String("host", envOr("CASSANDRA_HOST", "127.0.0.1"), "node address (env CASSANDRA_HOST)")
	port := flag.Int("port", defPort, "CQL native port (env CASSANDRA_PORT)")
	timeout := flag.Duration("timeout", 5*time.Second, "connect and query timeout for one attempt")
	wait := flag.Duration("wait", 0, "keep retrying until the node answers or this much time has passed")
	quiet := flag.Bool("q", false, "print nothing; only the exit status tells")
	var login access
	flag.StringVar(&login.user, "user", "", "log in as this user")
	flag.StringVar(&login.password, "password", "", "with -user, the password")
	flag.StringVar(&login.ca, "ca", "", "connect over TLS, trusting this CA certificate (PEM)")
	var exec stmts
	flag.Var(&exec, "e", "CQL statement to run (repeatable); default: SELECT release_version FROM system.local")
	flag.Parse()

	out := io.Writer(os.Stdout)
	if *quiet {
		out = io.Discard
	}
	deadline := time.Now().Add(*wait)
	for {
		err := run(out, *host, *port, *timeout, login, exec)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			if !*quiet {
				fmt.Fprintf(os.Stderr, "cqlping: %s:%d: %v\n", *host, *port, err)
			}
			os.Exit(1)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// access is how to log in and whether to use TLS.
type access struct{ user, password, ca string }

func run(out io.Writer, host string, port int, timeout time.Duration, login access, exec []string) error {
	cluster := gocql.NewCluster(host)
	if login.user != "" {
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: login.user, Password: login.password}
	}
	if login.ca != "" {
		cluster.SslOpts = &gocql.SslOptions{CaPath: login.ca, EnableHostVerification: true}
	}
	cluster.Port = port
	// Protocol v4 is what gocql speaks best and Cassandra 5.0 accepts; fixing
	// it skips the version negotiation round trips.
	cluster.ProtoVersion = 4
	cluster.Timeout = timeout
	cluster.ConnectTimeout = timeout
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

	if len(exec) == 0 {
		var version string
		if err := session.Query(`SELECT release_version FROM system.local`).Scan(&version); err != nil {
			return err
		}
		fmt.Fprintln(out, version)
		return nil
	}
	for _, stmt := range exec {
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

// Command cqlping checks that a Cassandra node really answers CQL, not merely
// that its port is open: it connects (through store/inspect) and runs a query (by default
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
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/killrchat/killrchat/store/inspect"
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
	return inspect.Ping(out, inspect.Node{Host: host, Port: port, Timeout: timeout,
		User: login.user, Password: login.password, CA: login.ca}, exec)
}

package cmdtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/cmd"
	"github.com/killrchat/killrchat/cmd/cmdtest"
	"github.com/killrchat/killrchat/schema"
	"github.com/killrchat/killrchat/store/inspect"
	"github.com/killrchat/killrchat/store/storetest"
)

// The node scripts/cassandra.sh start --secure runs: a password
// (PasswordAuthenticator, the default superuser) and TLS from clients,
// with a CA made at its first start.
const (
	secureHost     = "127.0.0.5"
	secureUser     = "cassandra"
	securePassword = "cassandra"
)

// startSecureNode starts the --secure node, unless it runs already, and
// stops it when the test ends if it started it. It returns the CA file
// that signed the node's certificate.
func startSecureNode(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "scripts", "cassandra.sh")
	// A node that runs already (someone works with it) stays; one this
	// test starts stops after it, even if its start fails half-way.
	if exec.Command(script, "status", "--secure").Run() != nil {
		t.Cleanup(func() {
			if out, err := exec.Command(script, "stop", "--secure").CombinedOutput(); err != nil {
				t.Errorf("scripts/cassandra.sh stop --secure: %v\n%s", err, out)
			}
		})
	}
	out, err := exec.Command(script, "start", "--secure").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/cassandra.sh start --secure: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	dir := os.Getenv("CASSANDRA_SECURE_DIR")
	if dir == "" {
		dir = filepath.Join(root, ".cassandra-secure")
	}
	return filepath.Join(dir, "tls", "ca.pem")
}

// execute runs the program as the binary does and returns its exit code,
// stdout and stderr.
func execute(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := cmd.Execute(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestSecureCassandra: against a node that requires a password and TLS,
// the program connects with the right user, password (from a file) and
// CA; a wrong password and a certificate no trusted authority signed are
// each one clear sentence; without leave to create it, a missing
// keyspace says what to create; migrate applies the schema and prints
// it; serve --migrate=false starts on the current schema and refuses, in
// its JSON log, one that lacks a migration.
func TestSecureCassandra(t *testing.T) {
	ca := startSecureNode(t)
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte(securePassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ks := storetest.Keyspace("secure")
	node := []string{"--cassandra-hosts", secureHost, "--cassandra-keyspace", ks, "--cassandra-timeout", "60s"}
	login := append(append([]string{}, node...), "--cassandra-username", secureUser, "--cassandra-password-file", pwFile, "--cassandra-tls-ca", ca)
	t.Cleanup(func() { dropSecureKeyspace(t, ca, ks) })

	refusals := []struct {
		name string
		args []string
		want string
	}{
		{"WrongPassword", append(append([]string{"migrate"}, node...), "--cassandra-username", secureUser, "--cassandra-password", "wrong", "--cassandra-tls-ca", ca),
			"killrchat migrate: store: Cassandra refused the user name or password ("},
		{"NoPassword", append(append([]string{"migrate"}, node...), "--cassandra-tls-ca", ca),
			"killrchat migrate: store: Cassandra refused the user name or password ("},
		// The system's authorities did not sign the node's certificate.
		{"UnverifiedCertificate", append(append([]string{"migrate"}, node...), "--cassandra-username", secureUser, "--cassandra-password", securePassword, "--cassandra-tls"),
			"killrchat migrate: store: the Cassandra node's TLS certificate did not verify ("},
		// Not checking the host name still checks who signed.
		{"UnverifiedCertificateAnyHost", append(append([]string{"migrate"}, node...), "--cassandra-username", secureUser, "--cassandra-password", securePassword,
			"--cassandra-tls", "--cassandra-tls-verify-host=false"),
			"killrchat migrate: store: the Cassandra node's TLS certificate did not verify ("},
		{"MissingKeyspace", append(append([]string{"migrate"}, login...), "--cassandra-create-keyspace=false"),
			"killrchat migrate: schema: keyspace " + ks + " does not exist: create it (CREATE KEYSPACE " + ks + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1})"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := execute(t, tc.args...)
			if code != 1 || stdout != "" || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1 and one line starting %q", code, stdout, stderr, tc.want)
			}
		})
	}

	latest := len(embeddedMigrations(t))
	t.Run("Migrate", func(t *testing.T) {
		code, stdout, stderr := execute(t, append([]string{"migrate"}, login...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		want := "keyspace " + ks + ": schema version " + strconv.Itoa(latest) + " of " + strconv.Itoa(latest) + ", up to date; " + strconv.Itoa(latest) + " migrations applied now, 0 before\n"
		if !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, "001_init.cql") || strings.Count(stdout, "\n") != latest+2 {
			t.Errorf("stdout %q, want it to start %q and list %d migrations", stdout, want, latest)
		}
		code, stdout, stderr = execute(t, append([]string{"migrate"}, login...)...)
		if code != 0 || !strings.Contains(stdout, "up to date; 0 migrations applied now, "+strconv.Itoa(latest)+" before") {
			t.Errorf("again: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})

	key := hex.EncodeToString([]byte(strings.Repeat("k", 32)))
	t.Run("ServeWithoutMigrating", func(t *testing.T) {
		m, _, err := cmdtest.StartReady(testLog(t), append([]string{"--addr", "127.0.0.1:0", "--session-key", key, "--migrate=false"}, login...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})

	t.Run("ServeRefusesAnOlderSchema", func(t *testing.T) {
		forgetMigration(t, ca, ks, latest)
		code, _, stderr := execute(t, append([]string{"--addr", "127.0.0.1:0", "--session-key", key, "--migrate=false", "--log-format", "json"}, login...)...)
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr %s", code, stderr)
		}
		var last map[string]any
		for sc := bufio.NewScanner(strings.NewReader(stderr)); sc.Scan(); {
			last = nil
			if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
				t.Fatalf("a log line that is not JSON: %q (%v)", sc.Text(), err)
			}
		}
		want := "keyspace " + ks + " is at version " + strconv.Itoa(latest-1) + " and this program needs version " + strconv.Itoa(latest)
		got, _ := last["err"].(string)
		if last["level"] != "ERROR" || last["msg"] != "killrchat stopped" || !strings.Contains(got, want) ||
			!strings.HasSuffix(got, ": run killrchat migrate first, or serve with --migrate=true") {
			t.Errorf("last log line %v, want the error saying %q and what to do", last, want)
		}
	})
}

func embeddedMigrations(t *testing.T) []schema.Migration {
	t.Helper()
	ms, err := schema.Load(schema.Files)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// secureRun runs stmt on the secure node as its superuser.
func secureRun(ca, stmt string) error {
	return inspect.Ping(io.Discard, inspect.Node{Host: secureHost, Timeout: time.Minute,
		User: secureUser, Password: securePassword, CA: ca}, []string{stmt})
}

// forgetMigration makes ks's schema look one migration older: the
// version's record goes (its tables stay, as before an upgrade that
// brings them).
func forgetMigration(t *testing.T, ca, ks string, version int) {
	t.Helper()
	if err := secureRun(ca, fmt.Sprintf("DELETE FROM %s.schema_migrations WHERE version = %d", ks, version)); err != nil {
		t.Fatal(err)
	}
}

func dropSecureKeyspace(t *testing.T, ca, ks string) {
	if err := secureRun(ca, "DROP KEYSPACE IF EXISTS "+ks); err != nil {
		t.Errorf("drop %s: %v", ks, err)
	}
}

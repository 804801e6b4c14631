package cmdtest_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/cmd"
)

// unitDir holds the shipped systemd unit and its environment file.
var unitDir = filepath.Join("..", "..", "scripts", "systemd")

// TestSystemdUnit: systemd-analyze verify finds nothing to say about
// scripts/systemd/killrchat.service, as installed under a root of its
// own (the system's units, and an executable where ExecStart looks).
func TestSystemdUnit(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is needed to check scripts/systemd/killrchat.service: scripts/test-deps.sh installs it (Debian package systemd)")
	}
	unit, err := os.ReadFile(filepath.Join(unitDir, "killrchat.service"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, dir := range []string{"usr/local/bin", "etc/systemd/system", "usr/lib/systemd"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The units it depends on (network-online.target, the default
	// dependencies) are the system's.
	if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Fatalf("copy the system's units: %v\n%s", err, out)
	}
	// verify checks that ExecStart names an executable.
	if err := os.WriteFile(filepath.Join(root, "usr/local/bin/killrchat"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "etc/systemd/system/killrchat.service")
	if err := os.WriteFile(path, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--root="+root, path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestSystemdEnvironment: every variable of scripts/systemd/killrchat.env
// and of the unit's Environment= lines is a setting of serve, and the
// program accepts their values, with the password file the unit gives.
func TestSystemdEnvironment(t *testing.T) {
	vars := map[string]string{}
	read := func(name, prefix string) {
		f, err := os.Open(filepath.Join(unitDir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for sc := bufio.NewScanner(f); sc.Scan(); {
			line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), prefix)
			if !ok || line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Errorf("%s: %q is not NAME=value", name, line)
				continue
			}
			vars[k] = v
		}
	}
	read("killrchat.env", "")
	read("killrchat.service", "Environment=")
	usage := cmd.Usage(cmd.Serve)
	for k := range vars {
		if !strings.Contains(usage, "(env "+k+")") {
			t.Errorf("%s is not a setting of killrchat serve", k)
		}
	}
	// %d is the unit's credentials directory.
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "cassandra-password"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars["CASSANDRA_PASSWORD_FILE"] = strings.ReplaceAll(vars["CASSANDRA_PASSWORD_FILE"], "%d", creds)
	c, err := cmd.Parse(nil, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if c.Cassandra.Store().Password != "s3cret" || c.Cassandra.TLS == nil || c.Serve.Migrate || c.LogFormat != "json" {
		t.Errorf("parsed %+v", c)
	}
}

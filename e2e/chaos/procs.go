package main

// The processes a chaos run holds: the three Cassandra nodes of
// scripts/cassandra.sh --nodes 3, a NATS broker, and two app instances;
// and the faults done to them.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// repoRoot is the directory holding go.mod, found upwards from here.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// cluster is the local three-node cluster.
type cluster struct {
	root, dir string
	hosts     []string
}

func newCluster(root string) *cluster {
	dir := os.Getenv("CASSANDRA_CLUSTER_DIR")
	if dir == "" {
		dir = filepath.Join(root, ".cassandra-cluster")
	}
	return &cluster{root: root, dir: dir, hosts: []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}}
}

// script runs scripts/cassandra.sh with args, its output going to the log.
func (c *cluster) script(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.root, "scripts", "cassandra.sh"), args...)
	cmd.Env = append(os.Environ(), "CASSANDRA_CLUSTER_DIR="+c.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cassandra.sh %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// running reports whether every node answers already.
func (c *cluster) running(ctx context.Context) bool {
	return c.script(ctx, "status", "--nodes", "3") == nil
}

func (c *cluster) pid(node int) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("node%d", node), "cassandra.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func (c *cluster) signal(node int, sig syscall.Signal) error {
	pid, err := c.pid(node)
	if err != nil {
		return err
	}
	return syscall.Kill(pid, sig)
}

// kill is kill -9 of a node; start brings it back on its data.
func (c *cluster) kill(node int) error { return c.signal(node, syscall.SIGKILL) }

func (c *cluster) start(ctx context.Context, node int) error {
	return c.script(ctx, "start", "--node", strconv.Itoa(node))
}

func (c *cluster) stop(ctx context.Context, node int) error {
	return c.script(ctx, "stop", "--node", strconv.Itoa(node))
}

func (c *cluster) nodetool(ctx context.Context, node int, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.root, "scripts", "cassandra.sh"),
		append([]string{"nodetool", "--node", strconv.Itoa(node)}, args...)...)
	cmd.Env = append(os.Environ(), "CASSANDRA_CLUSTER_DIR="+c.dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// broker is a NATS server in a child process of this command (so that a
// restart is a process's death, as in production).
type broker struct {
	addr string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

func startBroker() (*broker, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	b := &broker{addr: addr}
	return b, b.start()
}

func (b *broker) start() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), brokerEnv+"="+b.addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	b.cmd = cmd
	go func() { _ = cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", b.addr); err == nil {
			c.Close()
			return nil
		}
	}
	return fmt.Errorf("nats broker on %s did not start", b.addr)
}

// kill ends the broker at once.
func (b *broker) kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd != nil && b.cmd.Process != nil {
		_ = b.cmd.Process.Kill()
		b.cmd = nil
	}
}

func (b *broker) url() string { return "nats://" + b.addr }

// brokerEnv, set to an address, makes this program (or its test binary)
// the broker's process.
const brokerEnv = "CHAOS_SERVE_BROKER"

// serveBroker is the broker's child process: a NATS server until killed.
func serveBroker(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	p, _ := strconv.Atoi(port)
	ns, err := natsserver.NewServer(&natsserver.Options{Host: host, Port: p, NoSigs: true, NoLog: true})
	if err != nil {
		return err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return fmt.Errorf("nats did not start")
	}
	select {}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// instance is one app process.
type instance struct {
	name, url, addr string
	args            []string
	env             []string
	logPath         string
	mu              sync.Mutex
	cmd             *exec.Cmd
	exited          chan struct{} // closed when cmd has exited
}

// buildApp builds the app into tmp and returns the binary's path.
func buildApp(ctx context.Context, root, tmp string) (string, error) {
	bin := filepath.Join(tmp, "killrchat")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
}

// apps describes the two instances of the app bin on the cluster.
func apps(bin, tmp, keyspace, natsURL string, hosts []string) ([]*instance, error) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	var out []*instance
	for _, name := range []string{"A", "B"} {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		out = append(out, &instance{
			name: name, url: "http://" + addr, addr: addr,
			logPath: filepath.Join(tmp, "app-"+name+".log"),
			args: []string{bin, "--addr", addr, "--nats-url", natsURL,
				// The load is many people behind one address.
				"--auth-rate", "100000", "--message-rate", "1000", "--message-burst", "1000",
				"--rooms-per-hour", "100000", "--join-rate", "1000", "--join-burst", "1000",
				"--max-streams-per-ip", "100000", "--max-streams-per-user", "1000"},
			env: append(os.Environ(), "SESSION_KEY="+hex.EncodeToString(key),
				"CASSANDRA_HOSTS="+strings.Join(hosts, ","), "CASSANDRA_KEYSPACE="+keyspace,
				"CASSANDRA_REPLICATION=NetworkTopologyStrategy:dc1=3", "CASSANDRA_DC=dc1",
				"METRICS_ADDR="),
		})
	}
	return out, nil
}

// start runs the instance and waits until /readyz answers 200.
func (in *instance) start(ctx context.Context, wait time.Duration) error {
	logf, err := os.OpenFile(in.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(in.args[0], in.args[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = in.env, logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	in.mu.Lock()
	in.cmd, in.exited = cmd, exited
	in.mu.Unlock()
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		resp, err := http.Get(in.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("instance %s not ready within %v (log %s)", in.name, wait, in.logPath)
}

// kill is kill -9 of the instance.
func (in *instance) kill() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd != nil && in.cmd.Process != nil {
		_ = in.cmd.Process.Kill()
		in.cmd = nil
	}
}

// stop ends the instance gracefully.
func (in *instance) stop() {
	in.mu.Lock()
	cmd, exited := in.cmd, in.exited
	in.cmd = nil
	in.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
	}
}

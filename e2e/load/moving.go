package main

// moving: the rate of killrchat import slack over a generated export of
// many messages, against the store's own post rate (PostMessage: the
// message and the head, -c posters at once);
// then the rate of killrchat export of the imported site, and the peak
// RSS of each command (the real binary, in a child process).

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/service/moving/slacktest"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
)

func runMoving(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("moving", flag.ExitOnError)
	messages := fs.Int("messages", 1_000_000, "messages in the generated Slack export")
	users := fs.Int("users", 50, "people in it")
	channels := fs.Int("channels", 20, "channels in it")
	days := fs.Int("days", 30, "days its messages span")
	postD := fs.Duration("post-d", 20*time.Second, "how long the store's own post rate is measured")
	conc := fs.Int("c", 32, "posters at once for the store's post rate (the import writes eight conversations at once, a few batches each)")
	bin := fs.String("bin", "", "the killrchat binary (default: built from the module's root)")
	_ = fs.Parse(args)

	dir, err := os.MkdirTemp("", "killrchat-moving")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if *bin == "" {
		*bin = filepath.Join(dir, "killrchat")
		build := exec.CommandContext(ctx, "go", "build", "-o", *bin, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build (run from the module's root, or give -bin): %w", err)
		}
	}
	ks := storetest.Keyspace("moving")
	// Dropped at the end, to free the shared node: a loaded node can
	// time the drop of a large keyspace out (it goes on server-side; the
	// next try finds it gone), so it is tried again, and said if it fails.
	defer func() {
		var err error
		for range 3 {
			if err = storetest.DropKeyspace(ks); err == nil {
				return
			}
		}
		fmt.Fprintf(os.Stderr, "keyspace %s not dropped: %v (DROP KEYSPACE %s)\n", ks, err, ks)
	}()
	zipPath := filepath.Join(dir, "slack.zip")
	f, err := os.Create(zipPath)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := slacktest.Generate(f, *users, *channels, *messages, *days); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	st, _ := os.Stat(zipPath)
	fmt.Printf("generated a Slack export of %d messages (%d people, %d channels, %d days): %.1f MiB zipped, in %s\n",
		*messages, *users, *channels, *days, float64(st.Size())/(1<<20), time.Since(start).Round(time.Millisecond))

	flags := []string{"--cassandra-hosts", strings.Join(storetest.Hosts(), ","), "--cassandra-keyspace", ks, "--cassandra-timeout", "30s"}
	// The schema first, so that the commands' times are their work; a
	// loaded node can time out a step, and every step is safe to run
	// again.
	for try := 1; ; try++ {
		_, _, err := runCommand(ctx, *bin, append([]string{"migrate"}, flags...)...)
		if err == nil {
			break
		}
		if try == 5 || ctx.Err() != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "migrate failed; trying again:", err)
	}
	took, rss, err := runCommand(ctx, *bin, append([]string{"import", "slack", zipPath}, flags...)...)
	if err != nil {
		return err
	}
	fmt.Printf("import slack (the process, connecting included): %d messages in %s: %.0f messages/s; peak RSS %.0f MiB\n",
		*messages, took.Round(time.Millisecond), float64(*messages)/took.Seconds(), float64(rss)/(1<<20))

	out := filepath.Join(dir, "site.jsonl")
	took, rss, err = runCommand(ctx, *bin, append([]string{"export", "--out", out}, flags...)...)
	if err != nil {
		return err
	}
	size := int64(0)
	if st, err := os.Stat(out); err == nil {
		size = st.Size()
	}
	fmt.Printf("export (the process, connecting included): %d messages (%.1f MiB of lines) in %s: %.0f messages/s; peak RSS %.0f MiB\n",
		*messages, float64(size)/(1<<20), took.Round(time.Millisecond), float64(*messages)/took.Seconds(), float64(rss)/(1<<20))

	n, took, err := storePostRate(ctx, ks, *conc, *postD)
	if err != nil {
		return err
	}
	fmt.Printf("store post rate (PostMessage, %d at once): %d messages in %s: %.0f messages/s\n",
		*conc, n, took.Round(time.Millisecond), float64(n)/took.Seconds())
	return nil
}

// runCommand runs the binary and returns how long it took and its peak
// RSS in bytes.
func runCommand(ctx context.Context, bin string, args ...string) (time.Duration, int64, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("killrchat %s: %w", args[0], err)
	}
	took := time.Since(start)
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return took, rss, nil
}

// storePostRate posts from conc goroutines for d with store.PostMessage
// into a room of its own, and returns how many it posted.
func storePostRate(ctx context.Context, ks string, conc int, d time.Duration) (int64, time.Duration, error) {
	db := store.New(store.Config{Hosts: storetest.Hosts(), Keyspace: ks, Timeout: 30 * time.Second})
	if err := storetest.Connect(ctx, db); err != nil {
		return 0, 0, err
	}
	defer db.Close()
	u, err := db.CreateUser(ctx, chat.SignUp{Login: "poster", Password: "password1", PasswordConfirm: "password1", Firstname: "Post", Lastname: "Er"})
	if err != nil {
		return 0, 0, err
	}
	r, err := db.CreateRoom(ctx, u.Ref(), chat.NewRoom{Name: "postrate"})
	if err != nil {
		return 0, 0, err
	}
	var n atomic.Int64
	var first error
	var once sync.Once
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				if _, err := db.PostMessage(ctx, r, u.Ref(), fmt.Sprintf("message %d: words to index, like apple banana cherry", i)); err != nil {
					once.Do(func() { first = err })
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return n.Load(), time.Since(start), first
}

// This file owns the export and import commands: `killrchat export`
// (the site, or --room, as JSON lines, with the files in a tar beside
// them) and `killrchat import killrchat|slack <file>`, on the
// configuration every command shares.

package cmd

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/service/moving"
	"github.com/killrchat/killrchat/store"
)

// The import command's sources.
const (
	FromKillrChat = "killrchat"
	FromSlack     = "slack"
)

// ExportConfig is what `export` needs besides Cassandra.
type ExportConfig struct {
	// Out is the file of lines ("-": standard output); Files the tar of
	// the files ("" beside Out: its name with .tar; "-" with Out: none).
	Out, Files string
	Room       string
	Full       bool
}

// ImportConfig is what `import` needs besides Cassandra.
type ImportConfig struct {
	// From is FromKillrChat or FromSlack; Path the export's file.
	From, Path string
	// Files is a KillrChat export's tar ("" beside Path, when there is
	// one).
	Files string
	// Work is where a Slack import keeps its progress and its zip's
	// checks ("" beside Path).
	Work string
}

// take reads the source and the path that come before the flags.
func (c *ImportConfig) take(args []string) []string { return positional(args, &c.From, &c.Path) }

func (c *Config) exportSettings() []*setting {
	e := &c.Export
	return []*setting{
		{name: "out", def: "-", usage: "the file the lines are written to; -: standard output", set: text(&e.Out)},
		{name: "files", def: "", usage: "the tar the files are written to; empty: beside --out, with .tar for its extension (none when --out is -)", set: text(&e.Files)},
		{name: "room", def: "", usage: "export this room alone, with its members' accounts; empty: the whole site", set: text(&e.Room)},
		{name: "full-backup", def: "false", boolean: true,
			usage:   "also export people's password hashes, to restore this site from; never for an export handed to someone",
			accepts: "true or false", set: boolean(&e.Full)},
	}
}

func (c *Config) importSettings() []*setting {
	i := &c.Import
	return []*setting{
		{name: "files", def: "", usage: "killrchat: the export's tar of files; empty: the one beside the export, if any", set: text(&i.Files)},
		{name: "work", def: "", usage: "slack: the folder of the import's progress; empty: beside the zip", set: text(&i.Work)},
	}
}

func (c *Config) checkImport(map[string]source) error {
	switch c.Import.From {
	case FromKillrChat, FromSlack:
	default:
		return fmt.Errorf("import needs a source: killrchat import %s|%s <file>", FromKillrChat, FromSlack)
	}
	if c.Import.Path == "" {
		return fmt.Errorf("import %s needs the export's file: killrchat import %s <file>", c.Import.From, c.Import.From)
	}
	return nil
}

// beside is path with its extension replaced by ext.
func beside(path, ext string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ext
}

// connectPatiently connects to Cassandra, applying the schema to a new
// keyspace: a node that does not answer fails at once, one that is slow
// (a loaded node applies a schema one statement at a time) is given five
// tries, as each step of the schema is safe to run again.
func connectPatiently(ctx context.Context, cfg Config, stderr io.Writer) (*store.Store, error) {
	sc := cfg.Cassandra.Store()
	sc.Log = cfg.Logger(stderr)
	db := store.New(sc)
	for try := 1; ; try++ {
		err := db.Connect(ctx)
		if err == nil {
			return db, nil
		}
		if try == 5 || store.Permanent(err) || !errors.Is(err, chat.ErrUnavailable) || ctx.Err() != nil {
			db.Close()
			return nil, err
		}
		sc.Log.Warn("cassandra is slow to answer; trying again", "err", err)
	}
}

// export runs `killrchat export` and returns its exit code.
func export(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	db, err := connectPatiently(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "export:", advise(err))
		return 1
	}
	defer db.Close()
	start := time.Now()
	n, err := runExport(ctx, db, cfg.Export, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "export: stopped:", err)
		return 1
	}
	took := time.Since(start)
	fmt.Fprintf(stderr, "export: %d people, %d rooms, %d DMs, %d messages, %d reactions, %d files in %s (%.0f messages/s)\n",
		n.People, n.Rooms, n.DMs, n.Messages, n.Reactions, n.Files, took.Round(time.Millisecond), float64(n.Messages)/max(took.Seconds(), 0.001))
	return 0
}

func runExport(ctx context.Context, db *store.Store, e ExportConfig, stdout, stderr io.Writer) (moving.Counts, error) {
	opts := moving.ExportOptions{Room: e.Room, Full: e.Full}
	out := stdout
	if e.Out != "-" {
		f, err := os.Create(e.Out)
		if err != nil {
			return moving.Counts{}, err
		}
		defer f.Close()
		out = f
		if e.Files == "" {
			e.Files = beside(e.Out, ".tar")
		}
	}
	if e.Files != "" && e.Files != "-" {
		f, err := os.Create(e.Files)
		if err != nil {
			return moving.Counts{}, err
		}
		defer f.Close()
		opts.Files = f
	}
	p := newProgress(stderr, "export", 0)
	opts.Progress = p.counts
	n, err := moving.Export(ctx, db, out, opts)
	p.done()
	if err != nil {
		return n, err
	}
	if f, ok := out.(*os.File); ok && f != os.Stdout {
		if err := f.Sync(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// importer runs `killrchat import` and returns its exit code.
func importer(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	db, err := connectPatiently(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "import:", advise(err))
		return 1
	}
	defer db.Close()
	switch cfg.Import.From {
	case FromKillrChat:
		err = importKillrChat(ctx, db, cfg.Import, stdout, stderr)
	case FromSlack:
		err = importSlack(ctx, db, cfg.Import, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "import %s: stopped: %v (run the same command again to complete it)\n", cfg.Import.From, err)
		return 1
	}
	return 0
}

func importKillrChat(ctx context.Context, db *store.Store, c ImportConfig, stdout, stderr io.Writer) error {
	f, err := os.Open(c.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	opts := moving.RestoreOptions{}
	files := c.Files
	if files == "" {
		if _, err := os.Stat(beside(c.Path, ".tar")); err == nil {
			files = beside(c.Path, ".tar")
		}
	}
	if files != "" {
		tf, err := os.Open(files)
		if err != nil {
			return err
		}
		defer tf.Close()
		opts.Files = tf
	}
	p := newProgress(stderr, "import", 0)
	opts.Progress = p.counts
	n, err := moving.Restore(ctx, db, f, opts)
	p.done()
	fmt.Fprintf(stdout, "import killrchat: %d people, %d rooms, %d DMs, %d messages, %d reactions, %d files\n",
		n.People, n.Rooms, n.DMs, n.Messages, n.Reactions, n.Files)
	return err
}

func importSlack(ctx context.Context, db *store.Store, c ImportConfig, stdout, stderr io.Writer) error {
	zr, err := zip.OpenReader(c.Path)
	if err != nil {
		return fmt.Errorf("%s is not a zip we can read: %w", c.Path, err)
	}
	defer zr.Close()
	st, err := os.Stat(c.Path)
	if err != nil {
		return err
	}
	work := c.Work
	if work == "" {
		work = filepath.Dir(c.Path)
	}
	// The journal is the zip's: another zip (or the same name with
	// another size or time) starts afresh.
	name := fmt.Sprintf("%s.%d.%d.imported", filepath.Base(c.Path), st.Size(), st.ModTime().Unix())
	j, err := openJournal(filepath.Join(work, name))
	if err != nil {
		return err
	}
	defer j.Close()
	p := newProgress(stderr, "import slack", 0)
	start := time.Now()
	rep, err := moving.ImportSlack(ctx, db, &zr.Reader, moving.SlackOptions{Journal: j, Progress: p.step})
	p.done()
	writeSlackReport(stdout, rep, time.Since(start))
	return err
}

// writeSlackReport is the summary at the end of a Slack import.
func writeSlackReport(w io.Writer, r moving.SlackReport, took time.Duration) {
	fmt.Fprintf(w, "import slack: %d people (%d bots), %d rooms, %d DMs, %d messages, %d reactions in %s (%.0f messages/s)\n",
		r.People, r.Bots, r.Rooms, r.DMs, r.Messages, r.Reactions, took.Round(time.Millisecond), float64(r.Messages)/max(took.Seconds(), 0.001))
	for _, rn := range r.Renames {
		fmt.Fprintf(w, "renamed %s: %q is %q here (%s)\n", rn.What, rn.From, rn.To, rn.Why)
	}
	reasons := make([]string, 0, len(r.Skipped))
	for why := range r.Skipped {
		reasons = append(reasons, why)
	}
	sort.Strings(reasons)
	for _, why := range reasons {
		fmt.Fprintf(w, "skipped %d: %s\n", r.Skipped[why], why)
	}
	if r.People > 0 {
		fmt.Fprintln(w, "the imported people cannot log in until an administrator hands each a reset link (the administration page)")
	}
}

// journal is the days a Slack import has written, one a line in a file
// beside the zip, so that a run after a kill skips them.
type journal struct {
	mu   sync.Mutex
	f    *os.File
	done map[string]bool
}

func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the import's journal: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, 256<<20))
	if err != nil {
		f.Close()
		return nil, err
	}
	j := &journal{f: f, done: map[string]bool{}}
	for _, l := range strings.Split(string(b), "\n") {
		// A line cut by a kill has no end: it is not done.
		if key, ok := strings.CutSuffix(l, "\t."); ok {
			j.done[key] = true
		}
	}
	return j, nil
}

func (j *journal) Done(key string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.done[key]
}

func (j *journal) Mark(key string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.done[key] = true
	_, err := j.f.WriteString(key + "\t.\n")
	return err
}

func (j *journal) Close() error { return j.f.Close() }

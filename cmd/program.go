package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
)

// Version is the release, set when building:
// go build -ldflags "-X github.com/killrchat/killrchat/cmd.Version=1.2.3".
var Version = "dev"

// VersionText is what --version prints: the version, and the commit the
// binary was built from when the build recorded it.
func VersionText() string {
	commit, modified := "", false
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	switch {
	case commit == "":
		return "killrchat " + Version + " (commit unknown)"
	case modified:
		return "killrchat " + Version + " (commit " + commit + ", modified)"
	}
	return "killrchat " + Version + " (commit " + commit + ")"
}

// commands run the commands other than serve, by name, and return their
// exit code.
var commands = map[string]func(ctx context.Context, cfg Config, stdout, stderr io.Writer) int{
	Migrate:       migrate,
	IndexBackfill: backfill,
	Admin:         administer,
	Export:        export,
	Import:        importer,
}

// Logger is the program's log on w, at the configured level and format.
func (c Config) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Execute runs the program with args (without the program's name) until
// ctx ends or the command does, and returns its exit code: 0, 1 when the
// command failed, 2 when the configuration is not accepted (one sentence
// on stderr).
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := Parse(args, os.LookupEnv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, Usage(cfg.Command))
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "killrchat: %s.\n", err)
		return 2
	case cfg.ShowVersion:
		fmt.Fprintln(stdout, VersionText())
		return 0
	}
	log := cfg.Logger(stderr)
	slog.SetDefault(log)
	if run, ok := commands[cfg.Command]; ok {
		return run(ctx, cfg, stdout, stderr)
	}
	m := NewMain(cfg)
	m.Log = log
	defer m.Close()
	if err := m.Run(ctx); err != nil {
		log.Error("killrchat stopped", "err", err)
		return 1
	}
	select {
	case err := <-m.Err():
		log.Error("killrchat stopped", "err", advise(err))
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down")
	if err := m.Close(); err != nil {
		log.Error("killrchat stopped", "err", err)
		return 1
	}
	return 0
}

// Usage is command's help: its settings, their environment variables
// and defaults.
func Usage(command string) string {
	c := Config{Command: command}
	settings, _ := c.settings()
	if settings == nil {
		c.Command = Serve
		settings, _ = c.settings()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: killrchat [%s] [settings]\n\n", strings.Join(Commands, "|"))
	fmt.Fprintf(&b, "Settings of %s (a flag, else its environment variable, else the default):\n", c.Command)
	for _, s := range settings {
		fmt.Fprintf(&b, "  --%s", s.name)
		if s.env != "" {
			fmt.Fprintf(&b, " (env %s)", s.env)
		}
		if def := s.docDefault(); def != "" {
			fmt.Fprintf(&b, " [default %s]", def)
		}
		fmt.Fprintf(&b, "\n      %s\n", s.usage)
	}
	b.WriteString("  --version\n      print the version and commit, and exit\n")
	return b.String()
}

// docDefault is the default as help and documents show it.
func (s *setting) docDefault() string {
	if s.docDef != "" {
		return s.docDef
	}
	return s.def
}

// Document is docs/configuration.md: every setting of every command, as
// Parse reads them (a test keeps the file equal to it).
func Document() string {
	var b strings.Builder
	b.WriteString(`# Configuration

<!-- Generated from package cmd's settings: edit cmd/config.go, then run
go test ./cmd -run TestConfigurationDocument -update -->

KillrChat is one binary with several commands: ` + "`killrchat [serve]`" + ` (the
default) runs the server, ` + "`killrchat migrate`" + ` applies the schema to the
keyspace and prints which migrations are applied, and
` + "`killrchat index-backfill`" + ` indexes the messages stored before the search
index existed, ` + "`killrchat admin`" + ` makes and unmakes administrators,
` + "`killrchat export`" + ` writes the site (or a room) as JSON lines with its files
in a tar beside them, and ` + "`killrchat import killrchat|slack <file>`" + ` brings
an export, or a Slack workspace export, in (see operations.md). All read
the same Cassandra and log settings.

Each setting is read from its flag, else from its environment variable
when that is set and not empty, else its default. A value that is not
accepted stops the program at start, with exit status 2 and one
sentence naming the setting and what it accepts. ` + "`--help`" + ` lists the
settings of a command (` + "`killrchat index-backfill --help`" + `), and
` + "`--version`" + ` prints the version and the commit the binary was built from
(the version is set with ` + "`-ldflags \"-X github.com/killrchat/killrchat/cmd.Version=1.2.3\"`" + `).
Flags that take true or false may be given alone (` + "`--push-off`" + `).
`)
	for _, command := range Commands {
		c := Config{Command: command}
		settings, _ := c.settings()
		fmt.Fprintf(&b, "\n## %s\n\n", command)
		b.WriteString("| Flag | Environment | Default | Meaning |\n|---|---|---|---|\n")
		for _, s := range settings {
			env, def := "", ""
			if s.env != "" {
				env = "`" + s.env + "`"
			}
			if d := s.docDefault(); d != "" {
				def = "`" + d + "`"
			}
			fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", s.name, env, def, strings.ReplaceAll(s.usage, "|", `\|`))
		}
		b.WriteString("| `--version` |  |  | print the version and commit, and exit |\n")
	}
	return b.String()
}

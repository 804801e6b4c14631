package main

// A short run of every load command, so that one its set-up no longer
// fits (a renamed route, a changed store rule) fails `make test` instead
// of the next person who needs its figure. Each runs as the command does,
// in a child process of this test binary, with tiny parameters; only its
// exit status is checked: the figures of a few seconds on a shared
// machine mean nothing. The commands that can drive a running server
// share one app instance started here (-url, -keyspace), so that the
// whole costs two keyspaces' migrations, not one per command (conns
// floods the real binary, on a keyspace of its own).

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// asCommand is set in the environment of the children this test starts:
// the test binary then is the load command (and its own -child and worker
// processes, which inherit it).
const asCommand = "KILLRCHAT_LOAD_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(asCommand) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// smokeRuns are the tiny forms of the commands; every subcommand usage()
// lists has one (TestSmokeCoversEveryCommand).
var smokeRuns = map[string][]string{
	"post":        {"-users", "2", "-c", "2", "-d", "1s", "-warmup", "200ms"},
	"sse":         {"-subs", "4", "-users", "2", "-rate", "5", "-d", "1s", "-idle", "200ms", "-settle", "1s", "-floorsize", "200"},
	"floor":       {"-subs", "20", "-rate", "5", "-d", "1s", "-size", "100", "-readers", "1"},
	"correctness": {"-posters", "2", "-messages", "20", "-rate", "20", "-subs", "4", "-start-spread", "200ms", "-examples", "3", "-limit", "1m"},
	"replay":      {"-messages", "20", "-from", "5", "-conns", "4", "-rounds", "1", "-background", "1"},
	"flood":       {"-attackers", "2", "-d", "1s"},
	// Over 50 messages: the seeding through the store runs too.
	"roompage":  {"-n", "5", "-rooms", "2", "-dms", "1", "-messages", "60", "-c", "2", "-d", "1s"},
	"conns":     {"-conns", "40", "-workers", "1", "-rate", "400", "-hold", "1s", "-probe-every", "200ms"},
	"replaymem": {"-messages", "40", "-size", "200", "-conns", "4", "-hold", "1s", "-settle", "500ms"},
	"upload":    {"-clients", "2", "-downloads", "2", "-size", "100000"},
	"search": {"-messages", "400", "-convs", "4", "-member", "3", "-days", "2", "-vocab", "100", "-searches", "5",
		"-index-d", "1s", "-post-d", "1s", "-post-runs", "1"},
	"hostile": {"-ranges", "10", "-bombs", "1", "-side", "600"},
	"bigroom": {"-members", "20", "-small", "3", "-n", "5", "-joiners", "2"},
	// Against a fake original served by this test (fakeOriginal): the
	// smoke run checks the command's set-up and both sides' requests,
	// not the real original, which make test does not build.
	"versus": {"-users", "2", "-c", "2", "-d", "500ms", "-runs", "1", "-messages", "3"},
	"bots":   {"-users", "2", "-c", "2", "-d", "500ms", "-warmup", "200ms", "-runs", "1", "-mentions", "5", "-rate", "10", "-wait", "1m"},
	// Its own app, with email on, sending to its own SMTP server.
	"maildown": {"-posters", "2", "-away", "3", "-rate", "5", "-page-rate", "5", "-c", "2", "-runs", "1",
		"-up", "1s", "-down", "2s", "-delay", "500ms", "-wait", "1m", "-settle", "1s"},
	"moving": {"-messages", "200", "-users", "3", "-channels", "2", "-days", "2", "-post-d", "1s", "-c", "2"},
}

func TestSmokeCoversEveryCommand(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, list, _ := strings.Cut(string(src), "usage: go run ./e2e/load <")
	list, _, _ = strings.Cut(list, ">")
	for _, name := range strings.Split(list, "|") {
		if _, ok := smokeRuns[name]; !ok {
			t.Errorf("load command %q has no smoke run in smokeRuns", name)
		}
	}
	if len(smokeRuns) != len(strings.Split(list, "|")) {
		t.Errorf("smokeRuns has %d commands, usage lists %d", len(smokeRuns), len(strings.Split(list, "|")))
	}
}

// TestSmoke runs every load command once, briefly, against the local
// Cassandra.
func TestSmoke(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// conns floods the real binary: build it once.
	bin := filepath.Join(t.TempDir(), "killrchat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/killrchat/killrchat").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	app, err := startApp(false)
	if err != nil {
		t.Fatal(err)
	}
	defer app.stop()
	for name, args := range smokeRuns {
		t.Run(name, func(t *testing.T) {
			switch name {
			case "conns", "moving":
				args = append(args, "-bin", bin)
			case "floor", "maildown":
			case "versus":
				orig := httptest.NewServer(fakeOriginal())
				defer orig.Close()
				args = append(args, "-url", app.url, "-keyspace", app.keyspace, "-orig", orig.URL+"/killrchat")
			default:
				args = append(args, "-url", app.url, "-keyspace", app.keyspace)
			}
			cmd := exec.Command(exe, append([]string{name}, args...)...)
			cmd.Env = append(os.Environ(), asCommand+"=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go run ./e2e/load %s %s: %v\n%s", name, strings.Join(args, " "), err, tail(out, 4000))
			}
			t.Logf("%s:\n%s", name, tail(out, 1500))
		})
	}
}

// tail is the end of out, at most n bytes.
func tail(out []byte, n int) []byte {
	if len(out) > n {
		return out[len(out)-n:]
	}
	return out
}

// fakeOriginal answers the original KillrChat's requests that versus
// sends, as the original does (status codes, the session cookie, a JSON
// list of the latest messages), from memory.
func fakeOriginal() http.Handler {
	var (
		mu       sync.Mutex
		messages = map[string][]json.RawMessage{}
	)
	signedIn := func(w http.ResponseWriter, r *http.Request) bool {
		if c, err := r.Cookie("JSESSIONID"); err != nil || c.Value == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return false
		}
		return true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /killrchat/users", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("POST /killrchat/authenticate", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("j_username") == "" || r.FormValue("j_password") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "JSESSIONID", Value: r.FormValue("j_username"), Path: "/"})
	})
	mux.HandleFunc("POST /killrchat/rooms/{room}", func(w http.ResponseWriter, r *http.Request) {
		if signedIn(w, r) {
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("PUT /killrchat/rooms/participant/{room}", func(w http.ResponseWriter, r *http.Request) {
		if signedIn(w, r) {
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("POST /killrchat/messages/{room}", func(w http.ResponseWriter, r *http.Request) {
		var m json.RawMessage
		if !signedIn(w, r) {
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		messages[r.PathValue("room")] = append(messages[r.PathValue("room")], m)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /killrchat/messages/{room}", func(w http.ResponseWriter, r *http.Request) {
		if !signedIn(w, r) {
			return
		}
		mu.Lock()
		ms := messages[r.PathValue("room")]
		ms = ms[max(0, len(ms)-50):]
		b, _ := json.Marshal(ms)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
	return mux
}

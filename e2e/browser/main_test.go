package browser

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"github.com/killrchat/killrchat/cmd"
	"github.com/killrchat/killrchat/cmd/cmdtest"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
)

// testTimeout bounds every test: its tabs and every wait in them. It
// only catches a test that hangs: on a machine that other runs load,
// TestAccessibility (axe over a dozen pages) took 55 s and once ran out
// of a minute, so it is three.
const testTimeout = 3 * time.Minute

var (
	db *storetest.DB

	// chromiumPath is the browser binary, found before any test runs.
	chromiumPath string

	envOnce sync.Once
	envErr  error
	theEnv  *env
)

// env is what every test of the package shares: one app instance and one
// browser process.
type env struct {
	main    *cmd.Main
	url     string          // the app's base URL
	browser context.Context // a chromedp context that owns the browser
	stop    func()
}

func TestMain(m *testing.M) {
	path, err := findChromium()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: e2e/browser:", err)
		os.Exit(1)
	}
	chromiumPath = path
	// The app runs in this process: its sign-ups hash at bcrypt's lowest
	// cost, which takes milliseconds under -race where the production
	// cost takes seconds. cmd's TestPasswordCost checks that the program
	// itself keeps the production cost.
	store.PasswordCost = bcrypt.MinCost
	code := storetest.Main(m, "browser", &db)
	if theEnv != nil {
		theEnv.stop()
	}
	os.Exit(code)
}

// findChromium returns $CHROMIUM, or /usr/bin/chromium, or a chromium found
// on $PATH. The browser tests are required, so a missing browser is an
// error, never a reason to skip.
func findChromium() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$CHROMIUM=%q: %w", p, err)
		}
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("Chromium is required for the browser tests and was not found: " +
		"install it (Debian/Ubuntu: apt-get install chromium) or set $CHROMIUM to its path")
}

// shared starts the app and the browser the first time a test asks for
// them; TestMain stops them after the last test.
func shared(t testing.TB) *env {
	t.Helper()
	envOnce.Do(func() { theEnv, envErr = startEnv() })
	if envErr != nil {
		t.Fatalf("browser test environment: %v", envErr)
	}
	return theEnv
}

// startMain starts the program as the binary does, with real flags, on
// the package's keyspace (args add to them), and waits until it is ready.
func startMain(log *slog.Logger, args ...string) (*cmd.Main, string, error) {
	return cmdtest.StartReady(log, append(cmdtest.Flags(db.Keyspace, hex.EncodeToString(bytes.Repeat([]byte("b"), 32))),
		append([]string{
			// The tests write far faster than any person.
			"--auth-rate", "1000",
			"--message-rate", "1e9", "--message-burst", "1073741824",
			"--rooms-per-hour", "1073741824",
			"--join-rate", "1e9", "--join-burst", "1073741824",
			"--upload-bytes-per-hour", "1099511627776",
		}, args...)...)...)
}

// appLog is an app instance's logger: warnings on stderr with -v.
func appLog() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startEnv() (*env, error) {
	if db == nil {
		return nil, errors.New("no database (TestMain did not run storetest.Main)")
	}
	// A site whose administrators chose no default rooms: the tests
	// count the rooms of who signs up (issue 39's #general has its own).
	if err := db.SetDefaultRooms(context.Background(), []string{}); err != nil {
		return nil, err
	}
	m, url, err := startMain(appLog())
	if err != nil {
		return nil, err
	}

	profile, err := os.MkdirTemp("", "killrchat-chromium-")
	if err != nil {
		m.Close()
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 860),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		// Several tabs talk at once (two people in a room): none of them
		// may be throttled or paused for being in the background.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("hide-scrollbars", true),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	startCtx, cancelStart := context.WithTimeout(browserCtx, 30*time.Second)
	defer cancelStart()
	stop := func() {
		cancelBrowser()
		cancelAlloc() // waits for the browser process to exit
		_ = os.RemoveAll(profile)
		m.Close()
	}
	// The first action starts the browser; it must use a context without
	// a deadline of its own, or the browser dies with it: so run it on
	// browserCtx and only bound the wait.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(browserCtx) }()
	select {
	case err = <-started:
	case <-startCtx.Done():
		err = fmt.Errorf("Chromium at %s did not start within 30s", chromiumPath)
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("start Chromium (%s): %w", chromiumPath, err)
	}
	return &env{main: m, url: url, browser: browserCtx, stop: stop}, nil
}

// artifactsDir is e2e/artifacts (gitignored), next to this package.
func artifactsDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts dir: %v", err)
	}
	return dir
}

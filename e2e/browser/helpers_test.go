package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// waitTimeout is how long one wait for a condition in a page may take
// (generous: a loaded 2-core CI machine once needed more than 10 s),
// unless a test says otherwise; the test's own deadline bounds it too.
const waitTimeout = 30 * time.Second

var seq atomic.Int64

// unique returns prefix with a number no other call in this process got;
// the keyspace is fresh per process, so names never collide, also with
// -count=N.
func unique(prefix string) string { return fmt.Sprintf("%s%d", prefix, seq.Add(1)) }

// bt is one browser test: its deadline, and the tabs it opened.
type bt struct {
	t        *testing.T
	env      *env
	deadline time.Time
	shots    atomic.Int64
}

// begin starts a browser test bounded by testTimeout. The tests run one
// after the other: on a small machine, parallel tabs only add CPU
// contention (and noise to the timing checks), not speed.
func begin(t *testing.T) *bt {
	t.Helper()
	return &bt{t: t, env: shared(t), deadline: time.Now().Add(testTimeout)}
}

// tab is one person's browser: its own browser context (cookies, storage)
// and one tab in it.
type tab struct {
	b     *bt
	t     *testing.T
	ctx   context.Context
	label string
	base  string
	cfg   tabConfig
	// cancel closes a sibling tab (see close).
	cancel context.CancelFunc

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

type tabOption func(*tabConfig)

type tabConfig struct{ noJS, noWorker, noLocks bool }

// withoutJS turns script execution off in the tab before any page loads.
func withoutJS(c *tabConfig) { c.noJS = true }

// withLeaderTab makes the tab's pages a browser's without SharedWorker:
// its live connection is held by a leader tab (Web Locks and
// BroadcastChannel).
func withLeaderTab(c *tabConfig) { c.noWorker = true }

// withStreamPerTab makes the tab's pages a browser's with neither
// SharedWorker nor Web Locks: each tab holds a stream of its own.
func withStreamPerTab(c *tabConfig) { c.noWorker, c.noLocks = true, true }

// hideFeatures is what the options above run in every new document
// before its scripts.
func (c tabConfig) hideFeatures() string {
	var js string
	if c.noWorker {
		js += `delete window.SharedWorker;`
	}
	if c.noLocks {
		js += `Object.defineProperty(Navigator.prototype, "locks", {get: () => undefined});`
	}
	return js
}

// newTab opens a tab in a fresh, incognito-like browser context, so no
// cookie is shared with another tab. It closes when the test ends.
func (b *bt) newTab(label string, opts ...tabOption) *tab {
	b.t.Helper()
	var cfg tabConfig
	for _, o := range opts {
		o(&cfg)
	}
	dctx, cancelDeadline := context.WithDeadline(b.env.browser, b.deadline)
	ctx, cancelTab := chromedp.NewContext(dctx, chromedp.WithNewBrowserContext())
	p := &tab{b: b, t: b.t, ctx: ctx, label: label, base: b.env.url}
	b.t.Cleanup(func() {
		cancelTab()
		cancelDeadline()
	})
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		b.t.Fatalf("%s: open a tab: %v", label, err)
	}
	p.configure(cfg)
	return p
}

// sibling opens another tab in p's browser (its cookies, its storage, its
// shared live connection), with the same options. It closes when the
// test ends, or with close.
func (p *tab) sibling(label string) *tab {
	p.t.Helper()
	ctx, cancel := chromedp.NewContext(p.ctx)
	q := &tab{b: p.b, t: p.t, ctx: ctx, label: label, base: p.base, cfg: p.cfg, cancel: cancel}
	p.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		p.t.Fatalf("%s: open a tab: %v", label, err)
	}
	q.configure(p.cfg)
	return q
}

// close closes a tab that sibling opened, as a person closes it.
func (p *tab) close() {
	p.t.Helper()
	if p.cancel == nil {
		p.t.Fatalf("%s: only a sibling tab closes alone", p.label)
	}
	p.checkConsole()
	p.cancel()
}

// configure applies the tab's options and records its console.
func (p *tab) configure(cfg tabConfig) {
	p.cfg = cfg
	ctx, label := p.ctx, p.label
	if cfg.noJS {
		if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			p.t.Fatalf("%s: disable JavaScript: %v", label, err)
		}
	}
	if js := cfg.hideFeatures(); js != "" {
		if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js}); err != nil {
			p.t.Fatalf("%s: hide browser features: %v", label, err)
		}
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.console = append(p.console, m)
			p.mu.Unlock()
		}
	}()
	// Runs before the tab closes (cleanups run last-in first-out).
	p.t.Cleanup(p.checkConsole)
}

// checkConsole fails the test on an uncaught exception or a Content
// Security Policy violation in the page, and shows the whole console of a
// failed test.
func (p *tab) checkConsole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.console {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			p.t.Errorf("%s: browser console: %s %s:%d: %s", p.label, m.Type, m.URL, m.Line+1, m.Text)
		}
	}
	if p.t.Failed() {
		for _, m := range p.console {
			p.t.Logf("%s: console %s %s:%d: %s", p.label, m.Type, m.URL, m.Line+1, m.Text)
		}
	}
}

// run runs actions with a bound on how long they may take.
func (p *tab) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if os.Getenv("E2E_TRACE") != "" {
		defer func(start time.Time) {
			p.t.Logf("%s: %v to %s", p.label, time.Since(start).Round(time.Millisecond), what)
		}(time.Now())
	}
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.fail("%s: %v", what, err)
	}
}

// open loads path (relative to the app) and waits for the load event.
func (p *tab) open(path string) {
	p.t.Helper()
	p.run("open "+path, chromedp.Navigate(p.base+path))
}

// click clicks the first visible element matching the CSS selector.
func (p *tab) click(sel string) {
	p.t.Helper()
	p.run("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// hover moves the mouse over the middle of the first element matching sel.
func (p *tab) hover(sel string) {
	p.t.Helper()
	xy := eval[[]float64](p, fmt.Sprintf(`(() => { const e = document.querySelector(%s);
		e.scrollIntoView({block: "nearest"}); const r = e.getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2]; })()`, js(sel)))
	p.run("hover "+sel, chromedp.MouseEvent(chromedp.MouseMoved, xy[0], xy[1]))
}

// typeInto focuses the field and types text, key by key.
func (p *tab) typeInto(sel, text string) {
	p.t.Helper()
	p.run("type into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text))
}

// fill types values into fields: pairs of element id and text.
func (p *tab) fill(idAndText ...string) {
	p.t.Helper()
	for i := 0; i+1 < len(idAndText); i += 2 {
		p.typeInto("#"+idAndText[i], idAndText[i+1])
	}
}

// eval evaluates a JavaScript expression in the page (through DevTools, so
// the page's CSP does not apply, and it works with scripts turned off).
func eval[T any](p *tab, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.fail("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until the expression is truthy in the page. Errors while
// a page is being replaced (no execution context) count as "not yet".
func (p *tab) waitJS(what, expr string) {
	p.t.Helper()
	p.waitJSFor(waitTimeout, what, expr)
}

// waitJSFor is waitJS with a timeout of its own.
func (p *tab) waitJSFor(timeout time.Duration, what, expr string) time.Duration {
	p.t.Helper()
	start := time.Now()
	end := start.Add(timeout)
	if end.After(p.b.deadline) {
		end = p.b.deadline
	}
	var lastErr error
	for {
		ctx, cancel := context.WithDeadline(p.ctx, minTime(end, time.Now().Add(2*time.Second)))
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			if os.Getenv("E2E_TRACE") != "" {
				p.t.Logf("%s: %v waiting for %s", p.label, time.Since(start).Round(time.Millisecond), what)
			}
			return time.Since(start)
		}
		if err != nil {
			lastErr = err
		}
		if time.Now().After(end) {
			break
		}
		select {
		case <-p.ctx.Done():
			p.fail("waiting for %s: %v", what, p.ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
	detail := ""
	if lastErr != nil && !errors.Is(lastErr, context.DeadlineExceeded) {
		detail = " (last error: " + lastErr.Error() + ")"
	}
	p.fail("timed out after %v waiting for %s%s", timeout, what, detail)
	return 0
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// fail stops the test with a screenshot and what the page shows.
func (p *tab) fail(format string, args ...any) {
	p.t.Helper()
	msg := fmt.Sprintf(format, args...)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 5*time.Second)
	defer cancel()
	// The tab may be gone with the test's deadline; try anyway, briefly.
	if p.ctx.Err() == nil {
		if loc, err := chromedp.Run(ctx, chromedp.Evaluate[string]("location.href")); err == nil {
			msg += "\n  page: " + loc
		}
		if text, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''")); err == nil {
			msg += "\n  text: " + strings.Join(strings.Fields(text), " ")
		}
		if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
			name := p.saveShot("FAILED", png)
			msg += "\n  screenshot: " + name
		}
	}
	p.t.Fatalf("%s: %s", p.label, msg)
}

// screenshot saves what the tab shows as e2e/artifacts/<Test>-<n>-<tab>-<name>.png.
func (p *tab) screenshot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.fail("screenshot %s: %v", name, err)
	}
	p.saveShot(name, png)
	p.checkIDs()
}

// checkIDs reports ids that more than one element of the page has (a label
// then points at the wrong element, and a swap by id hits the wrong one).
func (p *tab) checkIDs() {
	p.t.Helper()
	dups := eval[[]string](p, `(() => { const seen = new Set(), dups = new Set();
		for (const e of document.querySelectorAll("[id]")) { if (seen.has(e.id)) dups.add(e.id); seen.add(e.id); }
		return [...dups]; })()`)
	if len(dups) > 0 {
		p.t.Errorf("%s: %s has elements with the same id: %v", p.label, p.path(), dups)
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func (p *tab) saveShot(name string, png []byte) string {
	n := p.b.shots.Add(1)
	file := fmt.Sprintf("%s-%02d-%s-%s.png", p.t.Name(), n, p.label, name)
	path := filepath.Join(artifactsDir(p.t), unsafeName.ReplaceAllString(file, "_"))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Errorf("save screenshot: %v", err)
	}
	return path
}

// js quotes a Go string as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// hasText is a JavaScript expression: some element matching sel contains text.
func hasText(sel, text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%s)].some(e => e.textContent.includes(%s))`, js(sel), js(text))
}

// atPath is a JavaScript expression: the page is a loaded document at
// path (pathname and search), its deferred scripts (app.js) run.
func atPath(path string) string {
	return fmt.Sprintf(`document.readyState === "complete" && location.pathname + location.search === %s`, js(path))
}

func (p *tab) count(sel string) int {
	p.t.Helper()
	return eval[int](p, fmt.Sprintf(`document.querySelectorAll(%s).length`, js(sel)))
}

func (p *tab) texts(sel string) []string {
	p.t.Helper()
	return eval[[]string](p, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(e => e.textContent.trim().replace(/\s+/g, " "))`, js(sel)))
}

func (p *tab) text(sel string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`(document.querySelector(%s) || {textContent: ""}).textContent.trim().replace(/\s+/g, " ")`, js(sel)))
}

func (p *tab) path() string {
	p.t.Helper()
	return eval[string](p, `location.pathname + location.search`)
}

// mark tags the current document; marked reports whether the tag is still
// there, that is, no full page load happened since. It also starts
// recording the HTTP status of every htmx request (lastStatus).
func (p *tab) mark() {
	p.t.Helper()
	eval[bool](p, `(() => {
		window.__e2eMark = "kept";
		window.__statuses = [];
		document.addEventListener("htmx:after:request", e => {
			const c = e.detail && e.detail.ctx;
			if (c && c.response) window.__statuses.push(c.response.status);
		});
		return true; })()`)
}

// lastStatus is the status of the last htmx request since mark.
func (p *tab) lastStatus() int {
	p.t.Helper()
	return eval[int](p, `window.__statuses.length ? window.__statuses[window.__statuses.length - 1] : 0`)
}

func (p *tab) marked() bool {
	p.t.Helper()
	return eval[bool](p, `window.__e2eMark === "kept"`)
}

// person is someone with an account.
type person struct {
	login, first, last, password string
}

func (u person) name() string { return u.first + " " + u.last }

func newPerson(first, last string) person {
	return person{login: unique(strings.ToLower(first)), first: first, last: last, password: "correct horse 1"}
}

// signUp fills and submits the sign-up form and waits for the home page
// with the person's name in the sidebar.
func (p *tab) signUp(u person) {
	p.t.Helper()
	p.open("/signup")
	p.fill("login", u.login, "password", u.password, "password_confirm", u.password,
		"firstname", u.first, "lastname", u.last)
	p.click("#signup button[type=submit]")
	p.waitJS("the home page after sign-up", atPath("/?notice=welcome")+` && `+hasText(".sidebar .me-name", u.name()))
}

// createRoom follows "New room" in the sidebar, submits the form, and
// waits for the room page.
func (p *tab) createRoom(name, banner string) {
	p.t.Helper()
	p.click(`.sidebar a[href="/rooms/new"]`)
	p.waitJS("the new room form", atPath("/rooms/new")+` && document.querySelector("#new-room #room_name")`)
	p.fill("room_name", name, "banner", banner)
	p.click("#new-room button[type=submit]")
	p.waitRoomPage(name)
}

// waitRoomPage waits for the page of room, as a participant.
func (p *tab) waitRoomPage(room string) {
	p.t.Helper()
	p.waitJS("the page of #"+room, atPath("/rooms/"+room)+` && `+hasText("#room h1", "#"+room)+
		` && document.querySelector("#composer")`)
}

// waitStream waits until the browser's live stream is connected and
// carries the page's conversation (the server subscribes before it
// answers, so nothing published later is missed).
func (p *tab) waitStream() {
	p.t.Helper()
	p.waitJS("the live stream to connect", `document.documentElement.getAttribute("data-live") === "up"`)
}

// sidebarRooms are the room links in the sidebar.
func (p *tab) sidebarRooms() []string {
	p.t.Helper()
	return p.texts("#my-rooms a")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// size is a viewport the tests lay pages out at.
type size struct {
	name          string
	width, height int64
	phone         bool
}

var (
	desktop = size{"desktop", 1280, 800, false}
	phone   = size{"phone", 390, 844, true}
	// sizes are the two widths every layout check runs at.
	sizes = []size{desktop, phone}
)

// resize makes the tab's viewport s (a phone is emulated as a mobile
// viewport with touch, so the page sees no hover and a coarse pointer).
// Call it before opening the page to lay out.
func (p *tab) resize(s size) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: s.width, Height: s.height, DeviceScaleFactor: 1, Mobile: s.phone,
	}); err != nil {
		p.fail("resize to %s: %v", s.name, err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{Enabled: s.phone}); err != nil {
		p.fail("touch for %s: %v", s.name, err)
	}
}

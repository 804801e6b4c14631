package browser

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/killrchat/killrchat/chat"
)

// poster is someone who writes from a program, not a browser: no page,
// so no live stream of theirs counts on /metrics.
type poster struct {
	t      *testing.T
	base   string
	login  string
	client *http.Client
	token  string // the session's CSRF token, once signed up
}

var csrfMeta = regexp.MustCompile(`name="csrf-token" content="([^"]*)"`)

// newPoster signs a person up over HTTP.
func newPoster(t *testing.T, b *bt, first string) *poster {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	u := newPerson(first, "Poster")
	p := &poster{t: t, base: b.env.url, login: u.login, client: &http.Client{Jar: jar, Timeout: 20 * time.Second}}
	p.form("/signup", url.Values{"login": {u.login}, "password": {u.password}, "password_confirm": {u.password},
		"firstname": {u.first}, "lastname": {u.last}})
	return p
}

// form posts fields (and the CSRF token of a fresh page) to path, and
// fails the test unless the answer is a success or a redirect.
func (p *poster) form(path string, fields url.Values) {
	p.t.Helper()
	if p.token == "" || path == "/signup" {
		page := "/"
		if path == "/signup" {
			page = path
		}
		resp, err := p.client.Get(p.base + page)
		if err != nil {
			p.t.Fatalf("%s: get a page: %v", p.login, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := csrfMeta.FindSubmatch(body)
		if m == nil {
			p.t.Fatalf("%s: no CSRF token on %s", p.login, page)
		}
		p.token = string(m[1])
	}
	fields.Set("_csrf", p.token)
	resp, err := p.client.PostForm(p.base+path, fields)
	if err != nil {
		p.t.Fatalf("%s: POST %s: %v", p.login, path, err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		p.t.Fatalf("%s: POST %s: %s", p.login, path, resp.Status)
	}
	if path == "/signup" {
		p.token = "" // a new session, a new token
	}
}

// post writes a message into the conversation at path ("/rooms/x",
// "/dm/a+b").
func (p *poster) post(path, text string) {
	p.t.Helper()
	p.form(path+"/messages", url.Values{"content": {text}})
}

// openStreams is the server's gauge of open live streams (/metrics).
func openStreams(t *testing.T, b *bt) int {
	t.Helper()
	resp, err := http.Get(b.env.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "killrchat_sse_connections "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatal("no killrchat_sse_connections on /metrics")
	return 0
}

// settledStreams waits until the gauge stays the same for a second (the
// streams of tabs closed by earlier tests are gone) and returns it.
func settledStreams(t *testing.T, b *bt) int {
	t.Helper()
	last, since := openStreams(t, b), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if n := openStreams(t, b); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > 1500*time.Millisecond {
			break
		}
	}
	return last
}

// leave navigates the tab away from the app (to a blank page).
func (p *tab) leave() {
	p.t.Helper()
	p.run("leave the app", chromedp.Navigate("about:blank"))
}

// loadTime is how long the tab's page took from navigation to its load
// event.
func (p *tab) loadTime() time.Duration {
	p.t.Helper()
	ms := eval[float64](p, `performance.getEntriesByType("navigation")[0].loadEventEnd`)
	return time.Duration(ms * float64(time.Millisecond))
}

// TestOneConnectionPerBrowser (issue 17, acceptance 1): one person, one
// browser, 10 tabs open at once (4 rooms, 3 DMs, Home, /dm, /mentions):
// every tab loads (HTTP/1.1 gives a browser 6 connections per host: a
// stream per tab would leave the 7th tab waiting), a message someone else
// posts into each room and DM shows in the tab that shows it and in no
// other, and the server holds one stream for the whole browser.
func TestOneConnectionPerBrowser(t *testing.T) {
	b := begin(t)
	ada := newPoster(t, b, "Ada")
	cy, di := newPoster(t, b, "Cy"), newPoster(t, b, "Di")
	var rooms []string
	for i := 0; i < 4; i++ {
		room := unique("tabs")
		ada.form("/rooms", url.Values{"room_name": {room}, "banner": {"Tab " + strconv.Itoa(i)}})
		rooms = append(rooms, room)
	}
	before := settledStreams(t, b)

	bob := newPerson("Bob", "Babbage")
	first := b.newTab("bob")
	first.signUp(bob)
	for _, r := range rooms {
		first.joinFromRoomPage(r)
	}
	first.open("/profile") // a page like any other, until the tabs open
	var dms []string
	for _, p := range []*poster{ada, cy, di} {
		address, err := chat.DMAddress([]string{p.login, bob.login})
		if err != nil {
			t.Fatal(err)
		}
		dms = append(dms, address)
	}
	type shown struct {
		path   string
		poster *poster
		tab    *tab
	}
	var tabs []*shown
	for _, r := range rooms {
		tabs = append(tabs, &shown{path: "/rooms/" + r, poster: ada})
	}
	for i, d := range dms {
		tabs = append(tabs, &shown{path: "/dm/" + d, poster: []*poster{ada, cy, di}[i]})
	}
	tabs = append(tabs, &shown{path: "/"}, &shown{path: "/dm"}, &shown{path: "/mentions"})
	for i, s := range tabs {
		s.tab = first.sibling(fmt.Sprintf("tab%d", i))
		s.tab.open(s.path)
		s.tab.waitJS("the page and its live stream", atPath(s.path)+` && document.documentElement.getAttribute("data-live") === "up"`)
		took := s.tab.loadTime()
		t.Logf("tab %d (%s) loaded in %v", i+1, s.path, took.Round(time.Millisecond))
		// Acceptance: within 2 s. A tab blocked by the connection limit
		// never loads; the bound here leaves room for a loaded machine.
		if took > 10*time.Second {
			t.Errorf("tab %d (%s) took %v to load", i+1, s.path, took)
		}
	}
	first.leave() // the signing-up tab leaves: 10 tabs show KillrChat

	maxStreams := 0
	sample := func() {
		if n := openStreams(t, b) - before; n > maxStreams {
			maxStreams = n
		}
	}
	sample()
	for i, s := range tabs {
		if s.poster == nil {
			continue
		}
		text := fmt.Sprintf("for tab %d %s", i+1, unique("#"))
		s.poster.post(s.path, text)
		s.tab.waitJSFor(10*time.Second, "the message in the tab that shows it", messagesWith(text)+`.length === 1`)
		for j, other := range tabs {
			if j != i && other.poster != nil && eval[int](other.tab, messagesWith(text)+`.length`) != 0 {
				t.Errorf("tab %d (%s) shows the message of tab %d", j+1, other.path, i+1)
			}
		}
		sample()
	}
	tabs[0].tab.screenshot("room")
	tabs[4].tab.screenshot("dm")
	time.Sleep(1500 * time.Millisecond) // a replaced stream, if any, is gone by now
	sample()
	n := openStreams(t, b) - before
	t.Logf("open streams for the browser of 10 tabs: %d now, at most %d while posting", n, maxStreams)
	if n != 1 || maxStreams > 1 {
		t.Errorf("the browser holds %d streams (at most %d while posting), want 1", n, maxStreams)
	}
}

// TestPersonalStreamEverywhere (issue 17, acceptance 2): Bob on Home,
// /dm and /mentions (three tabs) sees a new DM that mentions him at once,
// with no reload: the sidebar's entry and badge, the title's count, the
// DM list's row, the mentions list's item; on a phone, the closed Menu
// button shows the count and a mention mark, and says so.
func TestPersonalStreamEverywhere(t *testing.T) {
	b := begin(t)
	ada := newPoster(t, b, "Ada")
	bob := newPerson("Bob", "Babbage")
	home := b.newTab("home")
	home.signUp(bob)
	home.resize(phone)
	dms, mentions := home.sibling("dms"), home.sibling("mentions")
	home.open("/")
	dms.open("/dm")
	mentions.open("/mentions")
	all := []*tab{home, dms, mentions}
	for _, p := range all {
		p.waitJS("the live stream", `document.documentElement.getAttribute("data-live") === "up"`)
		p.mark()
	}
	if got := eval[string](home, `document.querySelector(".menu-button").getAttribute("aria-label")`); got != "Menu" {
		t.Errorf("the Menu button is named %q before anything is unread", got)
	}
	if !eval[bool](home, `document.querySelector(".menu-button .menu-dot").hidden`) {
		t.Error("the Menu button shows a dot before anything is unread")
	}

	address, err := chat.DMAddress([]string{ada.login, bob.login})
	if err != nil {
		t.Fatal(err)
	}
	text := "@" + bob.login + " a word in private " + unique("#")
	start := time.Now()
	ada.post("/dm/"+address, text)
	entry := fmt.Sprintf(`document.querySelector('#my-dms a[href="/dm/%s#latest"]')`, address)
	// One pill: a mention's, which says the unread count too.
	badge := entry + ` && ` + entry + `.getAttribute("data-unread") === "1" && ` + entry + `.querySelector(".badge.mention")`
	title := `document.title.startsWith("(1) ")`
	var wg sync.WaitGroup
	for _, c := range []struct {
		p    *tab
		what string
		expr string
	}{
		{home, "the badge, the title and the Menu's count", badge + ` && ` + title +
			` && document.querySelector(".menu-button").getAttribute("aria-label") === "Menu, 1 unread, 1 with mentions"`},
		{dms, "the badge, the title and the DM list's row", badge + ` && ` + title + ` && ` +
			hasText(`#dms .dm-row[id="dm-`+address+`"] .dm-excerpt`, "a word in private")},
		{mentions, "the badge, the title and the mentions list's item", badge + ` && ` + title + ` && ` +
			hasText("#mentions .mention-item .text", "a word in private")},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Acceptance: within 1 s. Without a stream it never comes; the
			// bound here leaves room for a loaded machine.
			c.p.waitJSFor(5*time.Second, c.what, c.expr)
			t.Logf("%s: %s %v after the post was sent", c.p.label, c.what, time.Since(start).Round(time.Millisecond))
		}()
	}
	wg.Wait()
	for _, p := range all {
		if !p.marked() {
			t.Errorf("%s: the page was reloaded", p.label)
		}
	}
	visible := eval[bool](home, `(() => { const d = document.querySelector(".menu-button .menu-dot"), m = document.querySelector(".menu-button .menu-mention");
		return !document.querySelector(".nav-drawer").open && d.offsetWidth > 0 && d.getAttribute("data-count") === "1" && m.offsetWidth > 0; })()`)
	if !visible {
		t.Error("the closed Menu button does not show the count and the mention mark")
	}
	home.screenshot("phone-menu")
	dms.screenshot("dm-list")
	mentions.screenshot("mentions")
	home.checkAccessibility("home on a phone, with unread")
}

// TestTakeOverWhenTheHolderCloses (issue 17, acceptance 3): three of
// Bob's tabs show one room; the tab holding the browser's connection
// closes while Ada posts 50 messages there: the other two end with all
// 50, in order, once each. With a SharedWorker no tab holds it (the tab
// that started the worker closes); without one, the leader tab holds it
// and another tab takes over.
func TestTakeOverWhenTheHolderCloses(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []tabOption
	}{
		{"worker", nil},
		{"leader", []tabOption{withLeaderTab}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			b := begin(t)
			ada := newPoster(t, b, "Ada")
			room := unique("takeover")
			ada.form("/rooms", url.Values{"room_name": {room}, "banner": {"Fifty"}})
			first := b.newTab("bob", mode.opts...)
			first.signUp(newPerson("Bob", "Babbage"))
			first.joinFromRoomPage(room)
			first.open("/")
			tabs := []*tab{first.sibling("tab1"), first.sibling("tab2"), first.sibling("tab3")}
			for _, p := range tabs {
				p.open("/rooms/" + room)
				p.waitRoomPage(room)
				p.waitStream()
				if got := eval[string](p, `document.documentElement.getAttribute("data-live-mode")`); got != mode.name {
					t.Fatalf("%s runs its stream as %q, want %s", p.label, got, mode.name)
				}
			}
			first.leave()
			holder := tabs[0]
			if mode.name == "leader" {
				// The signing-up tab led; one of the three took over.
				holder = nil
				for deadline := time.Now().Add(10 * time.Second); holder == nil && time.Now().Before(deadline); {
					for _, p := range tabs {
						if eval[bool](p, `document.documentElement.hasAttribute("data-live-leader")`) {
							holder = p
						}
					}
				}
				if holder == nil {
					t.Fatal("no tab leads")
				}
				holder.waitStream()
			}
			var rest []*tab
			for _, p := range tabs {
				if p != holder {
					rest = append(rest, p)
				}
			}

			const n = 50
			texts := make([]string, n)
			tag := unique("#")
			for i := range texts {
				texts[i] = fmt.Sprintf("takeover %02d %s", i+1, tag)
			}
			posted := make(chan struct{})
			closed := make(chan struct{})
			go func() {
				defer close(posted)
				for i, text := range texts {
					if i == 10 {
						<-closed
					}
					ada.post("/rooms/"+room, text)
				}
			}()
			for _, p := range rest {
				p.waitJSFor(20*time.Second, "the first messages", hasText("#messages li.message .text", texts[5]))
			}
			holder.close()
			closedAt := time.Now()
			close(closed)
			if mode.name == "leader" {
				var took time.Duration
				for took == 0 {
					for _, p := range rest {
						if eval[bool](p, `document.documentElement.hasAttribute("data-live-leader") && document.documentElement.getAttribute("data-live") === "up"`) {
							took = time.Since(closedAt)
						}
					}
					if time.Since(closedAt) > 10*time.Second {
						t.Fatal("no tab took over within 10 s")
					}
				}
				// Acceptance: within 2 s.
				t.Logf("a tab took over %v after the leader closed", took.Round(time.Millisecond))
			}
			<-posted
			want := js(strings.Join(texts, "\n"))
			for _, p := range rest {
				p.waitJSFor(20*time.Second, "all 50 messages", fmt.Sprintf(
					`[...document.querySelectorAll("#messages li.message .text")].map(e => e.textContent.trim()).filter(s => s.endsWith(%s)).length >= %d`, js(tag), n))
				got := eval[string](p, fmt.Sprintf(
					`[...document.querySelectorAll("#messages li.message .text")].map(e => e.textContent.trim()).filter(s => s.endsWith(%s)).join("\n")`, js(tag)))
				if js(got) != want {
					t.Errorf("%s shows, in this order:\n%s\nwant the 50 in order, once each", p.label, got)
				}
				p.screenshot("all-fifty")
			}
		})
	}
}

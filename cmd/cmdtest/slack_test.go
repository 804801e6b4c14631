package cmdtest_test

import (
	"archive/zip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/cmd/cmdtest"
	"github.com/killrchat/killrchat/service/moving"
	"github.com/killrchat/killrchat/service/moving/slacktest"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/storetest"
)

// writeSample writes slacktest.Sample's zip in dir.
func writeSample(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "slack.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := slacktest.Sample().Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// openStore is a store on ks, for what a test does behind the app's
// back (an administrator's reset link).
func openStore(t *testing.T, ks string) *store.Store {
	t.Helper()
	db := store.New(store.Config{Hosts: storetest.Hosts(), Keyspace: ks, Timeout: 30 * time.Second})
	// A fresh keyspace's schema, on a node every test package asks at
	// once, was seen to take over five minutes at load average 25.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := storetest.Connect(ctx, db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// claim sets login's password by a reset link, as an administrator hands
// one to an imported person, and logs them in.
func claim(t *testing.T, db *store.Store, base, login string) *http.Client {
	t.Helper()
	token, err := db.CreateResetLink(context.Background(), "(test)", login)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient()
	if code := post(t, c, base, "/reset/"+token, url.Values{"password": {"password1"}, "password_confirm": {"password1"}}); code != http.StatusSeeOther {
		t.Fatalf("reset %s: %d", login, code)
	}
	return logIn(t, base, login)
}

// failingTarget is a store that stops answering after some batches of
// messages: an import killed halfway.
type failingTarget struct {
	*store.Store
	left atomic.Int64
}

func (f *failingTarget) RestoreMessages(ctx context.Context, in chat.Place, msgs []chat.Message) error {
	if f.left.Add(-1) < 0 {
		return errors.New("killed")
	}
	return f.Store.RestoreMessages(ctx, in, msgs)
}

func stopsAfter(db *store.Store, batches int64) *failingTarget {
	f := &failingTarget{Store: db}
	f.left.Store(batches)
	return f
}

// memoryJournal is an import's journal kept in memory.
type memoryJournal struct {
	mu   sync.Mutex
	done map[string]bool
}

func (j *memoryJournal) Done(key string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.done[key]
}

func (j *memoryJournal) Mark(key string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.done[key] = true
	return nil
}

// TestSlackImport: slacktest.Sample imports; its room pages, DM page,
// search, mentions and unread counts show what its people would expect,
// over HTTP; an imported person cannot log in until claimed by a reset
// link; a second run changes nothing; and a run killed halfway and run
// again ends the same as a run that was not.
func TestSlackImport(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	ks, ksKilled := storetest.Keyspace("slack"), storetest.Keyspace("slackkill")
	dropKeyspace(t, ks)
	dropKeyspace(t, ksKilled)
	dir := t.TempDir()
	zipPath := writeSample(t, dir)
	// Both keyspaces' schemas first, with openStore's patience: the
	// commands below then connect to keyspaces that exist.
	openStore(t, ks)
	killed := openStore(t, ksKilled)

	out := run(t, append([]string{"import", "slack", zipPath}, cassandraFlags(ks)...)...)
	for _, want := range []string{
		"8 people (2 bots), 4 rooms, 2 DMs",
		`"Dave Smith!" is "dave-smith-" here`,
		`"ADA" is "ada-2" here`,
		"a message of the unknown subtype \"sh_room_created\"",
		"skipped 1: a pin",
		"skipped 1: the rest of a malformed day file (random/",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	first := filepath.Join(dir, "first.jsonl")
	run(t, append([]string{"export", "--out", first}, cassandraFlags(ks)...)...)

	// Again: the journal skips every day, and nothing changes.
	again := run(t, append([]string{"import", "slack", zipPath}, cassandraFlags(ks)...)...)
	second := filepath.Join(dir, "second.jsonl")
	run(t, append([]string{"export", "--out", second}, cassandraFlags(ks)...)...)
	if x, y := string(mustRead(t, first)), string(mustRead(t, second)); x != y {
		t.Errorf("a second run changed the site: %s\n%s", firstDifference(x, y), again)
	}

	// Killed after two batches, then run again (by the command, with its
	// own journal): the same site as one run.
	zr, err := zipOpen(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := moving.ImportSlack(context.Background(), stopsAfter(killed, 2), zr, moving.SlackOptions{Journal: &memoryJournal{done: map[string]bool{}}}); err == nil {
		t.Fatal("the killed run did not stop")
	}
	run(t, append([]string{"import", "slack", zipPath, "--work", t.TempDir()}, cassandraFlags(ksKilled)...)...)
	third := filepath.Join(dir, "third.jsonl")
	run(t, append([]string{"export", "--out", third}, cassandraFlags(ksKilled)...)...)
	if x, y := string(mustRead(t, first)), string(mustRead(t, third)); x != y {
		t.Errorf("a run killed halfway and run again differs from one run: %s", firstDifference(x, y))
	}

	m, base, err := cmdtest.StartReady(testLog(t), cmdtest.Flags(ks, hex.EncodeToString(key))...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	db := openStore(t, ks)
	if code := post(t, newClient(), base, "/login", url.Values{"login": {"bob"}, "password": {""}}); code == http.StatusSeeOther {
		t.Error("an unclaimed account logged in")
	}
	bob := claim(t, db, base, "bob")

	general := page(t, bob, base+"/rooms/general")
	var texts []string
	general.Find("li.message").Each(func(_ int, s *goquery.Selection) { texts = append(texts, strings.TrimSpace(s.Find(".text").Text())) })
	all := strings.Join(texts, "\n")
	order := func(a, b string) {
		t.Helper()
		i, j := strings.Index(all, a), strings.Index(all, b)
		if i < 0 || j < 0 || i > j {
			t.Errorf("#general should show %q before %q:\n%s", a, b, all)
		}
	}
	for h := range 23 {
		order(hour(h), hour(h+1))
	}
	order("first of the same second", "second of the same second")
	order("Shall we ship on Friday?", "Yes, Friday it is")
	order("Yes, Friday it is", "Friday works for me")
	for _, gone := range []string{"a huddle", "pinned a message"} {
		if strings.Contains(all, gone) {
			t.Errorf("#general shows a dropped subtype's %q", gone)
		}
	}
	if !strings.Contains(all, "Dave Smith joins the room") {
		t.Errorf("#general lacks the join as a system line:\n%s", all)
	}
	rich := general.Find("li.message").FilterFunction(func(_ int, s *goquery.Selection) bool {
		return strings.Contains(s.Text(), "Bold")
	})
	for sel, want := range map[string]string{"strong": "Bold", "em": "italic", "del": "gone", "code": "*code*",
		`a[href="https://example.com"]`: "the site"} {
		if got := strings.TrimSpace(rich.Find(sel).First().Text()); got != want {
			t.Errorf("the mrkdwn message's %s is %q, want %q", sel, got, want)
		}
	}
	if !strings.Contains(rich.Text(), "see #random, @here") {
		t.Errorf("the channel link and the broadcast are not converted: %s", rich.Text())
	}
	thumbs := rich.Find(".reaction-btn").FilterFunction(func(_ int, s *goquery.Selection) bool { return s.Find(".emoji").Text() == "👍" })
	if got := thumbs.Find(".count").Text(); got != "2" {
		t.Errorf("👍 counts %q, want 2", got)
	}
	if !strings.Contains(rich.Text(), ":partyparrot:") {
		t.Error("a custom emoji's reaction is not kept by name")
	}
	edited := general.Find("li.message").FilterFunction(func(_ int, s *goquery.Selection) bool { return strings.Contains(s.Text(), "the plan is ready") })
	if strings.TrimSpace(edited.Find(".edited").Text()) != "(edited)" {
		t.Error("the edited message is not marked (edited)")
	}
	reply := general.Find("li.message").FilterFunction(func(_ int, s *goquery.Selection) bool { return strings.Contains(s.Text(), "Yes, Friday it is") })
	if !strings.Contains(reply.Find("blockquote").Text(), "Shall we ship on Friday?") {
		t.Errorf("the thread's reply does not quote its parent: %s", reply.Text())
	}
	if href, _ := general.Find(`a[href="https://example.slack.com/files/U01/F01/plan.pdf"]`).Attr("href"); href == "" {
		t.Error("the file is not kept as its name and link")
	}
	// Slack's bots are bot accounts: the one of users.json under its
	// name, an integration without a user under its bot id, each message
	// under the name it was posted as, with the bot mark.
	bots, err := db.BotLogins(context.Background())
	if err != nil || !bots["deploybot"] || !bots["slack-b99"] || len(bots) != 2 {
		t.Errorf("the bots are %v (%v), want deploybot and slack-b99", bots, err)
	}
	if u, err := db.User(context.Background(), "deploybot"); err != nil || !u.IsBot() || u.Status != chat.AccountActive || u.Email != "" {
		t.Errorf("deploybot is %+v (%v), want an active bot", u, err)
	}
	for text, name := range map[string]string{"Deployed build 42": "Deploy Bot", "Pull request 7 merged": "GitHub"} {
		msg := general.Find("li.message").FilterFunction(func(_ int, s *goquery.Selection) bool { return strings.Contains(s.Text(), text) })
		if msg.Length() != 1 || msg.Find(".bot-mark").Length() != 1 || strings.TrimSpace(msg.Find(".user-link").First().Text()) != name {
			t.Errorf("%q is not shown under %s with the bot mark: %q", text, name, msg.Text())
		}
	}
	if v, _ := general.Find(`[data-conversation="general"]`).Attr("data-unread"); v != "0" {
		t.Errorf("#general's unread count is %q, want 0 (the import starts markers at the newest message)", v)
	}

	if got := page(t, bob, base+"/rooms/random").Find("li.message .text").Text(); !strings.Contains(got, "before the fault") {
		t.Errorf("#random lacks the message before its day file's fault: %q", got)
	}
	dm := page(t, bob, base+"/dm/ada+bob")
	if got := dm.Find("li.message .text").Text(); !strings.Contains(got, "psst, bob") || !strings.Contains(got, "yes, ada?") {
		t.Errorf("the DM shows %q", got)
	}
	if got := page(t, bob, base+"/dm/ada+bob+cleo").Find("li.message .text").Text(); !strings.Contains(got, "lunch, the three of us?") {
		t.Errorf("the group DM shows %q", got)
	}
	if got := page(t, bob, base+"/search?q=zebra").Text(); !strings.Contains(got, "the secret is") {
		t.Error("search does not find the private channel's message")
	}
	if got := page(t, bob, base+"/mentions").Find(".mention-item").Text(); !strings.Contains(got, "the plan is ready") {
		t.Errorf("bob's mentions lack cleo's mention: %q", got)
	}
	home := page(t, bob, base+"/")
	home.Find("[data-unread]").Each(func(_ int, s *goquery.Selection) {
		if v, _ := s.Attr("data-unread"); v != "0" {
			c, _ := s.Attr("data-conversation")
			t.Errorf("%s has %s unread after the import", c, v)
		}
	})
}

func hour(h int) string { return "hour " + twoDigits(h) + " report" }

func twoDigits(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }

func zipOpen(path string) (*zip.Reader, error) {
	rc, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	return &rc.Reader, nil
}

package cmdtest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/cmd/cmdtest"
	"github.com/killrchat/killrchat/store/storetest"
)

// cassandraFlags are the flags every command needs for keyspace ks.
func cassandraFlags(ks string) []string {
	return []string{"--cassandra-hosts", strings.Join(storetest.Hosts(), ","), "--cassandra-keyspace", ks, "--cassandra-timeout", "30s"}
}

// run executes the program with args and fails the test unless it exits 0.
func run(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := execute(t, args...)
	if code != 0 {
		t.Fatalf("killrchat %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout + stderr
}

// dropKeyspace drops ks when the test ends.
func dropKeyspace(t *testing.T, ks string) {
	t.Cleanup(func() {
		if os.Getenv("KEEP_KEYSPACES") != "" {
			t.Log("kept keyspace", ks)
			return
		}
		_ = storetest.DropKeyspace(ks)
	})
}

// messageIDs are the ids of a page's messages, in order.
var messageIDs = regexp.MustCompile(`id="msg-([0-9a-f-]+)"`)

func lastMessageID(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	_, body := get(t, c, u)
	all := messageIDs.FindAllStringSubmatch(body, -1)
	if len(all) == 0 {
		t.Fatalf("no message on %s", u)
	}
	return all[len(all)-1][1]
}

// uploadTo posts a file to a conversation as the composer does.
func uploadTo(t *testing.T, c *http.Client, base, conv, name string, data []byte) {
	t.Helper()
	token, _ := page(t, c, base+"/profile").Find(`meta[name="csrf-token"]`).Attr("content")
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("_csrf", token)
	_ = mw.WriteField("content", "the plan, attached")
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(data)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+conv+"/messages", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload to %s: %d", conv, resp.StatusCode)
	}
}

// perRequest are the parts of a page that differ from one request to the
// next whatever the data: CSRF tokens, the composer's one-time id, the
// live stream's resume cursor.
var perRequest = []*regexp.Regexp{
	regexp.MustCompile(`(name="csrf-token" content=")[^"]*`),
	regexp.MustCompile(`(name="_csrf" value=")[^"]*`),
	regexp.MustCompile(`(name="client_id" value=")[^"]*`),
	regexp.MustCompile(`(data-after=")[^"]*`),
	regexp.MustCompile(`(/events\?after=)[^"]*`),
}

func withoutTokens(page string) string {
	for _, re := range perRequest {
		page = re.ReplaceAllString(page, "${1}…")
	}
	return page
}

func logIn(t *testing.T, base, login string) *http.Client {
	t.Helper()
	c := newClient()
	if code := post(t, c, base, "/login", url.Values{"login": {login}, "password": {"password1"}}); code != http.StatusSeeOther {
		t.Fatalf("log in %s at %s: %d", login, base, code)
	}
	return c
}

// TestExportRoundTrip: a site with rooms (open and closed), members,
// messages, an edit, reactions, a mention, a DM, a file, an
// administrator, a bot and a deactivated person is exported
// (a full backup), imported into a fresh keyspace and exported again:
// the lines and the files' tar are byte for byte the same, and the room
// page a member sees on the restored site is the original page but for
// its per-request tokens. An export without --full-backup holds no
// password hash.
func TestExportRoundTrip(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sessionKey := hex.EncodeToString(key)
	ksA, ksB := storetest.Keyspace("movea"), storetest.Keyspace("moveb")
	dropKeyspace(t, ksA)
	dropKeyspace(t, ksB)
	a, baseA, err := cmdtest.StartReady(testLog(t), cmdtest.Flags(ksA, sessionKey)...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	ada, adaLogin := signUp(t, baseA, "ada")
	bob, bobLogin := signUp(t, baseA, "bob")
	room := "lobby" + adaLogin
	if code := post(t, ada, baseA, "/rooms", url.Values{"room_name": {room}, "banner": {"Everything"}, "kind": {"open"}}); code != http.StatusSeeOther {
		t.Fatalf("create room: %d", code)
	}
	if code := post(t, ada, baseA, "/rooms", url.Values{"room_name": {"secret" + adaLogin}, "kind": {"closed"}}); code != http.StatusSeeOther {
		t.Fatalf("create closed room: %d", code)
	}
	if code := post(t, bob, baseA, "/rooms/"+room+"/join", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("join: %d", code)
	}
	for i, text := range []string{"hello **world**", "hi @" + adaLogin, "a `code` span and https://example.com"} {
		c := ada
		if i == 1 {
			c = bob
		}
		if code := post(t, c, baseA, "/rooms/"+room+"/messages", url.Values{"content": {text}}); code != http.StatusSeeOther {
			t.Fatalf("post: %d", code)
		}
	}
	last := lastMessageID(t, ada, baseA+"/rooms/"+room)
	if code := post(t, ada, baseA, "/rooms/"+room+"/messages/"+last+"/edit", url.Values{"content": {"a `code` span, edited"}}); code != http.StatusSeeOther {
		t.Fatalf("edit: %d", code)
	}
	if code := post(t, bob, baseA, "/rooms/"+room+"/messages/"+last+"/reactions", url.Values{"emoji": {"👍"}}); code != http.StatusSeeOther {
		t.Fatalf("react: %d", code)
	}
	uploadTo(t, ada, baseA, "/rooms/"+room, "plan.txt", bytes.Repeat([]byte("the plan\n"), 300_000))
	dm := "/dm/" + strings.Join(sortedLogins(adaLogin, bobLogin), "+")
	if code := post(t, bob, baseA, dm+"/messages", url.Values{"content": {"just between us"}}); code != http.StatusSeeOther {
		t.Fatalf("dm: %d", code)
	}

	// What an account is besides its names: an administrator, a bot, a
	// deactivated person.
	ctx := context.Background()
	dbA := openStore(t, ksA)
	if _, err := dbA.SetAdmin(ctx, adaLogin, true); err != nil {
		t.Fatal(err)
	}
	botLogin := "deploy" + adaLogin
	if _, _, err := dbA.CreateBot(ctx, adaLogin, chat.NewBot{Login: botLogin, Firstname: "Deploy"}); err != nil {
		t.Fatal(err)
	}
	_, carlLogin := signUp(t, baseA, "carl")
	if err := dbA.SetStatus(ctx, carlLogin, chat.AccountDeactivated); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	run(t, append([]string{"export", "--out", filepath.Join(dir, "plain.jsonl")}, cassandraFlags(ksA)...)...)
	plain, _ := os.ReadFile(filepath.Join(dir, "plain.jsonl"))
	if bytes.Contains(plain, []byte("password_hash")) {
		t.Error("an export without --full-backup holds password hashes")
	}
	exportA := filepath.Join(dir, "a.jsonl")
	openStore(t, ksB) // its schema, with openStore's patience
	run(t, append([]string{"export", "--full-backup", "--out", exportA}, cassandraFlags(ksA)...)...)
	out := run(t, append([]string{"import", "killrchat", exportA}, cassandraFlags(ksB)...)...)
	t.Log(out)
	exportB := filepath.Join(dir, "b.jsonl")
	run(t, append([]string{"export", "--full-backup", "--out", exportB}, cassandraFlags(ksB)...)...)
	for _, ext := range []string{".jsonl", ".tar"} {
		x, _ := os.ReadFile(filepath.Join(dir, "a"+ext))
		y, _ := os.ReadFile(filepath.Join(dir, "b"+ext))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("the round trip changed the export's %s (%d bytes, then %d):\n%s\n----\n%s", ext, len(x), len(y), clip(x), clip(y))
		}
	}
	if !bytes.Contains(mustRead(t, exportA), []byte(`"password_hash":"$2`)) {
		t.Error("a full backup holds no password hash")
	}
	for _, want := range []string{`"login":"` + botLogin + `"`, `"account_kind":"bot"`, `"status":"deactivated"`, `"admins":["` + adaLogin} {
		if !bytes.Contains(mustRead(t, exportA), []byte(want)) {
			t.Errorf("the export lacks %s", want)
		}
	}
	dbB := openStore(t, ksB)
	if u, err := dbB.User(ctx, botLogin); err != nil || !u.IsBot() {
		t.Errorf("the restored bot %s: %+v, %v", botLogin, u, err)
	}
	if bots, err := dbB.BotLogins(ctx); err != nil || !bots[botLogin] {
		t.Errorf("the restored site's bots are %v (%v), without %s", bots, err, botLogin)
	}
	if u, err := dbB.User(ctx, carlLogin); err != nil || u.Status != chat.AccountDeactivated {
		t.Errorf("the deactivated %s is restored as %q (%v)", carlLogin, u.Status, err)
	}
	if site, err := dbB.Site(ctx); err != nil || !site.IsAdmin(adaLogin) {
		t.Errorf("%s is not an administrator of the restored site (%v)", adaLogin, err)
	}

	b, baseB, err := cmdtest.StartReady(testLog(t), cmdtest.Flags(ksB, sessionKey)...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, path := range []string{"/rooms/" + room, dm} {
		_, pageA := get(t, logIn(t, baseA, bobLogin), baseA+path)
		_, pageB := get(t, logIn(t, baseB, bobLogin), baseB+path)
		if withoutTokens(pageA) != withoutTokens(pageB) {
			t.Errorf("%s differs on the restored site:\n%s", path, firstDifference(withoutTokens(pageA), withoutTokens(pageB)))
		}
	}
	// One room alone (export --room): its lines, its members' accounts,
	// none of the rest; restored into a keyspace of its own, its messages
	// show as on the original.
	ksC := storetest.Keyspace("movec")
	dropKeyspace(t, ksC)
	openStore(t, ksC)
	roomExport := filepath.Join(dir, "room.jsonl")
	run(t, append([]string{"export", "--full-backup", "--room", room, "--out", roomExport}, cassandraFlags(ksA)...)...)
	lines := string(mustRead(t, roomExport))
	for _, gone := range []string{`"conversation":"dm:`, `"name":"secret` + adaLogin, `"login":"` + carlLogin, `"login":"` + botLogin} {
		if strings.Contains(lines, gone) {
			t.Errorf("the export of %s holds %s", room, gone)
		}
	}
	run(t, append([]string{"import", "killrchat", roomExport}, cassandraFlags(ksC)...)...)
	dbC := openStore(t, ksC)
	if _, err := dbC.Room(ctx, "secret"+adaLogin); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("the room's import made the other room too (%v)", err)
	}
	if _, err := dbC.User(ctx, carlLogin); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("the room's import made %s, who is not its member (%v)", carlLogin, err)
	}
	c, baseC, err := cmdtest.StartReady(testLog(t), cmdtest.Flags(ksC, sessionKey)...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The messages, that is: the side bar lists bob's DM only on the
	// whole site.
	listA, _ := page(t, logIn(t, baseA, bobLogin), baseA+"/rooms/"+room).Find("#messages").Html()
	listC, _ := page(t, logIn(t, baseC, bobLogin), baseC+"/rooms/"+room).Find("#messages").Html()
	if listA == "" || withoutTokens(listA) != withoutTokens(listC) {
		t.Errorf("the room restored alone shows other messages:\n%s", firstDifference(withoutTokens(listA), withoutTokens(listC)))
	}

	// Run again (after the visits above moved bob's markers on): nothing
	// doubles, nothing moves back, the export is the same.
	before := filepath.Join(dir, "before.jsonl")
	run(t, append([]string{"export", "--full-backup", "--out", before}, cassandraFlags(ksB)...)...)
	run(t, append([]string{"import", "killrchat", exportA}, cassandraFlags(ksB)...)...)
	run(t, append([]string{"export", "--full-backup", "--out", exportB}, cassandraFlags(ksB)...)...)
	if x, y := string(mustRead(t, before)), string(mustRead(t, exportB)); x != y {
		t.Errorf("importing the export again changed the site: %s", firstDifference(x, y))
	}
}

func newClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func clip(b []byte) string {
	if len(b) > 3000 {
		return string(b[:3000]) + "…"
	}
	return string(b)
}

func sortedLogins(a, b string) []string {
	if a < b {
		return []string{a, b}
	}
	return []string{b, a}
}

// firstDifference shows where two texts part.
func firstDifference(x, y string) string {
	i := 0
	for i < len(x) && i < len(y) && x[i] == y[i] {
		i++
	}
	from := max(i-200, 0)
	return fmt.Sprintf("at byte %d:\n%s\n----\n%s", i, x[from:min(i+300, len(x))], y[from:min(i+300, len(y))])
}

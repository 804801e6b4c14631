// This file owns the import of a Slack workspace export: its zip read in
// place (nothing is extracted to disk), every entry bounded, people made
// into accounts that wait to be claimed, channels into rooms, DMs and
// group DMs into DMs, and each day's messages written with ids made from
// their Slack timestamps, so that a second run, or a run after a kill,
// writes the same rows again and nothing twice.

package moving

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/killrchat/killrchat/chat"
	"golang.org/x/sync/errgroup"
)

// Bounds on what an import reads of a zip: larger entries are refused
// (a zip bomb, or not a Slack export), so memory stays bounded whatever
// the zip says of itself.
const (
	// MaxSlackListBytes bounds users.json, channels.json and the like.
	MaxSlackListBytes = 256 << 20
	// MaxSlackDayBytes bounds one conversation's day of messages.
	MaxSlackDayBytes = 64 << 20
	// MaxSlackEntries bounds the entries of the zip.
	MaxSlackEntries = 2_000_000
	// slackParallel is how many conversations are written at once.
	slackParallel = 8
	// maxThreadParents bounds the thread parents an import remembers
	// per conversation (their excerpt, for the replies' quotes).
	maxThreadParents = 200_000
)

// SlackOptions say where an import keeps its progress and who hears it.
type SlackOptions struct {
	// Journal remembers the days already written, so a run after a kill
	// skips them; nil: every day is written again (the same rows).
	Journal Journal
	// Progress, if set, is told the counts and the bytes of messages
	// read of the total now and then.
	Progress func(n Counts, done, total int64)
}

// Journal is the progress of an import, kept between runs; its methods
// are called from several goroutines at once.
type Journal interface {
	Done(key string) bool
	Mark(key string) error
}

// SlackReport is what an import did.
type SlackReport struct {
	Counts
	Bots int
	// Renames are the logins and room names that could not be Slack's
	// own, with why.
	Renames []Rename
	// Skipped counts what was left out, by reason.
	Skipped map[string]int
}

// Rename is one name changed on the way in.
type Rename struct {
	What, From, To, Why string
}

type slackUser struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Deleted   bool   `json:"deleted"`
	RealName  string `json:"real_name"`
	IsBot     bool   `json:"is_bot"`
	IsAppUser bool   `json:"is_app_user"`
	Updated   int64  `json:"updated"`
	Profile   struct {
		RealName    string `json:"real_name"`
		DisplayName string `json:"display_name"`
		FirstName   string `json:"first_name"`
		LastName    string `json:"last_name"`
		Email       string `json:"email"`
		Title       string `json:"title"`
		BotID       string `json:"bot_id"`
	} `json:"profile"`
}

type slackText struct {
	Value string `json:"value"`
}

type slackChannel struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Created    int64     `json:"created"`
	Creator    string    `json:"creator"`
	IsArchived bool      `json:"is_archived"`
	Members    []string  `json:"members"`
	Topic      slackText `json:"topic"`
	Purpose    slackText `json:"purpose"`
}

type slackMessage struct {
	Type     string `json:"type"`
	Subtype  string `json:"subtype"`
	User     string `json:"user"`
	BotID    string `json:"bot_id"`
	Username string `json:"username"`
	Text     string `json:"text"`
	TS       string `json:"ts"`
	ThreadTS string `json:"thread_ts"`
	Edited   *struct {
		User string `json:"user"`
		TS   string `json:"ts"`
	} `json:"edited"`
	Reactions []struct {
		Name  string   `json:"name"`
		Users []string `json:"users"`
	} `json:"reactions"`
	Files []struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		Title      string `json:"title"`
		URLPrivate string `json:"url_private"`
		Permalink  string `json:"permalink"`
		Mode       string `json:"mode"`
	} `json:"files"`
	Topic   string `json:"topic"`
	Purpose string `json:"purpose"`
	Name    string `json:"name"`
}

// slackConversation is a channel, private channel, DM or group DM on its
// way in: where its messages go and its folder in the zip.
type slackConversation struct {
	folder  string
	place   chat.Place
	url     string
	members []string // logins
}

type slackImport struct {
	t      Target
	zr     *zip.Reader
	opts   SlackOptions
	files  map[string]*zip.File
	report SlackReport
	users  map[string]chat.UserRef // by Slack id
	// bots are the bot accounts by Slack bot id (B…): those of
	// users.json, and those made for integrations that have no user
	// (made as their first message comes, under botMu).
	bots    map[string]chat.UserRef
	botMu   sync.Mutex
	rooms   map[string]string // room name by Slack channel id
	convs   []slackConversation
	done    int64
	total   int64
	last    time.Time
	imports map[string]bool // logins this import made
	// mu guards report, done and last once conversations are written
	// at once.
	mu sync.Mutex
}

// ImportSlack imports the Slack export zr into t.
func ImportSlack(ctx context.Context, t Target, zr *zip.Reader, opts SlackOptions) (SlackReport, error) {
	s := &slackImport{t: t, zr: zr, opts: opts, files: map[string]*zip.File{}, users: map[string]chat.UserRef{}, bots: map[string]chat.UserRef{},
		rooms: map[string]string{}, imports: map[string]bool{}, report: SlackReport{Skipped: map[string]int{}}}
	if err := s.index(); err != nil {
		return s.report, err
	}
	if err := s.people(ctx); err != nil {
		return s.report, err
	}
	if err := s.conversations(ctx); err != nil {
		return s.report, err
	}
	// Conversations are written several at once: a day of a channel is
	// a few round trips one after the other, which one conversation at a
	// time would wait for in turn.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(slackParallel)
	for _, c := range s.convs {
		g.Go(func() error { return s.messages(gctx, c) })
	}
	if err := g.Wait(); err != nil {
		return s.report, err
	}
	s.progress(true)
	return s.report, nil
}

// slackLists are the export's lists.
var slackLists = map[string]bool{"users.json": true, "channels.json": true, "groups.json": true, "dms.json": true, "mpims.json": true}

// slackDay is a day file's name: YYYY-MM-DD.json.
var slackDay = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}\.json$`)

// index lists the zip's entries, refusing a zip whose paths leave its
// folder, and finds where the export's folder starts.
func (s *slackImport) index() error {
	if len(s.zr.File) > MaxSlackEntries {
		return fmt.Errorf("the zip holds %d entries, more than the %d an export may: refused", len(s.zr.File), MaxSlackEntries)
	}
	prefix := ""
	for _, f := range s.zr.File {
		name := f.Name
		if strings.Contains(name, `\`) || strings.HasPrefix(name, "/") || strings.Contains(name, "\x00") {
			return fmt.Errorf("the zip holds the path %q, which is not a relative path: refused", name)
		}
		for _, part := range strings.Split(name, "/") {
			if part == ".." {
				return fmt.Errorf("the zip holds the path %q, which leaves its folder: refused", name)
			}
		}
		if path.Base(name) == "users.json" && (prefix == "" || len(path.Dir(name)) < len(prefix)) {
			prefix = strings.TrimPrefix(path.Dir(name)+"/", "./")
		}
	}
	if prefix == "./" || prefix == "/" {
		prefix = ""
	}
	for _, f := range s.zr.File {
		if rel, ok := strings.CutPrefix(f.Name, prefix); ok {
			s.files[rel] = f
		}
	}
	if s.files["users.json"] == nil {
		return errors.New("the zip has no users.json: it is not a Slack workspace export")
	}
	// What the zip says of its sizes is checked before anything is
	// written; what it hides (a header that understates) is caught as it
	// is read (boundedReader, and archive/zip's own count).
	for rel, f := range s.files {
		limit := int64(0)
		if dir, base := path.Split(rel); dir != "" && slackDay.MatchString(base) {
			limit = MaxSlackDayBytes
			s.total += int64(f.UncompressedSize64)
		} else if slackLists[rel] {
			limit = MaxSlackListBytes
		}
		if limit > 0 && f.UncompressedSize64 > uint64(limit) {
			return fmt.Errorf("%s is %d bytes uncompressed, more than the %d an export's file may be (a zip bomb?): refused", rel, f.UncompressedSize64, limit)
		}
	}
	return nil
}

// open reads entry name, at most limit bytes of it whatever its header
// says.
func (s *slackImport) open(name string, limit int64) (io.ReadCloser, error) {
	f := s.files[name]
	if f == nil {
		return nil, nil
	}
	if f.UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("%s is %d bytes uncompressed, more than the %d an export's file may be (a zip bomb?): refused", name, f.UncompressedSize64, limit)
	}
	r, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &boundedReader{r: r, left: limit, name: name, limit: limit}, nil
}

// boundedReader fails once more than limit bytes come out: a zip entry
// whose header understates its size.
type boundedReader struct {
	r     io.ReadCloser
	left  int64
	name  string
	limit int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%s holds more than %d bytes uncompressed (a zip bomb?): refused", b.name, b.limit)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if errors.Is(err, zip.ErrFormat) || errors.Is(err, zip.ErrChecksum) {
		return n, fmt.Errorf("%s holds other bytes than its header says (a zip bomb, or a damaged zip): refused: %w", b.name, errZipLies)
	}
	return n, err
}

// errZipLies is a zip entry that is not what its header says.
var errZipLies = errors.New("the zip is not what it says it is")

func (b *boundedReader) Close() error { return b.r.Close() }

// eachElement decodes the JSON array in entry name one element at a time
// into a fresh T; a missing entry has none.
func eachElement[T any](s *slackImport, name string, limit int64, each func(T) error) error {
	r, err := s.open(name, limit)
	if err != nil || r == nil {
		return err
	}
	defer r.Close()
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		if err != nil && (errors.Is(err, errZipLies) || strings.Contains(err.Error(), "(a zip bomb?)")) {
			return err
		}
		return fmt.Errorf("%s is not a JSON array: malformed", name)
	}
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return decodeError(name, dec, err)
		}
		if err := each(v); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return decodeError(name, dec, err)
	}
	return nil
}

// decodeError says what stopped the decoding of entry name: the zip
// (refused whole), or the JSON (malformed: a day file's rest is
// skipped).
func decodeError(name string, dec *json.Decoder, err error) error {
	if errors.Is(err, errZipLies) || strings.Contains(err.Error(), "(a zip bomb?)") {
		return err
	}
	return fmt.Errorf("%s, near byte %d: %w: malformed", name, dec.InputOffset(), err)
}

// people makes an account of every Slack user: deactivated until claimed
// by a reset link (chat.AccountUnclaimed), under their Slack name made a
// login, renamed when it is not one or is taken; a bot user (is_bot, an
// app, Slackbot) is a bot account (chat.KindBot), active, listed among
// the site's bots without a token until an administrator makes one.
func (s *slackImport) people(ctx context.Context) error {
	taken := map[string]bool{}
	return eachElement(s, "users.json", MaxSlackListBytes, func(u slackUser) error {
		if u.ID == "" {
			s.report.Skipped["a user without an id"]++
			return nil
		}
		first, last := splitName(u)
		bot := u.IsBot || u.IsAppUser || u.ID == "USLACKBOT"
		bio, kind, status, email := oneLine(u.Profile.Title, 200), chat.KindPerson, chat.AccountUnclaimed, strings.TrimSpace(u.Profile.Email)
		if bot {
			bio, kind, status, email = "A Slack bot, imported.", chat.KindBot, chat.AccountActive, ""
		}
		created := time.Unix(u.Updated, 0).UTC()
		if u.Updated <= 0 {
			created = time.Unix(0, 0).UTC()
		}
		base, why := loginOf(u.Name, u.ID)
		for n := 1; ; n++ {
			login := withSuffix(base, n)
			if taken[login] {
				continue
			}
			acct := chat.User{Login: login, DisplayLogin: login, Firstname: first, Lastname: last,
				Email: email, Bio: bio, CreatedAt: created, Status: status, Kind: kind}
			_, err := s.t.RestoreUser(ctx, acct, "")
			if errors.Is(err, chat.ErrUserExists) {
				why = "the login was taken on this site"
				continue
			}
			if err != nil {
				return err
			}
			taken[login] = true
			if login != u.Name {
				if n > 1 && why == "" {
					why = "another Slack user has it"
				}
				s.report.Renames = append(s.report.Renames, Rename{What: "user " + u.ID, From: u.Name, To: login, Why: why})
			}
			s.users[u.ID] = acct.Ref()
			s.imports[login] = true
			s.report.People++
			if bot {
				s.report.Bots++
				if u.Profile.BotID != "" {
					s.bots[u.Profile.BotID] = acct.Ref()
				}
			}
			return nil
		}
	})
}

func splitName(u slackUser) (string, string) {
	first, last := oneLine(u.Profile.FirstName, 60), oneLine(u.Profile.LastName, 60)
	if first == "" && last == "" {
		real := oneLine(strings.TrimSpace(u.Profile.RealName+" "), 120)
		if real == "" {
			real = oneLine(u.RealName, 120)
		}
		first, last, _ = strings.Cut(real, " ")
	}
	if first == "" {
		first = oneLine(u.Name, 60)
	}
	return first, strings.TrimSpace(last)
}

// oneLine is s on one line, without control characters, at most n
// characters.
func oneLine(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n])
	}
	return s
}

var notNameChar = regexp.MustCompile(`[^a-z0-9_.-]+`)

// loginOf makes a Slack name a login ([a-zA-Z0-9][a-zA-Z0-9_.-]{2,30},
// lower case), saying why it changed it ("" if it did not); fallback
// (the Slack id) stands in for a name with nothing usable.
func loginOf(name, fallback string) (string, string) {
	l := strings.ToLower(strings.TrimSpace(name))
	why := ""
	if cleaned := notNameChar.ReplaceAllString(l, "-"); cleaned != l {
		l, why = cleaned, "it holds characters a login may not"
	}
	if trimmed := strings.TrimLeft(l, "_.-"); trimmed != l {
		l, why = trimmed, "a login starts with a letter or digit"
	}
	if len(l) > 28 {
		l, why = strings.TrimRight(l[:28], "_.-"), "a login has at most 31 characters"
	}
	if l == "" {
		l, why = notNameChar.ReplaceAllString(strings.ToLower(fallback), ""), "the name has nothing a login may hold"
	}
	for len(l) < 3 {
		l, why = l+"0", "a login has at least 3 characters"
	}
	if why == "" && l != name {
		why = "a login is lower case here"
	}
	return l, why
}

// withSuffix is the nth candidate of a name: itself, then name-2, …
func withSuffix(base string, n int) string {
	if n == 1 {
		return base
	}
	return base + "-" + strconv.Itoa(n)
}

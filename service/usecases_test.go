package service_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/service/storagetest"
)

// This file tests the use cases of messages over the in-memory storage
// (storagetest.Memory, held to the same contract as Cassandra): what each
// decides, writes and publishes, with no database.

// rest is the part of service.Storage that Memory does not keep: one
// level deeper than Memory, so Memory's methods win, and a use case that
// reaches anything else panics on the nil interface.
type rest struct{ service.Storage }

// memStorage is Memory, with the mentions, DM lists and accounts that the
// use cases of messages write beside a message recorded, not stored.
type memStorage struct {
	*storagetest.Memory
	rest

	mu       sync.Mutex
	dmLists  []chat.ID // messages recorded in DM lists
	mentions []chat.ID // messages whose mentions were recorded or updated
	forgot   []chat.ID
	accounts map[string]chat.UserRef
}

func (s *memStorage) Mentionable(_ context.Context, in chat.Place, _ ...string) (chat.Conversation, error) {
	return in.Conversation(), nil
}

func (s *memStorage) RecordDMMessage(ctx context.Context, d chat.DM, m chat.Message) error {
	s.mu.Lock()
	s.dmLists = append(s.dmLists, m.ID)
	s.mu.Unlock()
	return s.Memory.RecordDMMessage(ctx, d, m)
}

func (s *memStorage) RecordMentions(_ context.Context, _ chat.Conversation, m chat.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mentions = append(s.mentions, m.ID)
	return nil
}

func (s *memStorage) UpdateMentions(_ context.Context, _ chat.Conversation, _, after chat.Message) error {
	return s.RecordMentions(context.Background(), chat.Conversation{}, after)
}

func (s *memStorage) ForgetMessage(_ context.Context, _ chat.Place, m chat.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgot = append(s.forgot, m.ID)
	return nil
}

func (s *memStorage) UserRefs(_ context.Context, logins []string) ([]chat.UserRef, error) {
	var refs []chat.UserRef
	for _, l := range logins {
		if u, ok := s.accounts[l]; ok {
			refs = append(refs, u)
		}
	}
	return refs, nil
}

// bus keeps what the use cases publish outside a sequence (the reads a
// person's other tabs hear of); the rest of service.Bus is not used here.
type bus struct {
	service.Bus
	mu     sync.Mutex
	events []live.Event
}

func (b *bus) Publish(_ context.Context, ev live.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, ev)
	return nil
}

func (b *bus) published() []live.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]live.Event(nil), b.events...)
}

// sequencer reserves in call order and keeps what was published.
type sequencer struct {
	mu        sync.Mutex
	published []*live.Slot
	dropped   int
}

func (q *sequencer) Reserve(_ string, draft func() (chat.Message, error)) (*live.Slot, error) {
	m, err := draft()
	if err != nil {
		return nil, err
	}
	return &live.Slot{Msg: m}, nil
}

func (q *sequencer) Finish(sl *live.Slot, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ok {
		q.published = append(q.published, sl)
	} else {
		q.dropped++
	}
}

// events are the published slots' kinds and HTML.
func (q *sequencer) events() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, sl := range q.published {
		kind := sl.Kind
		if kind == "" {
			kind = live.KindMessage
		}
		out = append(out, kind+": "+string(sl.HTML))
	}
	return out
}

// renderer renders events as short text.
type renderer struct{}

func (renderer) Message(_ context.Context, _ chat.Conversation, m chat.Message) ([]byte, error) {
	return []byte(m.Content), nil
}
func (renderer) Event(context.Context, live.Event) ([]byte, error) { return nil, nil }
func (renderer) Edited(_ context.Context, _ chat.Conversation, m chat.Message) ([]byte, error) {
	return []byte(m.Content), nil
}
func (renderer) Deleted(m chat.Message) []byte { return []byte(m.ID.String()) }
func (renderer) Reaction(ch chat.Change) ([]byte, error) {
	if ch.Added {
		return []byte("+" + ch.Emoji), nil
	}
	return []byte("-" + ch.Emoji), nil
}

// indexer keeps what was queued for the search index.
type indexer struct {
	mu     sync.Mutex
	queued []string
}

func (ix *indexer) Index(_ chat.Conversation, m chat.Message) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.queued = append(ix.queued, "index "+m.Content)
}

func (ix *indexer) Reindex(_ chat.Conversation, old, updated *chat.Message) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	switch {
	case updated == nil:
		ix.queued = append(ix.queued, "drop "+old.Content)
	default:
		ix.queued = append(ix.queued, "reindex "+old.Content+" -> "+updated.Content)
	}
}

type fixture struct {
	svc      *service.Service
	db       *memStorage
	seq      *sequencer
	ix       *indexer
	bus      *bus
	dm       chat.DM
	ada, bob chat.UserRef
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ada, bob := chat.UserRef{Login: "ada", Firstname: "Ada"}, chat.UserRef{Login: "bob", Firstname: "Bob"}
	f := &fixture{
		db:  &memStorage{Memory: storagetest.NewMemory(), accounts: map[string]chat.UserRef{"ada": ada, "bob": bob}},
		seq: &sequencer{}, ix: &indexer{}, bus: &bus{}, ada: ada, bob: bob,
		dm: chat.DM{Address: "ada+bob", Members: []chat.UserRef{ada, bob}},
	}
	f.svc = service.New(service.Deps{Storage: f.db, Sequencer: f.seq, Renderer: renderer{}, Indexer: f.ix, Bus: f.bus,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return f
}

// post has ada post content in the DM through the use case.
func (f *fixture) post(t *testing.T, content string) chat.Message {
	t.Helper()
	m, html, err := f.svc.PostText(context.Background(), service.TextPost{In: f.dm, Author: f.ada, Content: content})
	if err != nil {
		t.Fatalf("post %q: %v", content, err)
	}
	if string(html) != content {
		t.Fatalf("post %q answered with HTML %q", content, html)
	}
	return m
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPostText(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.post(t, "hello @bob")
	if got, err := f.db.Message(context.Background(), f.dm, m.ID); err != nil || got.Content != "hello @bob" {
		t.Fatalf("stored: %+v, %v", got, err)
	}
	if want := []string{"message: hello @bob"}; !equal(f.seq.events(), want) {
		t.Fatalf("published %q, want %q", f.seq.events(), want)
	}
	if len(f.db.dmLists) != 1 || len(f.db.mentions) != 1 || !equal(f.ix.queued, []string{"index hello @bob"}) {
		t.Fatalf("DM lists %v, mentions %v, index %q: want one each", f.db.dmLists, f.db.mentions, f.ix.queued)
	}

	t.Run("Refused", func(t *testing.T) {
		_, _, err := f.svc.PostText(context.Background(), service.TextPost{In: f.dm, Author: chat.UserRef{Login: "cy"}, Content: "hi"})
		if !errors.Is(err, chat.ErrNotParticipant) {
			t.Fatalf("a post by someone outside the DM: %v, want ErrNotParticipant", err)
		}
		if _, _, err := f.svc.PostText(context.Background(), service.TextPost{In: f.dm, Author: f.ada, Content: " "}); !errors.Is(err, chat.ErrInvalid) {
			t.Fatalf("a blank post: %v, want ErrInvalid", err)
		}
		if n := len(f.seq.events()); n != 1 {
			t.Fatalf("%d events after refused posts, want the first post's only", n)
		}
	})
}

func TestEditMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.post(t, "frist")

	if _, err := f.svc.EditMessage(context.Background(), f.dm, m, f.bob.Login, "bob's"); !errors.Is(err, chat.ErrNotAuthor) {
		t.Fatalf("bob edits ada's message: %v, want ErrNotAuthor", err)
	}
	if _, err := f.svc.EditMessage(context.Background(), f.dm, m, f.ada.Login, ""); !errors.Is(err, chat.ErrInvalid) {
		t.Fatalf("an edit to nothing: %v, want ErrInvalid", err)
	}
	if f.seq.dropped != 1 {
		t.Fatalf("%d slots dropped, want 1: the invalid edit's, once reserved", f.seq.dropped)
	}
	edited, err := f.svc.EditMessage(context.Background(), f.dm, m, f.ada.Login, "first")
	if err != nil {
		t.Fatalf("edit: %v", err)
	}
	if got, _ := f.db.Message(context.Background(), f.dm, m.ID); got.Content != "first" || got.Edited != edited.Edited {
		t.Fatalf("stored after the edit: %+v", got)
	}
	if want := []string{"message: frist", "edit: first"}; !equal(f.seq.events(), want) {
		t.Fatalf("published %q, want %q", f.seq.events(), want)
	}
	if want := []string{"index frist", "reindex frist -> first"}; !equal(f.ix.queued, want) {
		t.Fatalf("index %q, want %q", f.ix.queued, want)
	}
}

func TestDeleteMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.post(t, "oops")
	if err := f.svc.DeleteMessage(context.Background(), f.dm, m, f.bob.Login); !errors.Is(err, chat.ErrNotAuthor) {
		t.Fatalf("bob deletes ada's message in a DM: %v, want ErrNotAuthor", err)
	}
	if err := f.svc.DeleteMessage(context.Background(), f.dm, m, f.ada.Login); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := f.db.Message(context.Background(), f.dm, m.ID); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("read after the delete: %v, want ErrNotFound", err)
	}
	if want := []string{"message: oops", "delete: " + m.ID.String()}; !equal(f.seq.events(), want) {
		t.Fatalf("published %q, want %q", f.seq.events(), want)
	}
	if len(f.db.forgot) != 1 || !equal(f.ix.queued, []string{"index oops", "drop oops"}) {
		t.Fatalf("forgot %v, index %q", f.db.forgot, f.ix.queued)
	}
}

func TestReact(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.post(t, "vote")
	if err := f.svc.React(context.Background(), f.dm, m.ID, f.bob, "👍", true); err != nil {
		t.Fatalf("react: %v", err)
	}
	if err := f.svc.React(context.Background(), f.dm, m.ID, f.bob, "👍", false); err != nil {
		t.Fatalf("take back: %v", err)
	}
	for name, id := range map[string]chat.ID{
		"NoSuchMessage":     f.db.NewChangeID(),
		"BeforeTheDMBegins": chat.MinIDAt(chat.DMEpoch.AddDate(0, 0, -1)),
	} {
		if err := f.svc.React(context.Background(), f.dm, id, f.bob, "👍", true); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
	if want := []string{"message: vote", "reaction: +👍", "reaction: -👍"}; !equal(f.seq.events(), want) {
		t.Fatalf("published %q, want %q", f.seq.events(), want)
	}
}

func TestMarkRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	older, newer := f.post(t, "one"), f.post(t, "two")
	conv := f.dm.Conversation()
	if err := f.svc.MarkRead(context.Background(), "cy", conv, newer.ID); !errors.Is(err, chat.ErrNotParticipant) {
		t.Fatalf("cy marks a DM she is not in: %v, want ErrNotParticipant", err)
	}
	f.svc.MarkShown(context.Background(), f.bob.Login, conv, []chat.Message{older, newer}, chat.ID{})
	if evs := f.bus.published(); len(evs) != 1 || evs[0].Kind != live.KindUnread || evs[0].Conversation != live.PersonalKey(f.bob.Login) {
		t.Fatalf("marking shown published %+v, want one unread event to bob's other tabs", evs)
	}
	if err := f.svc.MarkRead(context.Background(), f.bob.Login, conv, older.ID); err != nil {
		t.Fatalf("mark read: %v", err)
	}
	if got, _ := f.db.Marker(context.Background(), f.bob.Login, conv.ID); got != newer.ID {
		t.Fatalf("marker %v, want the newest shown %v: an older mark moves nothing back", got, newer.ID)
	}
}

func TestStartDM(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if got, err := f.svc.StartDM(context.Background(), "bob", []string{"ada"}); err != nil || got != "ada+bob" {
		t.Fatalf("start: %q, %v", got, err)
	}
	for name, c := range map[string]struct {
		logins []string
		want   error
	}{
		"Nobody":      {nil, chat.ErrInvalid},
		"Malformed":   {[]string{"a b"}, chat.ErrInvalid},
		"NoAccount":   {[]string{"zed"}, chat.ErrNotFound},
		"TooManyOfUs": {[]string{"a1", "b1", "c1", "d1", "e1", "f1", "g1", "h1", "i1"}, chat.ErrInvalid},
	} {
		if _, err := f.svc.StartDM(context.Background(), "ada", c.logins); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// passwords keeps each person's password and sessions, as the accounts'
// and sessions' tables do, for the password's use case.
type passwords struct {
	memStorage
	password map[string]string
	sessions map[string][]string
}

func (p *passwords) ChangePassword(_ context.Context, login, old, password, confirm string) error {
	if p.password[login] != old {
		return chat.ValidationError{"old_password": "This is not your current password."}
	}
	v := chat.ValidationError{}
	chat.CheckPassword(v, password, confirm)
	if err := v.Err(); err != nil {
		return err
	}
	p.password[login] = password
	return nil
}

func (p *passwords) EndOtherSessions(_ context.Context, login, keep string) ([]string, error) {
	var ended []string
	for _, id := range p.sessions[login] {
		if id != keep {
			ended = append(ended, id)
		}
	}
	p.sessions[login] = []string{keep}
	return ended, nil
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	db := &passwords{memStorage: memStorage{Memory: f.db.Memory, accounts: f.db.accounts},
		password: map[string]string{"ada": "old secret 1"}, sessions: map[string][]string{"ada": {"phone", "laptop", "here"}}}
	svc := service.New(service.Deps{Storage: db, Bus: f.bus, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	for name, try := range map[string][3]string{
		"WrongOld":   {"guess", "new secret 22", "new secret 22"},
		"Mismatched": {"old secret 1", "new secret 22", "new secret 23"},
	} {
		if ended, err := svc.ChangePassword(ctx, "ada", "here", try[0], try[1], try[2]); !errors.Is(err, chat.ErrInvalid) || ended != nil {
			t.Errorf("%s: ended %q, %v; want a ValidationError and nothing ended", name, ended, err)
		}
	}
	if db.password["ada"] != "old secret 1" || len(db.sessions["ada"]) != 3 {
		t.Fatalf("a refused change changed %q, sessions %q", db.password["ada"], db.sessions["ada"])
	}
	ended, err := svc.ChangePassword(ctx, "ada", "here", "old secret 1", "new secret 22", "new secret 22")
	if err != nil {
		t.Fatal(err)
	}
	if db.password["ada"] != "new secret 22" || !equal(ended, []string{"phone", "laptop"}) || !equal(db.sessions["ada"], []string{"here"}) {
		t.Fatalf("after the change: password %q, ended %q, left %q", db.password["ada"], ended, db.sessions["ada"])
	}
}

// pictures keeps who has a picture, as the avatars' table does.
type pictures struct {
	memStorage
	has map[string]bool
}

func (p *pictures) SetAvatar(_ context.Context, user chat.UserRef, body io.Reader, limit int64) (chat.Avatar, error) {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return chat.Avatar{}, err
	}
	if int64(len(b)) > limit {
		return chat.Avatar{}, chat.ErrTooLarge
	}
	p.has[user.Login] = true
	return chat.Avatar{Large: p.NewChangeID(), Small: p.NewChangeID()}, nil
}

func (p *pictures) RemoveAvatar(_ context.Context, login string) error {
	if login == "broken" {
		return errors.New("storage down")
	}
	delete(p.has, login)
	return nil
}

// invalidations keeps the caches' invalidations the use cases send.
type invalidations struct {
	bus
	sent []live.Invalidation
}

func (b *invalidations) Invalidate(_ context.Context, inv live.Invalidation) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, inv)
	return nil
}

// versions are an instance's versions of people's pictures.
type versions map[string]string

func (v versions) Apply(changes map[string]string) {
	for login, version := range changes {
		v[login] = version
	}
}

func TestAvatar(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	db := &pictures{memStorage: memStorage{Memory: f.db.Memory}, has: map[string]bool{}}
	b := &invalidations{}
	here := versions{}
	svc := service.New(service.Deps{Storage: db, Bus: b, Pictures: here, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	if _, err := svc.SetAvatar(ctx, f.ada, strings.NewReader("too big"), 3); !errors.Is(err, chat.ErrTooLarge) || len(b.sent) != 0 || len(here) != 0 {
		t.Fatalf("a refused picture: %v, invalidations %+v, here %v; want ErrTooLarge and nothing told", err, b.sent, here)
	}
	av, err := svc.SetAvatar(ctx, f.ada, strings.NewReader("png"), 3)
	if err != nil {
		t.Fatal(err)
	}
	if !db.has["ada"] || here["ada"] != av.Version() || len(b.sent) != 1 || b.sent[0].Avatars["ada"] != av.Version() || !equal(b.sent[0].Users, []string{"ada"}) {
		t.Fatalf("after the upload: has %v, here %v, invalidations %+v", db.has, here, b.sent)
	}

	t.Run("Remove", func(t *testing.T) {
		if err := svc.RemoveAvatar(ctx, "broken"); err == nil || len(b.sent) != 1 {
			t.Fatalf("a failed removal: %v, invalidations %+v; want the error and none more", err, b.sent)
		}
		if err := svc.RemoveAvatar(ctx, "ada"); err != nil {
			t.Fatal(err)
		}
		last := b.sent[len(b.sent)-1]
		if db.has["ada"] || here["ada"] != "" || len(b.sent) != 2 || last.Avatars["ada"] != "" || len(last.Avatars) != 1 {
			t.Fatalf("after the removal: has %v, here %v, invalidations %+v", db.has, here, b.sent)
		}
	})
}

// invites keeps the links made and revoked, as the invitations' tables
// do; only an admin (ada) may revoke.
type invites struct {
	memStorage
	made, revoked []string
}

func (v *invites) CreateInvite(_ context.Context, actor chat.UserRef, room string, f chat.NewInvite) (string, chat.Invite, error) {
	if err := f.Validate(); err != nil {
		return "", chat.Invite{}, err
	}
	v.made = append(v.made, room)
	return "token-" + room, chat.Invite{ID: "i1", Room: room, CreatedBy: actor}, nil
}

func (v *invites) RevokeInvite(_ context.Context, actor, room, id string) error {
	if actor != "ada" {
		return chat.ErrNotCreator
	}
	v.revoked = append(v.revoked, room+"/"+id)
	return nil
}

func TestInvites(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	db := &invites{memStorage: memStorage{Memory: f.db.Memory}}
	svc := service.New(service.Deps{Storage: db, Bus: f.bus, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	if _, err := svc.CreateInvite(ctx, f.ada, "garden", chat.NewInvite{MaxUses: -1}); !errors.Is(err, chat.ErrInvalid) || len(db.made) != 0 {
		t.Fatalf("a bad form: %v, made %v", err, db.made)
	}
	token, err := svc.CreateInvite(ctx, f.ada, "garden", chat.NewInvite{TTL: 24 * time.Hour})
	if err != nil || token != "token-garden" || len(db.made) != 1 {
		t.Fatalf("a link: %q, %v (made %v)", token, err, db.made)
	}
	if err := svc.RevokeInvite(ctx, "bob", "garden", "i1"); !errors.Is(err, chat.ErrNotCreator) || len(db.revoked) != 0 {
		t.Fatalf("a revocation by bob: %v, revoked %v", err, db.revoked)
	}
	if err := svc.RevokeInvite(ctx, "ada", "garden", "i1"); err != nil || !equal(db.revoked, []string{"garden/i1"}) {
		t.Fatalf("a revocation by ada: %v, revoked %v", err, db.revoked)
	}
}

package views

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// pageMessages are 50 messages as a busy room's page shows them: a few
// authors, Markdown, links, mentions, an edit and reactions.
func pageMessages() ([]chat.Message, map[string]chat.UserRef) {
	members := map[string]chat.UserRef{}
	for _, l := range []string{"ada", "bob", "cyd", "dee"} {
		members[l] = chat.UserRef{Login: l, Firstname: strings.ToUpper(l[:1]) + l[1:], Lastname: "Test"}
	}
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	var ms []chat.Message
	for i := range 50 {
		author := members[[]string{"ada", "bob", "cyd", "dee"}[(i/3)%4]]
		m := chat.Message{ID: chat.IDAt(t0.Add(time.Duration(i) * 47 * time.Second)), Room: "lobby", Author: author,
			Content: fmt.Sprintf("message %d: **bold** and _soft_, see https://example.com/page/%d, @bob and @nobody", i, i)}
		if i%7 == 0 {
			m.Edited = chat.IDAt(t0.Add(time.Hour + time.Duration(i)*time.Second))
		}
		if i%5 == 0 {
			m.Reactions = []chat.Reaction{{Emoji: "👍", Reactor: members["ada"], Change: chat.IDAt(t0.Add(2 * time.Hour))},
				{Emoji: "🎉", Reactor: members["bob"], Change: chat.IDAt(t0.Add(2*time.Hour + time.Second))}}
		}
		ms = append(ms, m)
	}
	return ms, members
}

// avatarOfAda is the version of ada's picture the pages render with.
var avatarOfAda = ""

func readerContext(members map[string]chat.UserRef, viewer string) context.Context {
	ctx := WithAvatars(context.Background(), func(login string) string {
		if login == "ada" {
			return avatarOfAda
		}
		return ""
	})
	ctx = WithMembers(ctx, members)
	ctx = WithViewer(ctx, viewer)
	return WithCSRF(ctx, "csrf-token-of-"+viewer)
}

// BenchmarkMessageList is the message list of a room page (50 messages)
// rendered for one reader, as every page view does.
func BenchmarkMessageList(b *testing.B) {
	ms, members := pageMessages()
	ctx := readerContext(members, "bob")
	now := ms[len(ms)-1].Time().Add(time.Minute)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if err := messageMarks(ms, now, true, ms[40].ID, chat.ID{}).Render(ctx, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time, not wall time: the machine is shared.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// renderList renders the list of ms for viewer, with the shared-part
// cache at size bytes (0: off).
func renderList(t testing.TB, ms []chat.Message, members map[string]chat.UserRef, viewer string, size int64) string {
	t.Helper()
	old := SharedCacheBytes
	SharedCacheBytes = size
	defer func() { SharedCacheBytes = old }()
	var b strings.Builder
	now := ms[len(ms)-1].Time().Add(time.Minute)
	if err := messageMarks(ms, now, true, ms[40].ID, ms[3].ID).Render(readerContext(members, viewer), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSharedPartsAreExact: a page rendered from the shared parts is
// byte for byte the page rendered whole, for each reader (own mentions,
// own messages and reactions, CSRF field), for the stream (no reader,
// no token), after an edit and after the members change.
func TestSharedPartsAreExact(t *testing.T) {
	ms, members := pageMessages()
	ms[10].Attachment = &chat.AttachmentRef{ID: chat.IDAt(time.Now()), Name: "a.txt", Size: 12}
	check := func(name string, ms []chat.Message, members map[string]chat.UserRef) {
		t.Helper()
		for _, viewer := range []string{"bob", "ada", "", "bob"} {
			want := renderList(t, ms, members, viewer, 0)
			got := renderList(t, ms, members, viewer, 32<<20)
			if got != want {
				t.Errorf("%s, reader %q: the page from shared parts differs from the page rendered whole", name, viewer)
			}
		}
	}
	check("first", ms, members)
	ms[12].Content, ms[12].Edited = "edited: now @cyd and **@dee**", chat.IDAt(time.Now())
	check("edited", ms, members)
	delete(members, "bob")
	check("bob left", ms, members)
	members["nobody"] = chat.UserRef{Login: "nobody"}
	check("nobody joined", ms, members)
	members["bob"] = chat.UserRef{Login: "bob"}
	avatarOfAda = "v1"
	check("ada's new picture", ms, members)
	avatarOfAda = "v2"
	check("ada's next picture", ms, members)
	avatarOfAda = ""
	if n, _ := shared.stats(); n == 0 {
		t.Errorf("nothing was kept")
	}
	// Without a CSRF token (a stream's render): no field at all.
	var b strings.Builder
	if err := MessageItem(ms[0]).Render(WithMembers(context.Background(), members), &b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "_csrf") || strings.Contains(b.String(), csrfMarker) {
		t.Errorf("a stream's item carries a CSRF field: %s", b.String())
	}
}

// TestSharedCacheBound: the cache keeps no more bytes than its bound.
func TestSharedCacheBound(t *testing.T) {
	ms, members := pageMessages()
	renderList(t, ms, members, "ada", 20_000)
	old := SharedCacheBytes
	SharedCacheBytes = 20_000
	defer func() { SharedCacheBytes = old }()
	shared.put("x", &sharedEntry{key: "x", size: 1}, 1) // trims to the bound
	if _, size := shared.stats(); size > 20_000 {
		t.Errorf("cache holds %d bytes, bound 20000", size)
	}
}

// TestKeptListsAreExact: the list of a kept page, written from what was
// kept for its reader, is byte for byte the list rendered whole, for
// each reader, and after anything it looked up in the context changes
// (a picture, a closed account, a bot, the members its mentions name),
// which the same page key does not say.
func TestKeptListsAreExact(t *testing.T) {
	ms, members := pageMessages()
	closed, bots := map[string]string{}, map[string]bool{}
	now := ms[len(ms)-1].Time().Add(time.Minute)
	v := RoomView{Messages: ms, PageKey: 1 << 40, Now: now, FirstUnread: ms[40].ID}
	render := func(viewer string, kept bool) string {
		t.Helper()
		ctx := WithBots(WithClosed(readerContext(members, viewer), closed), bots)
		c := messageMarks(ms, now, true, v.FirstUnread, chat.ID{})
		if kept {
			c = keptList(v)
		}
		var b strings.Builder
		if err := c.Render(ctx, &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	check := func(name string) {
		t.Helper()
		for _, viewer := range []string{"bob", "ada", "", "bob", "ada"} {
			want := render(viewer, false)
			if got := render(viewer, true); got != want {
				t.Errorf("%s, reader %q: the kept list differs from the list rendered whole", name, viewer)
			}
		}
	}
	check("first")
	if n, _ := lists.stats(); n == 0 {
		t.Fatalf("no list was kept")
	}
	avatarOfAda = "v9"
	check("ada's new picture")
	avatarOfAda = ""
	closed["cyd"] = chat.AccountDeactivated
	check("cyd deactivated")
	bots["dee"] = true
	check("dee a bot")
	delete(members, "bob")
	check("bob left")
	members["nobody"] = chat.UserRef{Login: "nobody"}
	check("nobody joined")
	v.FirstUnread = ms[45].ID
	check("another first unread")
}

// BenchmarkKeptList is the message list of a room page written from
// what was kept for its reader (compare BenchmarkMessageList).
func BenchmarkKeptList(b *testing.B) {
	ms, members := pageMessages()
	ctx := readerContext(members, "bob")
	now := ms[len(ms)-1].Time().Add(time.Minute)
	v := RoomView{Messages: ms, PageKey: 1 << 41, Now: now, FirstUnread: ms[40].ID}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if err := keptList(v).Render(ctx, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkNewMessage is a post's render for the live stream: a message
// no page has shown yet (its shared parts are made), a plain line of
// text, for no reader.
func BenchmarkNewMessage(b *testing.B) {
	ms, members := pageMessages()
	ctx := readerContext(members, "")
	t0 := ms[len(ms)-1].Time()
	b.ReportAllocs()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		i++
		m := chat.Message{ID: chat.IDAt(t0.Add(time.Duration(i) * time.Microsecond)), Room: "lobby", Author: members["ada"],
			Content: fmt.Sprintf("load message %d from worker 3", i)}
		if err := MessageItem(m).Render(ctx, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

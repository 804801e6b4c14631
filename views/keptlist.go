// This file owns the kept lists: the message list of a conversation's
// newest page kept in memory (service/cache.Pages), rendered for one
// reader and kept, so that the next page of that reader over the same
// messages writes it as it is, in one piece, instead of rendering its 50
// items again. A writer that can take kept HTML by reference (a Blob:
// the page's gzip writer keeps its compressed form too) gets it so.
//
// No entry can be stale: its key is the kept page's read (the same key,
// the same messages, reactions included) and everything else the list
// is made of that is not in the context (the reader, their CSRF token,
// the day, the "new since" and highlighted messages); what it looked up
// in the context (pictures, closed accounts, bots, the members its
// mentions name) is recorded with the answers, and an entry is used only
// while each of them gives the same answer.

package views

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/a-h/templ"
	templruntime "github.com/a-h/templ/runtime"

	"github.com/killrchat/killrchat/chat"
)

// KeptListBytes bounds the HTML of the lists kept; 0 turns keeping off.
// Set it before serving.
var KeptListBytes int64 = 16 << 20

// Blob is HTML kept to be written as it is into many pages. A writer
// may keep what it makes of it once (Packed), as the page's gzip writer
// keeps its compressed form.
type Blob struct {
	HTML   []byte
	once   sync.Once
	packed []byte
}

// Packed is pack(b.HTML), made on the first call and kept.
func (b *Blob) Packed(pack func([]byte) []byte) []byte {
	b.once.Do(func() { b.packed = pack(b.HTML) })
	return b.packed
}

// BlobWriter is a writer that takes kept HTML by reference.
type BlobWriter interface {
	WriteBlob(b *Blob) error
}

// writeBlob writes b into w: by reference when the writer under templ's
// buffer takes it, else its bytes.
func writeBlob(w io.Writer, b *Blob) error {
	if tb, ok := w.(*templruntime.Buffer); ok {
		if bw, ok := tb.Underlying.(BlobWriter); ok {
			if err := tb.Flush(); err != nil {
				return err
			}
			return bw.WriteBlob(b)
		}
	}
	if bw, ok := w.(BlobWriter); ok {
		return bw.WriteBlob(b)
	}
	_, err := w.Write(b.HTML)
	return err
}

// VolatileWriter is a page writer told which of the bytes it is given are
// new on each page (a one-time id, where a stream starts): it need not
// try to keep what it makes of them, and the rest of the page around
// them may be the same as another page's.
type VolatileWriter interface {
	WriteVolatile(p []byte) error
}

// volatile is c, whose HTML is new on each page (see VolatileWriter).
func volatile(c templ.Component) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		tb, ok := w.(*templruntime.Buffer)
		if !ok {
			return c.Render(ctx, w)
		}
		vw, ok := tb.Underlying.(VolatileWriter)
		if !ok {
			return c.Render(ctx, w)
		}
		var b bytes.Buffer
		if err := c.Render(ctx, &b); err != nil {
			return err
		}
		if err := tb.Flush(); err != nil {
			return err
		}
		return vw.WriteVolatile(b.Bytes())
	})
}

// listKey is what a kept list is made of, besides what it records.
type listKey struct {
	page                   uint64
	n                      int
	viewer, csrf, day      string
	anchor                 bool
	firstUnread, highlight chat.ID
}

// Kinds of context answers a list records.
const (
	askAvatar = iota
	askClosed
	askBot
)

// ctxAnswer is one look-up in the context and its answer.
type ctxAnswer struct {
	kind   int
	login  string
	answer string
}

// listRecorder collects the look-ups of one list's rendering.
type listRecorder struct {
	seen    map[ctxAnswer]struct{}
	members map[mentionLookup]struct{}
	full    bool
}

type listRecorderKey struct{}

func listRecorderOf(ctx context.Context) *listRecorder {
	r, _ := ctx.Value(listRecorderKey{}).(*listRecorder)
	return r
}

// note records that the rendering asked kind about login and got answer.
func noteAnswer(ctx context.Context, kind int, login, answer string) {
	if r := listRecorderOf(ctx); r != nil {
		r.seen[ctxAnswer{kind: kind, login: login, answer: answer}] = struct{}{}
	}
}

// noteShared records what a shared part depends on (its member
// look-ups); full: the part was not kept, nor is the list.
func noteShared(ctx context.Context, e *sharedEntry, full bool) {
	r := listRecorderOf(ctx)
	if r == nil {
		return
	}
	r.full = r.full || full
	for _, l := range e.lookups {
		r.members[l] = struct{}{}
	}
}

// listEntry is a kept list and what it depends on.
type listEntry struct {
	key     listKey
	blob    *Blob
	answers []ctxAnswer
	members []mentionLookup
	size    int64
}

// valid says whether ctx gives every answer e was rendered with.
func (e *listEntry) valid(ctx context.Context) bool {
	for _, a := range e.answers {
		var now string
		switch a.kind {
		case askAvatar:
			now = avatarVersion(ctx, a.login)
		case askClosed:
			now = closedOf(ctx, a.login)
		case askBot:
			now = boolAnswer(isBot(ctx, a.login))
		}
		if now != a.answer {
			return false
		}
	}
	members := membersOf(ctx)
	for _, l := range e.members {
		if _, ok := members[l.login]; ok != l.member {
			return false
		}
	}
	return true
}

func boolAnswer(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// lists holds the kept lists, at most KeptListBytes of them.
var lists = newByteLRU[listKey, *listEntry](func() int64 { return KeptListBytes })

// keptList is the message list of v: kept for its reader when v's
// messages are a kept page (v.PageKey), else rendered.
func keptList(v RoomView) templ.Component {
	marks := messageMarks(v.Messages, v.Now, v.Newer == "", v.FirstUnread, v.Highlight)
	if v.PageKey == 0 {
		return marks
	}
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		if KeptListBytes <= 0 || SharedCacheBytes <= 0 {
			// Member look-ups are recorded by the shared parts.
			return marks.Render(ctx, w)
		}
		key := listKey{page: v.PageKey, n: len(v.Messages), viewer: viewerOf(ctx), csrf: csrfToken(ctx),
			day: dayKey(v.Now), anchor: v.Newer == "", firstUnread: v.FirstUnread, highlight: v.Highlight}
		if e, _ := lists.get(key); e != nil && e.valid(ctx) {
			return writeBlob(w, e.blob)
		}
		rec := &listRecorder{seen: map[ctxAnswer]struct{}{}, members: map[mentionLookup]struct{}{}}
		var b bytes.Buffer
		if err := marks.Render(context.WithValue(ctx, listRecorderKey{}, rec), &b); err != nil {
			return err
		}
		e := &listEntry{key: key, blob: &Blob{HTML: b.Bytes()}}
		for a := range rec.seen {
			e.answers = append(e.answers, a)
		}
		for l := range rec.members {
			e.members = append(e.members, l)
		}
		e.size = int64(len(e.blob.HTML)) + 256 + 48*int64(len(e.answers)+len(e.members))
		if !rec.full {
			lists.put(key, e, e.size)
		}
		return writeBlob(w, e.blob)
	})
}

// This file owns rendering a message once: the parts of a message item
// that are the same for every reader (its text, the "(edited)" mark and
// its file; its menu) are rendered the first time a page or a stream
// needs them and kept, by bytes, in an in-process cache that every page,
// reader and live event of this instance uses.
//
// No entry can be stale, so none is ever invalidated: an entry's key is
// what its HTML is made of. The text part is keyed by the message id,
// its last edit's id (an edit gives a new key; the store's row is the
// truth every instance reads), the author's name and picture version,
// and it records which "@login" it looked up
// among the conversation's members with the answer: an entry is used only
// when each of those logins is still a member or still not one, so a join
// or a leave re-renders just the messages that name that person. The menu
// depends on the message id and conversation alone: it is kept once per
// conversation, the id written in as it is sent. What differs per
// reader is put in at write time: the reader's own mentions get class
// "mention-me" (the shared text is rendered for no viewer), and the CSRF
// field of the menu's forms is the reader's (the menu is kept in pieces
// cut where that field goes).

package views

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/killrchat/killrchat/chat"
)

// SharedCacheBytes bounds the HTML the shared-part cache keeps (keys and
// text); 0 turns the cache off. Set it before serving.
var SharedCacheBytes int64 = 32 << 20

// mentionLookup is one "@login" a text looked up among the members, and
// whether it was one.
type mentionLookup struct {
	login  string
	member bool
}

// lookupRecorder collects the lookups of one rendering; full is set when a
// text names more logins than MentionCandidates returns (then its render
// is not kept).
type lookupRecorder struct {
	seen []mentionLookup
	full bool
}

type recorderKey struct{}

// record notes the member lookups that mentionHTML makes for text.
func (r *lookupRecorder) record(text string, members map[string]chat.UserRef) {
	logins := chat.MentionCandidates([]string{text})
	if len(logins) >= maxLookupsKept {
		r.full = true
	}
	for _, l := range logins {
		_, ok := members[l]
		r.seen = append(r.seen, mentionLookup{login: l, member: ok})
	}
}

// maxLookupsKept is the size at which chat.MentionCandidates may have cut
// its list (see its bound): such a text is rendered every time.
const maxLookupsKept = 100

func recorderOf(ctx context.Context) *lookupRecorder {
	r, _ := ctx.Value(recorderKey{}).(*lookupRecorder)
	return r
}

// sharedEntry is a cached part: its HTML in pieces (cut where the reader's
// CSRF field goes) and, for a text, the member lookups it depends on.
type sharedEntry struct {
	key     string
	pieces  []string
	lookups []mentionLookup
	size    int64
}

// valid says whether e was rendered with the same answers members gives.
func (e *sharedEntry) valid(members map[string]chat.UserRef) bool {
	for _, l := range e.lookups {
		if _, ok := members[l.login]; ok != l.member {
			return false
		}
	}
	return true
}

// shared holds the shared parts, at most SharedCacheBytes of them.
var shared = newByteLRU[string, *sharedEntry](func() int64 { return SharedCacheBytes })

// csrfMarker stands for the reader's CSRF token while a shared part is
// rendered; random, so no message text can contain it.
var csrfMarker = func() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "csrf-" + hex.EncodeToString(b)
}()

// csrfField is the HTML csrf() writes for token (nothing without one).
func csrfField(token string) string {
	if token == "" {
		return ""
	}
	return `<input type="hidden" name="_csrf" value="` + templ.EscapeString(token) + `">`
}

// renderShared writes the part c of message id under key: from the cache
// when it holds a valid render, else rendered now for no viewer with the
// CSRF marker, kept, and written.
func renderShared(ctx context.Context, w io.Writer, key string, c templ.Component) error {
	members := membersOf(ctx)
	if SharedCacheBytes <= 0 {
		return c.Render(ctx, w)
	}
	e, _ := shared.get(key)
	if e == nil || !e.valid(members) {
		rec := &lookupRecorder{}
		rctx := context.WithValue(WithCSRF(WithViewer(ctx, ""), csrfMarker), recorderKey{}, rec)
		var b strings.Builder
		if err := c.Render(rctx, &b); err != nil {
			return err
		}
		html := b.String()
		field := csrfField(csrfMarker)
		e = &sharedEntry{key: key, pieces: strings.Split(html, field), lookups: rec.seen}
		e.size = int64(len(key) + len(html) + 64 + 32*len(rec.seen))
		if !rec.full {
			shared.put(key, e, e.size)
		}
		noteShared(ctx, e, rec.full)
	} else {
		noteShared(ctx, e, false)
	}
	return writeShared(ctx, w, e)
}

// writeShared writes e's pieces for the reader of ctx: their CSRF field
// between pieces, their own mentions marked.
func writeShared(ctx context.Context, w io.Writer, e *sharedEntry) error {
	field := csrfField(csrfToken(ctx))
	viewer := viewerOf(ctx)
	var mine, marked string
	if viewer != "" {
		mine = `class="mention" data-login="` + templ.EscapeString(viewer) + `"`
		marked = `class="mention mention-me" data-login="` + templ.EscapeString(viewer) + `"`
	}
	for i, p := range e.pieces {
		if i > 0 {
			if _, err := io.WriteString(w, field); err != nil {
				return err
			}
		}
		if mine != "" && len(e.lookups) > 0 && strings.Contains(p, mine) {
			p = strings.ReplaceAll(p, mine, marked)
		}
		if _, err := io.WriteString(w, p); err != nil {
			return err
		}
	}
	return nil
}

// sharedText is a message's author and time, text, "(edited)" mark and
// file, rendered once per message, edit, author's name and picture.
func sharedText(m chat.Message) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		key := "t" + m.ID.String() + m.Edited.String() + "\x00" + avatarVersion(ctx, m.Author.Login) +
			"\x00" + m.Author.Firstname + "\x00" + m.Author.Lastname + "\x00" + closedOf(ctx, m.Author.Login) +
			"\x00" + strconv.FormatBool(isBot(ctx, m.Author.Login))
		return renderShared(ctx, w, key, messageContent(m))
	})
}

// sharedMenu is a message's menu. It depends on the message's
// conversation and id alone, so it is rendered once per conversation,
// for menuMarker's id, and written with the message's id in the marker's
// place: a new message costs no render of its menu.
func sharedMenu(m chat.Message) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		if SharedCacheBytes <= 0 {
			return messageMenu(m).Render(ctx, w)
		}
		iw := &idWriter{w: w, id: m.ID.String()}
		return renderShared(ctx, iw, "m"+m.Room, messageMenu(chat.Message{ID: menuMarker, Room: m.Room}))
	})
}

// menuMarker is the id a conversation's menu is rendered for; random, so
// no conversation's name contains it.
var menuMarker = func() chat.ID {
	var id chat.ID
	_, _ = rand.Read(id[:])
	return id
}()

var menuMarkerText = menuMarker.String()

// idWriter writes to w with id in place of every menuMarkerText. The
// shared parts are written a piece at a time, and no piece is cut inside
// the marker (pieces are cut at the CSRF field), so each write is whole.
type idWriter struct {
	w  io.Writer
	id string
}

func (iw *idWriter) WriteString(s string) (int, error) {
	n := len(s)
	for {
		i := strings.Index(s, menuMarkerText)
		if i < 0 {
			break
		}
		if _, err := io.WriteString(iw.w, s[:i]); err != nil {
			return 0, err
		}
		if _, err := io.WriteString(iw.w, iw.id); err != nil {
			return 0, err
		}
		s = s[i+len(menuMarkerText):]
	}
	if _, err := io.WriteString(iw.w, s); err != nil {
		return 0, err
	}
	return n, nil
}

func (iw *idWriter) Write(p []byte) (int, error) { return iw.WriteString(string(p)) }

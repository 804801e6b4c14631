// This file owns the personal stream: one per browser, not per tab. A
// browser's tabs share it (static/live.js, in a SharedWorker, or in one
// tab chosen by a lock). It carries the person's own events (which of
// their conversations got a message, to refresh badges, the title and
// the lists) and the messages of every conversation some open tab shows,
// each event saying its conversation (see encodeWide), so the browser
// keeps a resume point per conversation. When the set of conversations
// changes, the browser opens a new personal stream with every
// conversation's resume point, and the new one replaces the old: it ends
// at once, and the caps count the browser once.

package live

import "sync"

// MaxPersonalConversations is how many conversations one personal stream
// carries at most (the tabs of one browser).
const MaxPersonalConversations = 50

// OpenPersonal counts a new personal stream of login (whose session's
// digest is session) from ip, for the browser that calls itself browser
// (a random key it keeps; "" for none). A stream of the same login and
// browser still open on this instance is ended, and the new one takes its
// place under the caps; otherwise it is refused with ErrTooManyForUser or
// ErrTooManyForIP like Open's. Subscribe it to the person's conversations,
// and Resume each, before Run.
func (e *Engine) OpenPersonal(login, ip, session, browser string) (*Stream, error) {
	key := login + "\x00" + browser
	replaced := make(chan struct{})
	replacing := browser != "" && e.browsers.replace(key, replaced)
	closeStream, byUser, ok := e.streams.open(login, ip, replacing)
	if !ok {
		e.browsers.forget(key, replaced)
		if byUser {
			return nil, ErrTooManyForUser
		}
		return nil, ErrTooManyForIP
	}
	st := e.newStream(login, session, zeroID, closeStream)
	st.personal, st.replaced = true, replaced
	if browser != "" {
		st.ends.add(func() { e.browsers.forget(key, replaced) })
	}
	// Logging out, or losing the session, ends it too when it carries no
	// conversation: its own key is a subscription like any other.
	st.Subscribe(userKey(login))
	return st, nil
}

// Refuse tells the browser, first thing, that the stream does not carry
// conversation: kind is KindStreamEnd (not a member) or KindRoomDeleted
// (it is gone).
func (st *Stream) Refuse(conversation, kind string) {
	st.notices = append(st.notices, encodeWide(&Event{Kind: kind, Conversation: conversation}))
}

// EndBrowser ends login's personal stream of browser on this instance, if
// one is open: its last page went away (into the back-forward cache, which
// freezes a SharedWorker with its connection open).
func (e *Engine) EndBrowser(login, browser string) {
	if browser != "" {
		e.browsers.end(login + "\x00" + browser)
	}
}

// browsers are the open personal streams by login and browser key: a
// newer stream of the same browser ends the older one.
type browsers struct {
	mu   sync.Mutex
	open map[string]chan struct{}
}

// replace records replaced as key's stream and ends the one it had,
// saying whether there was one.
func (b *browsers) replace(key string, replaced chan struct{}) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open == nil {
		b.open = map[string]chan struct{}{}
	}
	old, ok := b.open[key]
	if ok {
		close(old)
	}
	b.open[key] = replaced
	return ok
}

// end ends key's stream, if one is open.
func (b *browsers) end(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.open[key]; ok {
		close(c)
		delete(b.open, key)
	}
}

// forget removes key's stream, unless a newer one took its place.
func (b *browsers) forget(key string, replaced chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open[key] == replaced {
		delete(b.open, key)
	}
}

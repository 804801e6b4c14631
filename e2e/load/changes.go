package main

// What correctness adds for edits, deletes and reactions (issue 18):
// posters mix them into their posts, each subscriber keeps the view a
// browser builds from its events (static/app.js: an edit replaces the
// text unless a newer edit is shown, a delete takes the message away, a
// reaction keeps each person's newest action), and at the end every
// subscriber's view of the messages it holds must equal what Cassandra
// holds: the same text, the same reactions, and no deleted message.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/killrchat/killrchat/chat"
)

// bodyOf finds a message's text in its HTML: the element id, the id of
// its last edit if any, and the text (posters write plain words).
var bodyOf = regexp.MustCompile(`id="body-([0-9a-f-]{36})"(?: data-edit="([0-9a-f-]{36})")?[^>]*>([^<]*)</div>`)

// changeView is what one subscriber's page shows of the changes.
type changeView struct {
	deleted   map[string]bool
	body      map[string]string // message id -> text
	edit      map[string]string // message id -> id of the edit shown
	reactions map[string]map[string]reaction
}

// reaction is a person's newest action on an emoji of a message.
type reaction struct {
	change chat.ID
	added  bool
}

func newChangeView() *changeView {
	return &changeView{deleted: map[string]bool{}, body: map[string]string{}, edit: map[string]string{},
		reactions: map[string]map[string]reaction{}}
}

// message takes a message event: the page keeps the first copy of an id.
func (v *changeView) message(id, html string) {
	if _, ok := v.body[id]; ok || v.deleted[id] {
		return
	}
	v.applyBody(html, true)
}

// applyBody sets the text a message (or an edit) shows, unless a newer
// edit is shown already.
func (v *changeView) applyBody(html string, first bool) {
	m := bodyOf.FindStringSubmatch(html)
	if m == nil {
		return
	}
	id, edit, text := m[1], m[2], m[3]
	if v.deleted[id] {
		return
	}
	if _, ok := v.body[id]; !ok && !first {
		return // an edit of a message the page does not hold
	}
	if cur := v.edit[id]; cur != "" && edit != "" && laterString(cur, edit) {
		return
	}
	v.body[id], v.edit[id] = text, edit
}

func laterString(a, b string) bool {
	x, err1 := chat.ParseID(a)
	y, err2 := chat.ParseID(b)
	return err1 == nil && err2 == nil && x.After(y)
}

// event takes a change's event; an error is an anomaly.
func (v *changeView) event(name, data string) error {
	switch name {
	case "edit":
		v.applyBody(data, false)
	case "delete":
		id := strings.TrimPrefix(strings.TrimSpace(data), "msg-")
		v.deleted[id] = true
		delete(v.body, id)
	case "reaction":
		var r struct {
			Message, Emoji, Login, Change string
			Added                         bool
		}
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			return fmt.Errorf("reaction %.80q: %v", data, err)
		}
		change, err := chat.ParseID(r.Change)
		if err != nil {
			return fmt.Errorf("reaction change id %q: %v", r.Change, err)
		}
		if v.reactions[r.Message] == nil {
			v.reactions[r.Message] = map[string]reaction{}
		}
		key := r.Emoji + "|" + r.Login
		if cur, ok := v.reactions[r.Message][key]; ok && !change.After(cur.change) {
			return nil
		}
		v.reactions[r.Message][key] = reaction{change: change, added: r.Added}
	default:
		return fmt.Errorf("unknown change %q", name)
	}
	return nil
}

// shown is the reactions the page shows on message id, sorted.
func (v *changeView) shown(id string) []string {
	var out []string
	for k, r := range v.reactions[id] {
		if r.added {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// changer makes the changes posters mix into their posts: each edits and
// deletes its own messages, and reacts to anyone's.
type changer struct {
	rate float64 // changes per post
	mu   sync.Mutex
	pool []string // every posted message id not deleted
	made map[string]int
}

var postedID = regexp.MustCompile(`id="msg-([0-9a-f-]{36})"`)

// own is a poster's memory: its messages and its reactions.
type own struct {
	msgs   []string
	edits  map[string]int
	reacts map[string]bool // message|emoji -> reacted
}

// after runs, after poster p posted the message in body, the changes it
// makes this time; it returns the requests that failed.
func (ch *changer) after(ctx context.Context, p int, u *user, o *own, body, room string, rng *rand.Rand) (failed int) {
	m := postedID.FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	ch.mu.Lock()
	ch.pool = append(ch.pool, m[1])
	ch.mu.Unlock()
	o.msgs = append(o.msgs, m[1])
	for n := ch.rate; n > 0; n-- {
		if n < 1 && rng.Float64() >= n {
			break
		}
		base := "/rooms/" + room + "/messages/"
		var path string
		form := url.Values{}
		kind := rng.IntN(10)
		switch {
		case kind < 4 && len(o.msgs) > 0: // edit one of its own
			id := o.msgs[rng.IntN(len(o.msgs))]
			o.edits[id]++
			path, form["content"] = base+id+"/edit", []string{fmt.Sprintf("poster %d edited %s %d", p, id[:8], o.edits[id])}
		case kind < 5 && len(o.msgs) > 1: // delete one of its own, not the newest
			i := rng.IntN(len(o.msgs) - 1)
			id := o.msgs[i]
			o.msgs = append(o.msgs[:i], o.msgs[i+1:]...)
			ch.mu.Lock()
			for j, x := range ch.pool {
				if x == id {
					ch.pool = append(ch.pool[:j], ch.pool[j+1:]...)
					break
				}
			}
			ch.mu.Unlock()
			path = base + id + "/delete"
		default: // toggle a reaction on anyone's
			ch.mu.Lock()
			id := ch.pool[rng.IntN(len(ch.pool))]
			ch.mu.Unlock()
			emoji := []string{"👍", "🎉", "ok"}[rng.IntN(3)]
			key := id + "|" + emoji
			add := !o.reacts[key]
			o.reacts[key] = add
			path, form["emoji"] = base+id+"/reactions", []string{emoji}
			if !add {
				form.Set("add", "0")
			}
		}
		code, _, err := u.post(ctx, path, form, true)
		// A message deleted meanwhile by its author: 404 for an edit is
		// its author's own doing and cannot happen; a reaction is stored.
		if err != nil || code != http.StatusNoContent {
			failed++
			if failed <= 3 {
				logf("poster %d: POST %s: %d %v", p, path, code, err)
			}
		}
		ch.mu.Lock()
		if ch.made == nil {
			ch.made = map[string]int{}
		}
		ch.made[strings.TrimPrefix(path[strings.LastIndexByte(path, '/'):], "/")]++
		ch.mu.Unlock()
	}
	return failed
}

// checkChanges compares each subscriber's view with what Cassandra holds:
// for every message the view holds (received, not deleted), the stored
// text and reactions; a message the view saw deleted must not be stored.
func checkChanges(ctx context.Context, t *target, room chat.Room, subs []*subscriber, example func(string, ...any)) (int, error) {
	msgs, _, err := t.Store.MessagesBefore(ctx, room, chat.ID{}, 60000)
	if err != nil {
		return 0, err
	}
	stored := make(map[string]chat.Message, len(msgs))
	for _, m := range msgs {
		stored[m.ID.String()] = m
	}
	bad := 0
	for i, sub := range subs {
		v := sub.view
		for id, text := range v.body {
			m, ok := stored[id]
			if !ok {
				bad++
				example("sub %d: shows %s, which is not stored (deleted?)", i, id)
				continue
			}
			if text != m.Content {
				bad++
				example("sub %d: %s shows %q, stored %q", i, id, text, m.Content)
			}
			var want []string
			for _, r := range m.Reactions {
				want = append(want, r.Emoji+"|"+r.Reactor.Login)
			}
			sort.Strings(want)
			if got := v.shown(id); strings.Join(got, ",") != strings.Join(want, ",") {
				bad++
				example("sub %d: %s shows reactions %v, stored %v", i, id, got, want)
			}
		}
		for id := range v.deleted {
			if _, ok := stored[id]; ok {
				bad++
				example("sub %d: saw %s deleted, but it is stored", i, id)
			}
		}
	}
	return bad, nil
}

package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
)

// post stores and indexes a message, as the post path and its indexer do.
func post(t testing.TB, st *store.Store, in chat.Place, author chat.UserRef, content string) chat.Message {
	t.Helper()
	ctx := context.Background()
	m, err := st.PostMessage(ctx, in, author, content)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.IndexMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func search(t testing.TB, st *store.Store, convs []chat.Conversation, query string, before chat.ID, n int) ([]chat.Message, bool, chat.SearchStats) {
	t.Helper()
	q, err := chat.ParseSearch(query)
	if err != nil {
		t.Fatal(err)
	}
	found, more, stats, err := st.Search(context.Background(), convs, q, before, n)
	if err != nil {
		t.Fatal(err)
	}
	return found, more, stats
}

func contents(ms []chat.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func TestSearchFindsTermsNewestFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ada, bob := newUser(t, unique("ada")), newUser(t, unique("bob"))
	created, err := db.CreateRoom(ctx, ada.Ref(), chat.NewRoom{Name: unique("search")})
	if err != nil {
		t.Fatal(err)
	}
	room, err := joinAndRead(ctx, db.Store, bob.Ref(), created.Name)
	if err != nil {
		t.Fatal(err)
	}
	dm := chat.DM{Address: ada.Login + "+" + bob.Login, Members: []chat.UserRef{ada.Ref(), bob.Ref()}}
	word := unique("zebra")
	post(t, db.Store, room, ada.Ref(), "the runbook for "+word+" is in the wiki")
	post(t, db.Store, dm, bob.Ref(), "Café "+word+" deploying now")
	post(t, db.Store, room, bob.Ref(), "unrelated chatter")
	last := post(t, db.Store, room, bob.Ref(), "DEPLOYED the "+word+" pipeline")
	convs := []chat.Conversation{room.Conversation(), dm.Conversation()}

	tests := []struct {
		q    string
		want []string
	}{
		{word, []string{"DEPLOYED the " + word + " pipeline", "Café " + word + " deploying now", "the runbook for " + word + " is in the wiki"}},
		{word + " cafe", []string{"Café " + word + " deploying now"}},
		{word + " deploy", []string{"DEPLOYED the " + word + " pipeline", "Café " + word + " deploying now"}},
		{word + " from:" + ada.Login, []string{"the runbook for " + word + " is in the wiki"}},
		{word + ` "runbook for"`, []string{"the runbook for " + word + " is in the wiki"}},
		{word + ` "for runbook"`, nil},
		{word + " pipe*", []string{"DEPLOYED the " + word + " pipeline"}},
		{word + " dep*", []string{"DEPLOYED the " + word + " pipeline", "Café " + word + " deploying now"}},
		{word + " nothing", nil},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			found, more, _ := search(t, db.Store, convs, tt.q, chat.ID{}, 20)
			if got := contents(found); strings.Join(got, "|") != strings.Join(tt.want, "|") || more {
				t.Errorf("got %q (more %v), want %q", got, more, tt.want)
			}
		})
	}
	t.Run("OnlyGivenConversations", func(t *testing.T) {
		found, _, _ := search(t, db.Store, []chat.Conversation{dm.Conversation()}, word, chat.ID{}, 20)
		if len(found) != 1 || found[0].Room != dm.Conversation().ID {
			t.Errorf("searching the DM alone found %q", contents(found))
		}
		if found, _, _ := search(t, db.Store, nil, word, chat.ID{}, 20); len(found) != 0 {
			t.Errorf("searching no conversation found %q", contents(found))
		}
	})
	t.Run("Before", func(t *testing.T) {
		found, _, _ := search(t, db.Store, convs, word, last.ID, 20)
		if len(found) != 2 {
			t.Errorf("before the newest: %q", contents(found))
		}
	})
}

// TestSearchChecksStoredMessage: the index can be behind an edit or a
// delete; what is shown is the message as it is now.
func TestSearchChecksStoredMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	room, err := db.CreateRoom(ctx, ada.Ref(), chat.NewRoom{Name: unique("edits")})
	if err != nil {
		t.Fatal(err)
	}
	word := unique("walrus")
	kept := post(t, db.Store, room, ada.Ref(), word+" kept")
	changed := post(t, db.Store, room, ada.Ref(), word+" before")
	// Edited: the row now says something else, the index still has it.
	changed.Content = "after"
	if err := db.SaveMessage(ctx, room, changed); err != nil {
		t.Fatal(err)
	}
	// Deleted: indexed, but no message row.
	gone, err := db.DraftMessage(room, ada.Ref(), word+" gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.IndexMessage(ctx, gone); err != nil {
		t.Fatal(err)
	}
	found, _, _ := search(t, db.Store, []chat.Conversation{room.Conversation()}, word, chat.ID{}, 20)
	if len(found) != 1 || found[0].ID != kept.ID {
		t.Errorf("found %q, want only the kept message", contents(found))
	}
	// The lifecycle's hook takes a message out of the index itself.
	if err := db.UnindexMessage(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if found, _, _ := search(t, db.Store, []chat.Conversation{room.Conversation()}, word, chat.ID{}, 20); len(found) != 0 {
		t.Errorf("after UnindexMessage found %q", contents(found))
	}
}

// TestSearchConcurrentPosts: 100 posts at once, each indexed, are all
// found, 20 a page, newest first, each once.
func TestSearchConcurrentPosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	room, err := db.CreateRoom(ctx, ada.Ref(), chat.NewRoom{Name: unique("busy")})
	if err != nil {
		t.Fatal(err)
	}
	word := unique("otter")
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			post(t, db.Store, room, ada.Ref(), fmt.Sprintf("%s number %d", word, i))
		}()
	}
	wg.Wait()
	seen := map[chat.ID]bool{}
	before := chat.ID{}
	for page := 0; ; page++ {
		found, more, _ := search(t, db.Store, []chat.Conversation{room.Conversation()}, word, before, 20)
		for i, m := range found {
			if seen[m.ID] {
				t.Fatalf("page %d: %s twice", page, m.Content)
			}
			seen[m.ID] = true
			if i > 0 && !found[i-1].ID.Time().After(m.ID.Time()) && found[i-1].ID.Timestamp() <= m.ID.Timestamp() {
				t.Errorf("page %d not newest first at %d", page, i)
			}
		}
		if !more {
			break
		}
		if len(found) != 20 {
			t.Fatalf("page %d has %d results and more", page, len(found))
		}
		before = found[len(found)-1].ID
	}
	if len(seen) != 100 {
		t.Errorf("found %d of 100", len(seen))
	}
}

// TestSearchCostWithBigPartitions: a rare term beside a term in 3,000
// messages, over two months, reads about what it returns, not the big
// partition (the zig-zag join seeks the common term's partition).
func TestSearchCostWithBigPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	st, err := db.Another()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The clock moves while saves are under way (they read it: see
	// store.countedDay), so it is read under a lock.
	var clockMu sync.Mutex
	clock := time.Date(2026, 5, 20, 8, 0, 0, 0, time.UTC)
	st.Now = func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		return clock
	}
	room, err := st.CreateRoom(ctx, ada.Ref(), chat.NewRoom{Name: unique("big")})
	if err != nil {
		t.Fatal(err)
	}
	common, rare := unique("common"), unique("rare")
	var rareIDs []chat.ID
	const total = 3000
	sem := make(chan struct{}, 32)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range total {
		clockMu.Lock()
		clock = clock.Add(30 * time.Minute) // about two months
		clockMu.Unlock()
		text := fmt.Sprintf("%s message %d", common, i)
		if i%1000 == 500 {
			text += " " + rare
		}
		m, err := st.DraftMessage(room, ada.Ref(), text)
		if err != nil {
			t.Fatal(err)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := st.SaveMessage(ctx, room, m); err != nil {
				t.Error(err)
			}
			if err := st.IndexMessage(ctx, m); err != nil {
				t.Error(err)
			}
			if strings.Contains(m.Content, rare) {
				mu.Lock()
				rareIDs = append(rareIDs, m.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	convs := []chat.Conversation{room.Conversation()}
	found, _, stats := search(t, st, convs, common+" "+rare, chat.ID{}, 20)
	if len(found) != 3 {
		t.Fatalf("found %d, want 3", len(found))
	}
	if stats.Postings > 200 || stats.Statements > 40 {
		t.Errorf("common AND rare read %d postings in %d statements", stats.Postings, stats.Statements)
	}
	t.Logf("common AND rare: %+v", stats)
	// The same in the other order: the rare term leads either way.
	found, _, stats = search(t, st, convs, rare+" "+common, chat.ID{}, 20)
	if len(found) != 3 || stats.Postings > 200 || stats.Statements > 40 {
		t.Errorf("rare AND common: %d found, %d postings in %d statements", len(found), stats.Postings, stats.Statements)
	}
	t.Logf("rare AND common: %+v", stats)
	found, more, stats := search(t, st, convs, common, chat.ID{}, 20)
	if len(found) != 20 || !more || stats.Postings > 100 {
		t.Errorf("common alone: %d found, more %v, %+v", len(found), more, stats)
	}
	t.Logf("common alone: %+v", stats)
}

// TestRareTermReadsOnlyWhereItIs (issue 20): a word in one conversation of
// 40, over three months, is found by reading term_places (one statement
// per month) and then the postings of that one conversation's months,
// not one empty partition per conversation and month. A word in no
// conversation reads no posting at all.
func TestRareTermReadsOnlyWhereItIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	st, err := db.Another()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := time.Date(2026, 3, 10, 8, 0, 0, 0, time.UTC)
	st.Now = func() time.Time { return clock }
	rare := unique("zanzibar")
	var convs []chat.Conversation
	var rooms []chat.RoomFor
	for i := range 40 {
		r, err := st.CreateRoom(ctx, ada.Ref(), chat.NewRoom{Name: unique("place")})
		if err != nil {
			t.Fatal(err)
		}
		rooms = append(rooms, r)
		convs = append(convs, r.Conversation())
		_ = i
	}
	for month := range 3 {
		for i, r := range rooms {
			text := fmt.Sprintf("an ordinary message %d", i)
			if i == 17 {
				text += " " + rare
			}
			post(t, st, r, ada.Ref(), text)
		}
		clock = clock.AddDate(0, 1, 0)
		_ = month
	}
	found, _, stats := search(t, st, convs, rare, chat.ID{}, 20)
	if len(found) != 3 {
		t.Fatalf("found %d, want 3", len(found))
	}
	t.Logf("a rare word in 1 of 40 conversations over 3 months: %+v", stats)
	// The months' lists (one per conversation, 40, the first time), the
	// places (3, one per month), the postings (3) and the messages (3).
	if stats.Statements > 40+3+3+3 || stats.Postings > 3 {
		t.Errorf("a rare word read %d postings in %d statements", stats.Postings, stats.Statements)
	}
	found, _, stats = search(t, st, convs, rare, chat.ID{}, 20)
	if len(found) != 3 || stats.Statements > 3+3+3 {
		t.Errorf("again (the months remembered): %d found in %d statements", len(found), stats.Statements)
	}
	found, _, stats = search(t, st, convs, unique("nowhere"), chat.ID{}, 20)
	if len(found) != 0 || stats.Postings != 0 || stats.Statements > 3 {
		t.Errorf("a word that is nowhere: %d found, %+v", len(found), stats)
	}
	found, _, _ = search(t, st, convs, "ordinary "+rare, chat.ID{}, 20)
	if len(found) != 3 {
		t.Errorf("a common and a rare word: %d found, want 3", len(found))
	}
}

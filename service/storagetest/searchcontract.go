// This file owns the contract of service.Searches: the search index as
// the use case reads it, recent searches and DM lists.

package storagetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// runSearches checks the contract of service.Searches; each subtest
// works in DMs of its own, in parallel.
func runSearches(t *testing.T, setup func(t *testing.T) Store) {
	t.Run("Search", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, bob := start(t, setup)
		ctx := context.Background()
		first := post(t, s, dm, ada, "an apple a day")
		post(t, s, dm, bob, "a pear")
		second := post(t, s, dm, bob, "apple pie")
		gone := post(t, s, dm, ada, "apple core")
		sys := s.DraftSystemMessage(dm, bob, "apple joined")
		if err := s.SaveFencedMessage(ctx, dm, sys); err != nil {
			t.Fatal(err)
		}
		unindexed := post(t, s, dm, ada, "apple unindexed")
		for _, m := range []chat.Message{first, second, gone, sys} {
			if err := s.IndexMessage(ctx, m); err != nil {
				t.Fatalf("index %q: %v", m.Content, err)
			}
		}
		if err := s.DeleteMessage(ctx, dm, gone, s.NewChangeID()); err != nil {
			t.Fatal(err)
		}
		_ = unindexed
		convs := []chat.Conversation{dm.Conversation()}
		q := query(t, "apple")
		got := search(t, s, convs, q, chat.ID{}, 10, false)
		if want := []chat.ID{second.ID, first.ID}; !slices.Equal(ids(got), want) {
			t.Fatalf("search apple: %s, want the two indexed and kept, newest first", contents(got))
		}
		if got[0].Content != "apple pie" || got[0].Author.Login != bob.Login || got[0].Room != dm.Conversation().ID {
			t.Fatalf("a result reads %+v", got[0])
		}
		page := search(t, s, convs, q, chat.ID{}, 1, true)
		if len(page) != 1 || page[0].ID != second.ID {
			t.Fatalf("a page of one: %s", contents(page))
		}
		if rest := search(t, s, convs, q, second.ID, 1, false); len(rest) != 1 || rest[0].ID != first.ID {
			t.Fatalf("the page after %q: %s", second.Content, contents(rest))
		}
		from := query(t, "apple from:"+ada.Login)
		if got := search(t, s, convs, from, chat.ID{}, 10, false); len(got) != 1 || got[0].ID != first.ID {
			t.Fatalf("apple from ada: %s", contents(got))
		}
		if got := search(t, s, convs, query(t, "pea*"), chat.ID{}, 10, false); len(got) != 0 {
			t.Fatalf("a prefix of a message never indexed found %s", contents(got))
		}
		_, other, _, _ := start(t, setup)
		if got := search(t, s, []chat.Conversation{other.Conversation()}, q, chat.ID{}, 10, false); len(got) != 0 {
			t.Fatalf("another DM's search found %s", contents(got))
		}
	})
	t.Run("RecentSearches", func(t *testing.T) {
		t.Parallel()
		s, _, ada, bob := start(t, setup)
		ctx := context.Background()
		for _, q := range []string{"one", "two", "one"} {
			if err := s.RecordSearch(ctx, ada.Login, q); err != nil {
				t.Fatal(err)
			}
		}
		if got := recent(t, s, ada.Login); !slices.Equal(got, []string{"one", "two"}) {
			t.Fatalf("recent searches %q, want one, two", got)
		}
		if got := recent(t, s, bob.Login); len(got) != 0 {
			t.Fatalf("someone else's recent searches %q", got)
		}
		for i := range 12 {
			if err := s.RecordSearch(ctx, bob.Login, fmt.Sprint("q", i)); err != nil {
				t.Fatal(err)
			}
		}
		if got := recent(t, s, bob.Login); len(got) != 10 || got[0] != "q11" || got[9] != "q2" {
			t.Fatalf("after 12 searches: %q, want the 10 newest", got)
		}
	})
	t.Run("DMList", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, bob := start(t, setup)
		ctx := context.Background()
		older, newer := post(t, s, dm, ada, "one"), post(t, s, dm, bob, "two")
		// The newest wins whatever the order; a repeat of a write (a
		// driver's retry of the same statement) doubles nothing.
		for _, m := range []chat.Message{newer, older, newer} {
			if err := s.RecordDMMessage(ctx, dm, m); err != nil {
				t.Fatal(err)
			}
		}
		for _, who := range []chat.UserRef{ada, bob} {
			list, err := s.DMList(ctx, who.Login)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].DM.Address != dm.Address || list[0].LastID != newer.ID ||
				list[0].LastAuthor.Login != bob.Login || list[0].LastExcerpt != "two" || len(list[0].DM.Members) != 2 {
				t.Fatalf("%s's DM list: %+v", who.Login, list)
			}
		}
	})
}

func query(t *testing.T, raw string) chat.SearchQuery {
	t.Helper()
	q, err := chat.ParseSearch(raw)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return q
}

// search runs q and checks whether more exist as wantMore says.
func search(t *testing.T, s Store, convs []chat.Conversation, q chat.SearchQuery, before chat.ID, n int, wantMore bool) []chat.Message {
	t.Helper()
	got, more, _, err := s.Search(context.Background(), convs, q, before, n)
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	if more != wantMore {
		t.Fatalf("search of %d: more %v, want %v (got %s)", n, more, wantMore, contents(got))
	}
	return got
}

func recent(t *testing.T, s Store, login string) []string {
	t.Helper()
	got, err := s.RecentSearches(context.Background(), login)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func ids(ms []chat.Message) []chat.ID {
	var out []chat.ID
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func contents(ms []chat.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%q", m.Content))
	}
	return fmt.Sprint(out)
}

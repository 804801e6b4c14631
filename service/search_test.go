package service_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/service"
)

// This file tests the search use case over the in-memory storage: what a
// person may search, what is remembered, what a page holds.

// rooms is the list of a person's rooms, as the core's cached list gives
// it: each room read with its standing.
type rooms map[string][]chat.RoomFor

func (r rooms) MyRooms(_ context.Context, login string) ([]chat.RoomFor, error) { return r[login], nil }

func TestSearch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	carol := chat.UserRef{Login: "carol", Firstname: "Carol"}
	garden := chat.RoomWithAll{Room: chat.Room{Name: "garden", DisplayName: "Garden", CreatedAt: time.Now().Add(-time.Hour)},
		Participants: map[string]chat.UserRef{"ada": f.ada, "carol": carol}}
	// A room of ada's list she no longer takes part in: never searched.
	left := chat.RoomWithAll{Room: chat.Room{Name: "left", DisplayName: "Left", CreatedAt: time.Now().Add(-time.Hour)},
		Participants: map[string]chat.UserRef{"carol": carol}}
	var statements atomic.Int64
	svc := service.New(service.Deps{Storage: f.db, Sequencer: f.seq, Renderer: renderer{}, Indexer: f.ix, Bus: f.bus,
		Rooms: rooms{"ada": {garden.For("ada"), left.For("ada")}}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		CountSearchStatements: func(n int) { statements.Add(int64(n)) }})
	post := func(in chat.Place, author chat.UserRef, content string) chat.Message {
		t.Helper()
		m, _, err := svc.PostText(ctx, service.TextPost{In: in, Author: author, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.db.IndexMessage(ctx, m); err != nil { // the indexer's work, off the post's path
			t.Fatal(err)
		}
		return m
	}
	inDM := post(f.dm, f.bob, "tulips in the dm")
	inRoom := post(garden, carol, "tulips in the garden")
	post(left, carol, "tulips where ada is not")
	post(f.dm, f.ada, "roses")

	q, err := chat.ParseSearch("tulips")
	if err != nil {
		t.Fatal(err)
	}
	page, err := svc.Search(ctx, service.SearchRequest{Login: "ada", Query: q, Text: "tulips", N: 10, Remember: true, Recent: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Hits) != 2 || page.Hits[0].Message.ID != inRoom.ID || page.Hits[1].Message.ID != inDM.ID || page.More {
		t.Fatalf("hits %+v (more %v), want the garden's then the DM's", page.Hits, page.More)
	}
	if r, ok := page.Hits[0].Place.(chat.Room); !ok || r.Name != "garden" {
		t.Errorf("the room hit's place is %#v", page.Hits[0].Place)
	}
	if d, ok := page.Hits[1].Place.(chat.DM); !ok || d.Address != f.dm.Address {
		t.Errorf("the DM hit's place is %#v", page.Hits[1].Place)
	}
	if !slices.Equal(page.Recent, []string{"tulips"}) {
		t.Errorf("recent searches %q, want the one just made", page.Recent)
	}
	if statements.Load() == 0 {
		t.Error("the search's statements were not counted")
	}

	t.Run("PageAfter", func(t *testing.T) {
		page, err := svc.Search(ctx, service.SearchRequest{Login: "ada", Query: q, Text: "tulips", Before: inRoom.ID, N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Hits) != 1 || page.Hits[0].Message.ID != inDM.ID || page.More || page.Recent != nil {
			t.Fatalf("the page after the first: %+v", page)
		}
	})
	t.Run("NarrowedToARoom", func(t *testing.T) {
		q, _ := chat.ParseSearch("tulips in:#garden")
		page, err := svc.Search(ctx, service.SearchRequest{Login: "ada", Query: q, Text: "not kept", N: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Hits) != 1 || page.Hits[0].Message.ID != inRoom.ID {
			t.Fatalf("in:#garden: %+v", page.Hits)
		}
		if got := svc.RecentSearches(ctx, "ada"); !slices.Equal(got, []string{"tulips"}) {
			t.Fatalf("a search not to remember was remembered: %q", got)
		}
	})
	t.Run("NarrowedToAPerson", func(t *testing.T) {
		q, _ := chat.ParseSearch("tulips in:@bob")
		page, err := svc.Search(ctx, service.SearchRequest{Login: "ada", Query: q, N: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Hits) != 1 || page.Hits[0].Message.ID != inDM.ID {
			t.Fatalf("in:@bob: %+v", page.Hits)
		}
	})
	t.Run("NotAMember", func(t *testing.T) {
		page, err := svc.Search(ctx, service.SearchRequest{Login: "carol", Query: q, N: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Hits) != 0 {
			t.Fatalf("carol, with no rooms listed and no DM, found %+v", page.Hits)
		}
	})
}

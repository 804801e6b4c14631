package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// reactedRoom is a new room of author with one message in it.
func reactedRoom(t *testing.T, author chat.User) (chat.RoomFor, chat.Message) {
	t.Helper()
	ctx := context.Background()
	room, err := db.CreateRoom(ctx, author.Ref(), chat.NewRoom{Name: unique("react")})
	if err != nil {
		t.Fatal(err)
	}
	m, err := db.PostMessage(ctx, room, author.Ref(), "react to this")
	if err != nil {
		t.Fatal(err)
	}
	return room, m
}

// reactionsOn reads the reactions of m as a page shows them.
func reactionsOn(t *testing.T, in chat.Place, m chat.Message) []chat.Reaction {
	t.Helper()
	msgs, _, err := db.MessagesBefore(context.Background(), in, chat.ID{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range msgs {
		if got.ID == m.ID {
			return got.Reactions
		}
	}
	t.Fatalf("message %s is gone", m.ID)
	return nil
}

// TestConcurrentReactions: 50 people react with the same emoji at once,
// and exactly 50 reactions are stored: one row per person, no
// read-modify-write for two of them to overwrite each other.
func TestConcurrentReactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	author := newUser(t, unique("author"))
	room, m := reactedRoom(t, author)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		who := chat.UserRef{Login: unique("fan"), Firstname: "Fan"}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := db.React(ctx, room, m.ID, who, "👍", true, db.NewChangeID())
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := chat.GroupReactions(reactionsOn(t, room, m))
	if len(got) != 1 || got[0].Emoji != "👍" || len(got[0].People) != 50 {
		t.Fatalf("after 50 reactions at once: %+v", got)
	}
}

// TestReactionToggleRaces: 1,000 rounds in which one person adds and
// takes back the same reaction from two tabs at once. After each round
// the stored state is the last action: the one with the later change id,
// whatever order the two writes reached Cassandra in.
func TestReactionToggleRaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	author := newUser(t, unique("author"))
	room, m := reactedRoom(t, author)
	me := author.Ref()
	for round := 0; round < 1000; round++ {
		var ids [2]chat.ID
		var errs [2]error
		var wg sync.WaitGroup
		for tab := 0; tab < 2; tab++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Tab 0 adds, tab 1 takes back; which one draws the
				// later id is up to the scheduler.
				ids[tab] = db.NewChangeID()
				_, errs[tab] = db.React(ctx, room, m.ID, me, "🎉", tab == 0, ids[tab])
			}()
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			t.Fatal(err)
		}
		wantOn := ids[0].After(ids[1]) // the add came last
		on := len(reactionsOn(t, room, m)) == 1
		if on != wantOn {
			t.Fatalf("round %d: reacted = %v, want %v (the last action)", round, on, wantOn)
		}
	}
}

// TestChangesAfter: the change log gives back the edits, deletes and
// reactions after an id, oldest first, and says when more follow; once a
// message is deleted, its delete alone (issue 37, fault 3: no edit's text
// of a message that is gone).
func TestChangesAfter(t *testing.T) {
	ctx := context.Background()
	author := newUser(t, unique("author"))
	room, m := reactedRoom(t, author)
	before := db.NewChangeID()
	edited, err := db.EditMessage(ctx, room, m, "edited text", db.NewChangeID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.React(ctx, room, m.ID, author.Ref(), "ok", true, db.NewChangeID()); err != nil {
		t.Fatal(err)
	}
	got, more, err := db.ChangesAfter(ctx, room, before, 10)
	if err != nil || more || len(got) != 2 {
		t.Fatalf("changes: %d more=%v %v", len(got), more, err)
	}
	if got[0].Kind != chat.ChangeEdit || got[0].Content != "edited text" || got[0].ID != edited.Edited ||
		got[1].Kind != chat.ChangeReaction || got[1].Emoji != "ok" || !got[1].Added || got[1].Reactor.Login != author.Login {
		t.Errorf("changes: %+v", got)
	}
	if page, more, err := db.ChangesAfter(ctx, room, before, 1); err != nil || !more || len(page) != 1 {
		t.Errorf("a page of 1: %d more=%v %v", len(page), more, err)
	}
	if err := db.DeleteMessage(ctx, room, edited, db.NewChangeID()); err != nil {
		t.Fatal(err)
	}
	got, more, err = db.ChangesAfter(ctx, room, before, 10)
	if err != nil || more || len(got) != 1 || got[0].Kind != chat.ChangeDelete || got[0].Message != m.ID || got[0].Content != "" {
		t.Errorf("changes after the delete: %+v more=%v %v", got, more, err)
	}
	if _, err := db.Message(ctx, room, m.ID); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("the deleted message: %v", err)
	}
}

func TestCheckReaction(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"👍", "👍", true},
		{" 👍🏽 ", "👍🏽", true},
		{"👨‍👩‍👧‍👦", "👨‍👩‍👧‍👦", true},
		{"ship it", "ship it", true},
		{"exactly16chars!!", "exactly16chars!!", true},
		{"seventeen chars!!", "", false},
		{"", "", false},
		{"   ", "", false},
		{"a\nb", "", false},
		{"a\tb", "", false},
		{"\u200b", "", false},
	} {
		got, err := chat.CheckReaction(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("CheckReaction(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestMentionedNotInCode(t *testing.T) {
	members := map[string]chat.UserRef{"ada": {Login: "ada"}, "bob": {Login: "bob"}, "cy": {Login: "cy"}}
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"hi @ada", []string{"ada"}},
		{"`@ada` and @bob", []string{"bob"}},
		{"``x ` @ada`` @cy", []string{"cy"}},
		{"```\n@ada\n```\n@bob", []string{"bob"}},
		{"~~~~\n@ada\n~~~\n@bob\n~~~~\n@cy", []string{"cy"}},
		{"```\n@ada never closed", nil},
		{"**@ada** and ~~@bob~~", []string{"ada", "bob"}},
		{"an odd ` @ada", []string{"ada"}},
	} {
		got := chat.Mentioned(tt.in, members)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("Mentioned(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// This file owns the contract of service.Messages: what the use cases
// rely on of any storage of messages, checked the same way against every
// implementation.

package storagetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/service"
)

// Store is what the contract checks: the service's Messages, and a
// reader's marker to see MarkRead's effect; the search index, recent
// searches and DM lists (service.Searches), with how a message gets
// into the index (the indexer's write, off the post's path); the files
// (service.Files).
type Store interface {
	service.Messages
	// Marker is login's marker in conversation, zero if none.
	Marker(ctx context.Context, login, conversation string) (chat.ID, error)
	service.Searches
	IndexMessage(ctx context.Context, m chat.Message) error
	RecordDMMessage(ctx context.Context, d chat.DM, m chat.Message) error
	service.Files
}

// Run checks the contract of Messages against what setup gives. Each
// subtest works in a DM of its own, so one Store may serve them all, and
// they run in parallel.
func Run(t *testing.T, setup func(t *testing.T) Store) {
	t.Run("Drafts", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, _ := start(t, setup)
		if _, err := s.DraftMessage(dm, chat.UserRef{Login: "stranger"}, "hello"); !errors.Is(err, chat.ErrNotParticipant) {
			t.Fatalf("a draft by someone outside the DM: %v, want ErrNotParticipant", err)
		}
		if _, err := s.DraftMessage(dm, ada, "  "); !errors.Is(err, chat.ErrInvalid) {
			t.Fatalf("a blank draft: %v, want ErrInvalid", err)
		}
		first := draft(t, s, dm, ada, "one")
		second := draft(t, s, dm, ada, "two")
		if !second.ID.After(first.ID) || first.Room != dm.Conversation().ID {
			t.Fatalf("drafts %v then %v in %q: want ids in order in %q", first.ID, second.ID, first.Room, dm.Conversation().ID)
		}
	})
	t.Run("SaveAndRead", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, bob := start(t, setup)
		m := post(t, s, dm, ada, "hello bob")
		got := read(t, s, dm, m.ID)
		if got.Content != "hello bob" || got.Author.Login != ada.Login || got.Room != m.Room || got.System {
			t.Fatalf("read %+v, want %+v", got, m)
		}
		sys := s.DraftSystemMessage(dm, bob, "bob is here")
		if err := s.SaveFencedMessage(context.Background(), dm, sys); err != nil {
			t.Fatalf("save a system message: %v", err)
		}
		if got := read(t, s, dm, sys.ID); !got.System || got.Content != "bob is here" {
			t.Fatalf("system message read as %+v", got)
		}
	})
	t.Run("Missing", func(t *testing.T) {
		t.Parallel()
		s, dm, _, _ := start(t, setup)
		for name, id := range map[string]chat.ID{
			"NeverPosted":       s.NewChangeID(),
			"BeforeTheDMBegins": chat.MinIDAt(chat.DMEpoch.Add(-time.Hour)),
		} {
			if _, err := s.Message(context.Background(), dm, id); !errors.Is(err, chat.ErrNotFound) {
				t.Errorf("%s: %v, want ErrNotFound", name, err)
			}
		}
	})
	t.Run("Edit", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, _ := start(t, setup)
		m := post(t, s, dm, ada, "frist")
		change := s.NewChangeID()
		edited, err := s.EditMessage(context.Background(), dm, m, "first", change)
		if err != nil {
			t.Fatalf("edit: %v", err)
		}
		if edited.Content != "first" || edited.Edited != change || edited.ID != m.ID {
			t.Fatalf("edited %+v, want content first, edited %v", edited, change)
		}
		if got := read(t, s, dm, m.ID); got.Content != "first" || got.Edited != change {
			t.Fatalf("read after the edit: %+v", got)
		}
		if _, err := s.EditMessage(context.Background(), dm, edited, "", s.NewChangeID()); !errors.Is(err, chat.ErrInvalid) {
			t.Fatalf("an edit to nothing: %v, want ErrInvalid", err)
		}
		if got := read(t, s, dm, m.ID); got.Content != "first" {
			t.Fatalf("a refused edit changed the message to %q", got.Content)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, bob := start(t, setup)
		m := post(t, s, dm, ada, "oops")
		kept := post(t, s, dm, ada, "kept")
		react(t, s, dm, m.ID, bob, "👍", true)
		if err := s.DeleteMessage(context.Background(), dm, m, s.NewChangeID()); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if _, err := s.Message(context.Background(), dm, m.ID); !errors.Is(err, chat.ErrNotFound) {
			t.Fatalf("read after the delete: %v, want ErrNotFound", err)
		}
		if _, err := s.React(context.Background(), dm, m.ID, bob, "🎉", true, s.NewChangeID()); !errors.Is(err, chat.ErrNotFound) {
			t.Fatalf("a reaction to a deleted message: %v, want ErrNotFound", err)
		}
		read(t, s, dm, kept.ID)
	})
	t.Run("React", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, bob := start(t, setup)
		m := post(t, s, dm, ada, "vote")
		change := s.NewChangeID()
		ch, err := s.React(context.Background(), dm, m.ID, bob, "👍", true, change)
		if err != nil {
			t.Fatalf("react: %v", err)
		}
		want := chat.Change{ID: change, Message: m.ID, Kind: chat.ChangeReaction, Emoji: "👍", Reactor: bob, Added: true}
		if ch != want {
			t.Fatalf("change %+v, want %+v", ch, want)
		}
		if ch := react(t, s, dm, m.ID, bob, "👍", false); ch.Added || ch.Emoji != "👍" {
			t.Fatalf("taking back: %+v", ch)
		}
		if _, err := s.React(context.Background(), dm, m.ID, bob, " ", true, s.NewChangeID()); !errors.Is(err, chat.ErrInvalid) {
			t.Fatalf("a blank reaction: %v, want ErrInvalid", err)
		}
		if _, err := s.React(context.Background(), dm, s.NewChangeID(), bob, "👍", true, s.NewChangeID()); !errors.Is(err, chat.ErrNotFound) {
			t.Fatalf("a reaction to no message: %v, want ErrNotFound", err)
		}
	})
	t.Run("AtMostMaxReactions", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, bob := start(t, setup)
		m := post(t, s, dm, ada, "so many")
		for i := range chat.MaxReactions {
			react(t, s, dm, m.ID, bob, fmt.Sprintf("r%d", i), true)
		}
		if _, err := s.React(context.Background(), dm, m.ID, ada, "one more", true, s.NewChangeID()); !errors.Is(err, chat.ErrInvalid) {
			t.Fatalf("reaction %d: %v, want ErrInvalid", chat.MaxReactions+1, err)
		}
		react(t, s, dm, m.ID, ada, "r0", true) // an existing one is not new
	})
	t.Run("MarkRead", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, bob := start(t, setup)
		conv := dm.Conversation().ID
		if got := marker(t, s, bob.Login, conv); got != (chat.ID{}) {
			t.Fatalf("marker before any read: %v, want zero", got)
		}
		older, newer := post(t, s, dm, ada, "one"), post(t, s, dm, ada, "two")
		mark(t, s, bob.Login, conv, newer.ID)
		mark(t, s, bob.Login, conv, older.ID)
		if got := marker(t, s, bob.Login, conv); got != newer.ID {
			t.Fatalf("marker %v after marking %v then the older %v", got, newer.ID, older.ID)
		}
	})
	runSearches(t, setup)
	runFiles(t, setup)
}

// start gives a subtest a Store and a DM of two new people of its own.
func start(t *testing.T, setup func(t *testing.T) Store) (Store, chat.DM, chat.UserRef, chat.UserRef) {
	t.Helper()
	s := setup(t)
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	suffix := hex.EncodeToString(b)
	ada, bob := chat.UserRef{Login: "ada" + suffix, Firstname: "Ada"}, chat.UserRef{Login: "bob" + suffix, Firstname: "Bob"}
	address, err := chat.DMAddress([]string{ada.Login, bob.Login})
	if err != nil {
		t.Fatal(err)
	}
	return s, chat.DM{Address: address, Members: []chat.UserRef{ada, bob}}, ada, bob
}

func draft(t *testing.T, s Store, in chat.Place, author chat.UserRef, content string) chat.Message {
	t.Helper()
	m, err := s.DraftMessage(in, author, content)
	if err != nil {
		t.Fatalf("draft %q: %v", content, err)
	}
	return m
}

func post(t *testing.T, s Store, in chat.Place, author chat.UserRef, content string) chat.Message {
	t.Helper()
	m := draft(t, s, in, author, content)
	if err := s.SaveMessage(context.Background(), in, m); err != nil {
		t.Fatalf("save %q: %v", content, err)
	}
	return m
}

func read(t *testing.T, s Store, in chat.Place, id chat.ID) chat.Message {
	t.Helper()
	m, err := s.Message(context.Background(), in, id)
	if err != nil {
		t.Fatalf("read %v: %v", id, err)
	}
	return m
}

func react(t *testing.T, s Store, in chat.Place, id chat.ID, who chat.UserRef, emoji string, add bool) chat.Change {
	t.Helper()
	ch, err := s.React(context.Background(), in, id, who, emoji, add, s.NewChangeID())
	if err != nil {
		t.Fatalf("react %q (add %v): %v", emoji, add, err)
	}
	return ch
}

func mark(t *testing.T, s Store, login, conv string, id chat.ID) {
	t.Helper()
	if err := s.MarkRead(context.Background(), login, conv, id); err != nil {
		t.Fatalf("mark read: %v", err)
	}
}

func marker(t *testing.T, s Store, login, conv string) chat.ID {
	t.Helper()
	id, err := s.Marker(context.Background(), login, conv)
	if err != nil {
		t.Fatalf("marker: %v", err)
	}
	return id
}

package service_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/service"
)

// This file tests the use cases of files over the in-memory storage: a
// file stored and posted once per send, the file of a message that could
// not be posted discarded, a file read by its conversation's members
// only.

// roomsRead is memStorage with the rooms' reads of the room a file is
// in, as the caches answer them: each room with its participants.
type roomsRead struct {
	*memStorage
	rooms map[string]chat.RoomWithAll
}

func (r roomsRead) RoomFor(_ context.Context, name, login string) (chat.RoomFor, error) {
	room, ok := r.rooms[name]
	if !ok {
		return chat.RoomFor{}, chat.ErrNotFound
	}
	return room.For(login), nil
}

func TestPostFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	var storedBytes atomic.Int64
	svc := service.New(service.Deps{Storage: f.db, Sequencer: f.seq, Renderer: renderer{}, Indexer: f.ix, Bus: f.bus,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), FileStored: func(_ context.Context, n int64) { storedBytes.Add(n) }})
	send := func(name, body, text, clientID string) (chat.Message, bool, error) {
		return svc.PostFile(ctx, service.FilePost{In: f.dm, Uploader: f.ada, Name: name, Body: strings.NewReader(body),
			Limit: 100, Text: text, ClientID: clientID})
	}
	m, stored, err := send("notes.txt", "the notes", "see the notes", "c1/1")
	if err != nil || !stored {
		t.Fatalf("post a file: stored %v, %v", stored, err)
	}
	if m.Attachment == nil || m.Attachment.Name != "notes.txt" || m.Attachment.Size != 9 || m.Content != "see the notes" {
		t.Fatalf("posted %+v", m)
	}
	if got := f.seq.events(); !equal(got, []string{"message: see the notes"}) {
		t.Fatalf("published %q", got)
	}
	if storedBytes.Load() != 9 {
		t.Fatalf("heard of %d bytes stored, want 9", storedBytes.Load())
	}
	if a, err := f.db.Attachment(ctx, m.Attachment.ID); err != nil || a.Conversation != f.dm.Conversation().ID {
		t.Fatalf("the file: %+v, %v", a, err)
	}

	t.Run("RepeatedSend", func(t *testing.T) {
		again, stored, err := send("notes.txt", "the notes", "see the notes", "c1/1")
		if err != nil || stored || again.ID != m.ID {
			t.Fatalf("a repeat: %v stored %v, %v; want the first message, nothing stored", again.ID, stored, err)
		}
	})
	t.Run("TooLarge", func(t *testing.T) {
		_, _, err := send("big.bin", strings.Repeat("x", 101), "", "")
		var notStored *service.StoreError
		if !errors.As(err, &notStored) || !errors.Is(err, chat.ErrTooLarge) {
			t.Fatalf("101 bytes of at most 100: %v, want a StoreError of ErrTooLarge", err)
		}
	})
	t.Run("NotPostedIsDiscarded", func(t *testing.T) {
		before := len(f.seq.events())
		// A text the domain refuses: the file is stored, its message is not.
		_, _, err := send("late.txt", "late", strings.Repeat("x", chat.MaxContent+1), "")
		var notStored *service.StoreError
		if !errors.Is(err, chat.ErrInvalid) || errors.As(err, &notStored) {
			t.Fatalf("a refused text: %v, want ErrInvalid, not a StoreError", err)
		}
		if len(f.seq.events()) != before {
			t.Fatal("a message not posted was published")
		}
		if n := f.db.Files(); n != 1 {
			t.Fatalf("%d files kept, want the first one only", n)
		}
	})
	t.Run("WithoutFile", func(t *testing.T) {
		m, err := svc.PostWithoutFile(ctx, f.dm, f.ada, "just text", "c2")
		if err != nil || m.Content != "just text" || m.Attachment != nil {
			t.Fatalf("text alone: %+v, %v", m, err)
		}
		if again, err := svc.PostWithoutFile(ctx, f.dm, f.ada, "just text", "c2"); err != nil || again.ID != m.ID {
			t.Fatalf("its repeat: %v, %v; want %v", again.ID, err, m.ID)
		}
		if _, err := svc.PostWithoutFile(ctx, f.dm, f.ada, " ", ""); !errors.Is(err, chat.ErrInvalid) {
			t.Fatalf("nothing at all: %v, want ErrInvalid", err)
		}
	})
}

func TestFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	carol := chat.UserRef{Login: "carol", Firstname: "Carol"}
	created := time.Now().Add(-time.Hour)
	garden := chat.RoomWithAll{Room: chat.Room{Name: "garden", DisplayName: "Garden", CreatedAt: created},
		Participants: map[string]chat.UserRef{"ada": f.ada, "carol": carol}}
	db := roomsRead{memStorage: f.db, rooms: map[string]chat.RoomWithAll{"garden": garden}}
	svc := service.New(service.Deps{Storage: db, Sequencer: f.seq, Renderer: renderer{}, Indexer: f.ix, Bus: f.bus,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	store := func(in chat.Place, by chat.UserRef) chat.Attachment {
		t.Helper()
		a, err := f.db.StoreAttachment(ctx, in, by, "f.txt", strings.NewReader("data"), 100)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	inDM, inRoom := store(f.dm, f.bob), store(garden, carol)
	for _, c := range []struct {
		name  string
		login string
		id    chat.ID
		ok    bool
	}{
		{"DMMember", "ada", inDM.ID, true},
		{"NotInTheDM", "carol", inDM.ID, false},
		{"RoomMember", "ada", inRoom.ID, true},
		{"NotInTheRoom", "bob", inRoom.ID, false},
		{"NoSuchFile", "ada", f.db.NewChangeID(), false},
	} {
		a, err := svc.File(ctx, c.login, c.id)
		switch {
		case c.ok && (err != nil || a.ID != c.id):
			t.Errorf("%s: %+v, %v", c.name, a, err)
		case !c.ok && !errors.Is(err, chat.ErrNotFound):
			t.Errorf("%s: %v, want ErrNotFound", c.name, err)
		}
	}
	t.Run("OfAnEarlierRoom", func(t *testing.T) {
		// The room of the name now began after the file: the file was
		// an earlier room's, since deleted.
		renamed := garden
		renamed.CreatedAt = time.Now().Add(time.Minute)
		db.rooms["garden"] = renamed
		if _, err := svc.File(ctx, "ada", inRoom.ID); !errors.Is(err, chat.ErrNotFound) {
			t.Fatalf("%v, want ErrNotFound", err)
		}
	})
}

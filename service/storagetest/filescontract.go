// This file owns the contract of service.Files: a file stored as it
// streams in, read back, refused, discarded, and the draft of the
// message that carries it.

package storagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// runFiles checks the contract of service.Files; each subtest works in
// a DM of its own, in parallel.
func runFiles(t *testing.T, setup func(t *testing.T) Store) {
	t.Run("StoreAndRead", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, _ := start(t, setup)
		ctx := context.Background()
		body := "minutes of the meeting\n"
		a, err := s.StoreAttachment(ctx, dm, ada, "../notes/minutes.txt", strings.NewReader(body), 1<<20)
		if err != nil {
			t.Fatalf("store: %v", err)
		}
		sum := sha256.Sum256([]byte(body))
		if a.Name != "minutes.txt" || a.Size != int64(len(body)) || a.Conversation != dm.Conversation().ID ||
			a.Uploader.Login != ada.Login || !bytes.Equal(a.SHA256, sum[:]) || a.ContentType != "text/plain; charset=utf-8" || a.Inline() {
			t.Fatalf("stored %+v", a)
		}
		got, err := s.Attachment(ctx, a.ID)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if got.ID != a.ID || got.Name != a.Name || got.Size != a.Size || got.ContentType != a.ContentType ||
			!bytes.Equal(got.SHA256, a.SHA256) || got.Conversation != a.Conversation || got.Uploader.Login != ada.Login {
			t.Fatalf("read back %+v, stored %+v", got, a)
		}
		r := s.OpenAttachment(ctx, got)
		defer r.Close()
		if _, err := r.Seek(9, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(r); err != nil || string(b) != body[9:] {
			t.Fatalf("read from byte 9: %q, %v", b, err)
		}
		if err := s.DiscardAttachment(ctx, got); err != nil {
			t.Fatalf("discard: %v", err)
		}
		if _, err := s.Attachment(ctx, a.ID); !errors.Is(err, chat.ErrNotFound) {
			t.Fatalf("read after discard: %v, want ErrNotFound", err)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, _ := start(t, setup)
		ctx := context.Background()
		if _, err := s.StoreAttachment(ctx, dm, chat.UserRef{Login: "stranger"}, "a.txt", strings.NewReader("hi"), 100); !errors.Is(err, chat.ErrNotParticipant) {
			t.Fatalf("a file from outside the DM: %v, want ErrNotParticipant", err)
		}
		if _, err := s.StoreAttachment(ctx, dm, ada, "big.txt", strings.NewReader(strings.Repeat("x", 101)), 100); !errors.Is(err, chat.ErrTooLarge) {
			t.Fatalf("101 bytes of at most 100: %v, want ErrTooLarge", err)
		}
		if _, err := s.Attachment(ctx, s.NewChangeID()); !errors.Is(err, chat.ErrNotFound) {
			t.Fatalf("no such file: %v, want ErrNotFound", err)
		}
	})
	t.Run("DraftWithAFile", func(t *testing.T) {
		t.Parallel()
		s, dm, ada, _ := start(t, setup)
		ctx := context.Background()
		a, err := s.StoreAttachment(ctx, dm, ada, "plan.txt", strings.NewReader("the plan"), 100)
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.DraftAttachmentMessage(dm, ada, "  ", a.Ref())
		if err != nil {
			t.Fatalf("a file with no text: %v", err)
		}
		if m.Content != "" || m.Attachment == nil || *m.Attachment != a.Ref() {
			t.Fatalf("drafted %+v", m)
		}
		if err := s.SaveMessage(ctx, dm, m); err != nil {
			t.Fatal(err)
		}
		if got := read(t, s, dm, m.ID); got.Attachment == nil || got.Attachment.ID != a.ID || got.Attachment.Name != "plan.txt" {
			t.Fatalf("read back %+v", got)
		}
		if _, err := s.DraftAttachmentMessage(dm, chat.UserRef{Login: "stranger"}, "", a.Ref()); !errors.Is(err, chat.ErrNotParticipant) {
			t.Fatalf("a draft from outside: %v, want ErrNotParticipant", err)
		}
	})
}

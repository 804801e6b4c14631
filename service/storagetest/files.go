// This file owns Memory's files: what store.Store keeps in the
// attachments and attachment_chunks tables, whole in memory, with no
// previews.

package storagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// StoreAttachment reads body (at most limit bytes) as a file of in by
// uploader. Memory makes no previews: a file's Width is 0.
func (s *Memory) StoreAttachment(_ context.Context, in chat.Place, uploader chat.UserRef, name string, body io.Reader, limit int64) (chat.Attachment, error) {
	conv := in.Conversation()
	if !conv.Has(uploader.Login) {
		return chat.Attachment{}, fmt.Errorf("memory: upload to %q by %q: %w", conv.ID, uploader.Login, chat.ErrNotParticipant)
	}
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return chat.Attachment{}, err
	}
	if int64(len(data)) > limit {
		return chat.Attachment{}, fmt.Errorf("memory: upload %q: more than %d bytes: %w", name, limit, chat.ErrTooLarge)
	}
	sum := sha256.Sum256(data)
	a := chat.Attachment{ID: s.ids.Next(s.now()), Conversation: conv.ID, Uploader: uploader, Name: chat.CleanFileName(name),
		Size: int64(len(data)), ContentType: chat.SniffContentType(data), SHA256: sum[:]}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[a.ID] = storedFile{a, data}
	return a, nil
}

// DiscardAttachment deletes a's file.
func (s *Memory) DiscardAttachment(_ context.Context, a chat.Attachment) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.files, a.ID)
	return nil
}

// Attachment is the file id; chat.ErrNotFound if there is none.
func (s *Memory) Attachment(_ context.Context, id chat.ID) (chat.Attachment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[id]
	if !ok {
		return chat.Attachment{}, fmt.Errorf("memory: attachment %s: %w", id, chat.ErrNotFound)
	}
	return f.Attachment, nil
}

// OpenAttachment reads a's bytes.
func (s *Memory) OpenAttachment(_ context.Context, a chat.Attachment) io.ReadSeekCloser {
	s.mu.Lock()
	defer s.mu.Unlock()
	return readSeekNopCloser{bytes.NewReader(s.files[a.ID].data)}
}

// SweepUploads has nothing to sweep: an upload to Memory is never left
// pending.
func (s *Memory) SweepUploads(context.Context, time.Time) (int, error) { return 0, nil }

// DraftAttachmentMessage is DraftMessage for a message that carries
// file: its content may be empty.
func (s *Memory) DraftAttachmentMessage(in chat.Place, author chat.UserRef, content string, file chat.AttachmentRef) (chat.Message, error) {
	conv := in.Conversation()
	if !conv.Has(author.Login) {
		return chat.Message{}, fmt.Errorf("memory: post in %q by %q: %w", conv.ID, author.Login, chat.ErrNotParticipant)
	}
	content, err := chat.CheckCaption(content)
	if err != nil {
		return chat.Message{}, err
	}
	return chat.Message{ID: s.ids.Next(s.now()), Room: conv.ID, Author: author, Content: content, Attachment: &file}, nil
}

// Files is how many files Memory holds.
func (s *Memory) Files() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.files)
}

// storedFile is a file and its bytes.
type storedFile struct {
	chat.Attachment
	data []byte
}

type readSeekNopCloser struct{ *bytes.Reader }

func (readSeekNopCloser) Close() error { return nil }

// This file owns the files of conversations: an uploaded file stored and
// posted as its message (once per composer's send), a file's read by the
// members of its conversation, and the sweep of uploads that died.

package service

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// Files are the attachments as stored (store.Store): written chunk by
// chunk as an upload streams in, read by id, and swept when their upload
// died.
type Files interface {
	// StoreAttachment stores body (at most limit bytes) as a file of in
	// by uploader; chat.ErrTooLarge past limit, a chat.ValidationError
	// for a file refused, the body's error if it fails. Nothing is kept
	// of a file not stored.
	StoreAttachment(ctx context.Context, in chat.Place, uploader chat.UserRef, name string, body io.Reader, limit int64) (chat.Attachment, error)
	// DiscardAttachment deletes a stored file.
	DiscardAttachment(ctx context.Context, a chat.Attachment) error
	// Attachment is the file id; chat.ErrNotFound if there is none.
	Attachment(ctx context.Context, id chat.ID) (chat.Attachment, error)
	// OpenAttachment reads a's bytes, with Seek.
	OpenAttachment(ctx context.Context, a chat.Attachment) io.ReadSeekCloser
	// SweepUploads deletes the uploads still pending that began before
	// olderThan, and returns how many.
	SweepUploads(ctx context.Context, olderThan time.Time) (int, error)
	// DraftAttachmentMessage is DraftMessage for a message that carries
	// file (its content may be empty).
	DraftAttachmentMessage(in chat.Place, author chat.UserRef, content string, file chat.AttachmentRef) (chat.Message, error)
}

// FilePost is one file of a composer's send, read as it arrives.
type FilePost struct {
	In       chat.Place
	Uploader chat.UserRef
	Name     string
	Body     io.Reader
	// Limit bounds the file's bytes.
	Limit int64
	// Text is the message's text, with the first file of a send.
	Text string
	// ClientID makes the send once (see PostOnce): "" for none.
	ClientID string
}

// StoreError is a failure to store an upload's file (too large, refused,
// too slow, cut off): nothing of it is kept, and no message is posted.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return "store the file: " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// postFileTimeout bounds posting a stored file's message, which no longer
// depends on the client: its bytes are all in.
const postFileTimeout = 30 * time.Second

// PostFile stores f's file and posts its message, once per client id. A
// repeat of a send already done stores nothing and returns the first
// one's message with stored false: its bytes are the caller's to read
// past. Once the file is stored it is posted under a context of its own,
// so a client that hangs up after its last byte still gets its message;
// a file whose message cannot be posted (the room was deleted meanwhile,
// Cassandra failed) is deleted, so no file is ever left without one. A
// failure to store the file is a *StoreError.
func (s *Service) PostFile(ctx context.Context, f FilePost) (m chat.Message, stored bool, err error) {
	// The same gate as a text's: an active author, and no closed account
	// in a DM; checked before a byte is stored.
	if err := s.mayPost(ctx, f.In, f.Uploader.Login); err != nil {
		return chat.Message{}, false, err
	}
	m, err = s.PostOnce(ctx, f.Uploader.Login, f.In.Conversation().ID, f.ClientID, func(ctx context.Context) (chat.Message, error) {
		stored = true
		return s.postFile(ctx, f)
	})
	return m, stored, err
}

func (s *Service) postFile(ctx context.Context, f FilePost) (chat.Message, error) {
	a, err := s.Storage.StoreAttachment(ctx, f.In, f.Uploader, f.Name, f.Body, f.Limit)
	if err != nil {
		return chat.Message{}, &StoreError{err}
	}
	s.FileStored(ctx, a.Size)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), postFileTimeout)
	defer cancel()
	m, err := s.Post(ctx, f.In, func() (chat.Message, error) {
		return s.Storage.DraftAttachmentMessage(f.In, f.Uploader, f.Text, a.Ref())
	})
	if err != nil {
		if derr := s.Storage.DiscardAttachment(ctx, a); derr != nil {
			s.Log.Warn("discard the file of a message not posted", "attachment", a.ID, "err", derr)
		}
		return chat.Message{}, err
	}
	return m, nil
}

// PostWithoutFile posts the text of a composer's send that came as a
// form for files but with none, once per client id; a content the
// domain refuses is ErrInvalid's.
func (s *Service) PostWithoutFile(ctx context.Context, in chat.Place, author chat.UserRef, content, clientID string) (chat.Message, error) {
	if err := s.mayPost(ctx, in, author.Login); err != nil {
		return chat.Message{}, err
	}
	return s.PostOnce(ctx, author.Login, in.Conversation().ID, clientID, func(ctx context.Context) (chat.Message, error) {
		return s.Post(ctx, in, func() (chat.Message, error) { return s.Storage.DraftMessage(in, author, content) })
	})
}

// File is the file id, for login to read: chat.ErrNotFound unless login
// is a member of its conversation now (a DM's members are in its id; a
// room's are read, and a file of an earlier room of the same name, since
// deleted, is no one's).
func (s *Service) File(ctx context.Context, login string, id chat.ID) (chat.Attachment, error) {
	a, err := s.Storage.Attachment(ctx, id)
	if err != nil {
		return chat.Attachment{}, err
	}
	ok, err := s.mayRead(ctx, login, a)
	if err != nil {
		return chat.Attachment{}, err
	}
	if !ok {
		return chat.Attachment{}, chat.ErrNotFound
	}
	return a, nil
}

func (s *Service) mayRead(ctx context.Context, login string, a chat.Attachment) (bool, error) {
	if chat.IsDM(a.Conversation) {
		for _, m := range strings.Split(strings.TrimPrefix(a.Conversation, chat.DMPrefix), "+") {
			if m == login {
				return true, nil
			}
		}
		return false, nil
	}
	r, err := s.Rows.RoomFor(ctx, a.Conversation, login)
	if errors.Is(err, chat.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return r.IsMember() && !a.ID.Time().Before(r.CreatedAt), nil
}

// SweepUploads deletes the uploads of dead processes: pending for longer
// than olderThan allows, which no living upload is. Every instance
// sweeps; the deletes are idempotent.
func (s *Service) SweepUploads(ctx context.Context, olderThan time.Time) {
	n, err := s.Storage.SweepUploads(ctx, olderThan)
	if err != nil {
		s.Log.Warn("sweep dead uploads", "err", err)
	} else if n > 0 {
		s.Log.Info("swept dead uploads", "count", n)
	}
}

// This file owns attachments: files of a conversation stored in chunks of
// 1000 KB, one partition per chunk (the email data model's attachments
// table). An upload is written chunk by chunk while it streams in, with
// bounded parallelism and a bounded number of chunk buffers per process,
// taken only once a chunk's first bytes have arrived (so a stalled upload
// holds none), and the server never holds a whole file; a download reads back only the
// chunks its range needs. The metadata row turns 'ready' only after every
// chunk is stored; an upload that fails deletes what it wrote, and one
// whose process died is swept (see SweepUploads).

package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image"
	"io"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertAttachment = `INSERT INTO attachments (id, conversation, uploader, file_name, size, content_type, sha256,
		chunk_size, chunk_count, status, width, height, preview_id, preview_width, preview_height)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	selectAttachment = `SELECT id, conversation, uploader, file_name, size, content_type, sha256,
		chunk_size, chunk_count, status, width, height, preview_id, preview_width, preview_height
		FROM attachments WHERE id = ?`
	selectAttachmentStatus = `SELECT status FROM attachments WHERE id = ?`
	deleteAttachment       = `DELETE FROM attachments WHERE id = ?`
	insertChunk            = `INSERT INTO attachment_chunks (attachment_id, chunk_no, data) VALUES (?, ?, ?)`
	selectChunk            = `SELECT data FROM attachment_chunks WHERE attachment_id = ? AND chunk_no = ?`
	deleteChunk            = `DELETE FROM attachment_chunks WHERE attachment_id = ? AND chunk_no = ?`

	insertConversationAttachment = `INSERT INTO attachments_by_conversation (conversation, attachment_id, chunk_count)
		VALUES (?, ?, ?)`
	deleteConversationAttachment  = `DELETE FROM attachments_by_conversation WHERE conversation = ? AND attachment_id = ?`
	selectConversationAttachments = `SELECT attachment_id, chunk_count FROM attachments_by_conversation WHERE conversation = ?`
	deleteConversationAttachments = `DELETE FROM attachments_by_conversation WHERE conversation = ?`

	insertPendingUpload  = `INSERT INTO pending_uploads (day, attachment_id, conversation, chunk_limit) VALUES (?, ?, ?, ?)`
	deletePendingUpload  = `DELETE FROM pending_uploads WHERE day = ? AND attachment_id = ?`
	selectPendingUploads = `SELECT attachment_id, conversation, chunk_limit FROM pending_uploads
		WHERE day = ? AND attachment_id < ?`
)

const (
	// ChunkSize is the size of one chunk row: the email data model's
	// 1000 KB. Every chunk but the last of a file is exactly this long.
	ChunkSize = 1000 * 1024
	// StatusPending and StatusReady are an attachment's states.
	StatusPending = "pending"
	StatusReady   = "ready"

	// DefaultReadBudget is the default of Config.ReadBudget.
	DefaultReadBudget = 32 << 20
	// uploadParallelism bounds the chunk inserts one upload has in flight.
	uploadParallelism = 4
	// defaultChunkBuffers bounds the chunk buffers of all uploads of this
	// process together (Config.ChunkBuffers): the upload memory is at most
	// this many chunks, however many people upload at once; an upload
	// that finds none free waits, and its client's TCP window fills.
	defaultChunkBuffers = 8
	// chunkHead is how much of a chunk an upload reads into its own
	// buffer before it takes one of the process's chunk buffers.
	chunkHead = 32 << 10
	// sweepDays is how many days of pending_uploads a sweep reads.
	sweepDays = 7
)

// upload is an attachment as its upload stores it, with what decoding
// the image takes (see decodedBytes), known only then.
type upload struct {
	chat.Attachment
	decodeBytes int64
}

// attachmentUDT is an AttachmentRef as the driver reads and writes the
// user-defined type attachment_ref.
type attachmentUDT struct {
	ID            gocql.UUID `cql:"id"`
	Name          string     `cql:"file_name"`
	Size          int64      `cql:"size"`
	ContentType   string     `cql:"content_type"`
	PreviewID     gocql.UUID `cql:"preview_id"`
	PreviewWidth  int        `cql:"preview_width"`
	PreviewHeight int        `cql:"preview_height"`
}

// udtOf is r as the driver writes it.
func udtOf(r *chat.AttachmentRef) *attachmentUDT {
	return &attachmentUDT{ID: gocql.UUID(r.ID), Name: r.Name, Size: r.Size, ContentType: r.ContentType,
		PreviewID: gocql.UUID(r.PreviewID), PreviewWidth: r.PreviewWidth, PreviewHeight: r.PreviewHeight}
}

// ref is u as the message carries it, nil for no attachment.
func (u *attachmentUDT) ref() *chat.AttachmentRef {
	if u == nil {
		return nil
	}
	return &chat.AttachmentRef{ID: chat.ID(u.ID), Name: u.Name, Size: u.Size, ContentType: u.ContentType,
		PreviewID: chat.ID(u.PreviewID), PreviewWidth: u.PreviewWidth, PreviewHeight: u.PreviewHeight}
}

// chunkLimit is the most chunks a file of at most limit bytes has.
func chunkLimit(limit int64) int { return int(max((limit+ChunkSize-1)/ChunkSize, 1)) }

// chunkBuffer takes one of the process's chunk buffers, waiting for one
// while every one is in use.
func (s *Store) chunkBuffer(ctx context.Context) ([]byte, error) {
	s.chunkBufsOnce.Do(func() {
		n := s.cfg.ChunkBuffers
		if n <= 0 {
			n = defaultChunkBuffers
		}
		s.chunkBufs = make(chan []byte, n)
		for range n {
			s.chunkBufs <- nil // allocated on first use
		}
	})
	select {
	case b := <-s.chunkBufs:
		if b == nil {
			b = make([]byte, ChunkSize)
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Store) releaseChunkBuffer(b []byte) { s.chunkBufs <- b }

// StoreAttachment stores the file read from body as an attachment of in,
// uploaded by uploader: chunk by chunk as body is read, each chunk an
// idempotent insert of its own (never a batch), at most
// uploadParallelism in flight. A raster image gets a preview of at most
// PreviewWidth×PreviewHeight, stored as its own attachment. The metadata
// turns ready only after every chunk is stored; on any error what was
// written is deleted. It returns chat.ErrNotParticipant unless uploader is a
// member of in, chat.ErrTooLarge when body holds more than limit bytes, a
// chat.ValidationError for an image with more than MaxImagePixels pixels
// (checked from its header, before anything is stored), and the reading
// error of body when the upload is cut off.
func (s *Store) StoreAttachment(ctx context.Context, in chat.Place, uploader chat.UserRef, name string, body io.Reader, limit int64) (chat.Attachment, error) {
	conv := in.Conversation()
	if !conv.Has(uploader.Login) {
		return chat.Attachment{}, fmt.Errorf("store: upload to %q by %q: %w", conv.ID, uploader.Login, chat.ErrNotParticipant)
	}
	a, err := s.storeChunks(ctx, conv.ID, uploader, chat.CleanFileName(name), body, limit)
	if err != nil {
		return chat.Attachment{}, err
	}
	if a.Width > 0 {
		if err := s.addPreview(ctx, &a); errors.Is(err, errNoPreview) {
			s.log.Info("store: no preview", "attachment", a.ID, "err", err)
		} else if err != nil {
			// A header that decoded but a body that does not: the file
			// is kept, for download, without a preview.
			s.log.Warn("store: no preview", "attachment", a.ID, "err", err)
		}
	}
	return a.Attachment, s.finishAttachment(ctx, a.Attachment)
}

// storeChunks writes the pending rows and the chunks of body. The
// attachment it returns is complete but still pending.
func (s *Store) storeChunks(ctx context.Context, conv string, uploader chat.UserRef, name string, body io.Reader, limit int64) (upload, error) {
	a := upload{Attachment: chat.Attachment{ID: chat.ID(gocql.UUIDFromTime(s.Now())), Conversation: conv, Uploader: uploader, Name: name,
		ChunkSize: ChunkSize, Status: StatusPending}}
	most := chunkLimit(limit)
	// The pending row goes first: from then on a crash leaves something
	// the sweeper finds. The listing lets a room's deletion find it too.
	if err := s.exec(ctx, "record pending upload", insertPendingUpload, chat.BucketOf(a.ID), gocql.UUID(a.ID), conv, most); err != nil {
		return upload{}, err
	}
	if err := s.exec(ctx, "list attachment", insertConversationAttachment, conv, gocql.UUID(a.ID), most); err != nil {
		s.discardUpload(ctx, a.Attachment, 0)
		return upload{}, err
	}
	if err := s.writeAttachmentRow(ctx, a.Attachment); err != nil {
		s.discardUpload(ctx, a.Attachment, 0)
		return upload{}, err
	}

	var (
		hash     = sha256.New()
		inFlight = make(chan struct{}, uploadParallelism)
		wg       sync.WaitGroup
		mu       sync.Mutex
		failed   error
	)
	fail := func(err error) {
		mu.Lock()
		if failed == nil {
			failed = err
		}
		mu.Unlock()
	}
	failure := func() error {
		mu.Lock()
		defer mu.Unlock()
		return failed
	}
	chunks := 0
	// Each chunk's first bytes are read into this upload's own small
	// buffer, and a chunk buffer of the process is taken only once they
	// are at hand: an upload that stalls before a chunk holds none.
	head := make([]byte, chunkHead)
	for failure() == nil {
		h, rerr := fill(body, head)
		var (
			buf []byte
			n   = h
		)
		if h > 0 {
			var err error
			if buf, err = s.chunkBuffer(ctx); err != nil {
				fail(err)
				break
			}
			copy(buf, head[:h])
			if rerr == nil {
				var m int
				m, rerr = fill(body, buf[h:])
				n += m
			}
		}
		a.Size += int64(n)
		last := errors.Is(rerr, io.EOF)
		switch {
		case a.Size > limit:
			rerr = fmt.Errorf("store: upload %q: more than %d bytes: %w", name, limit, chat.ErrTooLarge)
		case last:
			rerr = nil
		case rerr != nil:
			rerr = fmt.Errorf("store: upload %q: read: %w", name, rerr)
		}
		if rerr == nil && chunks == 0 {
			rerr = inspect(&a, buf[:n])
		}
		if rerr != nil || n == 0 {
			if buf != nil {
				s.releaseChunkBuffer(buf)
			}
			if rerr != nil {
				fail(rerr)
			}
			break
		}
		hash.Write(buf[:n])
		inFlight <- struct{}{}
		wg.Add(1)
		go func(no int, data []byte) {
			defer wg.Done()
			// The driver copies the blob into its frame, so the buffer
			// is free again when Exec returns.
			if err := s.exec(ctx, "store chunk", insertChunk, gocql.UUID(a.ID), no, data); err != nil {
				fail(err)
			}
			s.releaseChunkBuffer(buf)
			<-inFlight
		}(chunks, buf[:n])
		chunks++
		if last {
			break
		}
	}
	wg.Wait()
	if err := failure(); err != nil {
		s.discardUpload(ctx, a.Attachment, chunks)
		return upload{}, err
	}
	a.Chunks, a.SHA256 = chunks, hash.Sum(nil)
	return a, nil
}

// fill reads into buf until it is full or body ends. Unlike io.ReadFull
// it passes body's own io.ErrUnexpectedEOF on (a multipart body cut off
// before its boundary says so), and answers io.EOF only for a real end.
func fill(body io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := body.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// inspect sniffs the content type from the first chunk and, for a raster
// image, reads its size from the header: an image of more pixels than
// MaxImagePixels (a decompression bomb, say 50,000×50,000) is refused
// before anything of it is stored or decoded.
func inspect(a *upload, first []byte) error {
	a.ContentType = chat.SniffContentType(first)
	if !chat.RasterImage(a.ContentType) {
		return nil
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(first))
	if err != nil {
		return nil // not an image after all: kept as a file
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return chat.ValidationError{"file": fmt.Sprintf("This image is %d×%d pixels; images of more than %d megapixels are refused.",
			cfg.Width, cfg.Height, MaxImagePixels/1_000_000)}
	}
	a.Width, a.Height, a.decodeBytes = cfg.Width, cfg.Height, decodedBytes(cfg)
	return nil
}

func (s *Store) writeAttachmentRow(ctx context.Context, a chat.Attachment) error {
	return s.exec(ctx, "store attachment "+a.ID.String(), insertAttachment, gocql.UUID(a.ID), a.Conversation, a.Uploader, a.Name,
		a.Size, a.ContentType, a.SHA256, a.ChunkSize, a.Chunks, a.Status, a.Width, a.Height,
		gocql.UUID(a.PreviewID), a.PreviewWidth, a.PreviewHeight)
}

// finishAttachment turns a fully stored attachment ready: the metadata
// row (every column, so nothing of the pending row is left), the listing
// with the real chunk count, then the pending row goes.
func (s *Store) finishAttachment(ctx context.Context, a chat.Attachment) error {
	a.Status = StatusReady
	if err := s.writeAttachmentRow(ctx, a); err != nil {
		s.discardUpload(ctx, a, a.Chunks)
		return err
	}
	if err := s.exec(ctx, "list attachment", insertConversationAttachment, a.Conversation, gocql.UUID(a.ID), a.Chunks); err != nil {
		return err
	}
	return s.exec(ctx, "finish upload", deletePendingUpload, chat.BucketOf(a.ID), gocql.UUID(a.ID))
}

// discardUpload deletes what a failed upload wrote: its first chunks
// chunks and its rows. It runs even when ctx is cancelled (a client that
// hung up), with its own deadline; what it cannot delete, the sweeper will.
func (s *Store) discardUpload(ctx context.Context, a chat.Attachment, chunks int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.deleteAttachment(ctx, a.Conversation, a.ID, chunks); err != nil {
		s.log.Warn("store: discard upload; the sweeper will retry", "attachment", a.ID, "err", err)
		return
	}
	if err := s.exec(ctx, "discard pending upload", deletePendingUpload, chat.BucketOf(a.ID), gocql.UUID(a.ID)); err != nil {
		s.log.Warn("store: discard pending upload", "attachment", a.ID, "err", err)
	}
}

// deleteAttachment deletes the chunks, the metadata row and the listing
// row of an attachment, chunks first: a row is never left pointing at
// nothing the sweeper can find.
func (s *Store) deleteAttachment(ctx context.Context, conv string, id chat.ID, chunks int) error {
	for no := range chunks {
		if err := s.exec(ctx, "delete chunk", deleteChunk, gocql.UUID(id), no); err != nil {
			return err
		}
	}
	if err := s.exec(ctx, "delete attachment", deleteAttachment, gocql.UUID(id)); err != nil {
		return err
	}
	return s.exec(ctx, "unlist attachment", deleteConversationAttachment, conv, gocql.UUID(id))
}

// DiscardAttachment deletes a stored attachment and its preview: the
// file of a message that could not be posted. Deleting what is already
// gone is no error.
func (s *Store) DiscardAttachment(ctx context.Context, a chat.Attachment) error {
	if a.PreviewID != (chat.ID{}) && a.PreviewID != a.ID {
		p, err := s.Attachment(ctx, a.PreviewID)
		switch {
		case err == nil:
			if err := s.deleteAttachment(ctx, p.Conversation, p.ID, p.Chunks); err != nil {
				return err
			}
		case !errors.Is(err, chat.ErrNotFound):
			return err
		}
	}
	return s.deleteAttachment(ctx, a.Conversation, a.ID, a.Chunks)
}

// Attachment returns the ready attachment id, or chat.ErrNotFound (also while
// it is still being uploaded).
func (s *Store) Attachment(ctx context.Context, id chat.ID) (chat.Attachment, error) {
	q, err := s.query(ctx, selectAttachment, gocql.UUID(id))
	if err != nil {
		return chat.Attachment{}, err
	}
	var a chat.Attachment
	err = q.Scan((*gocql.UUID)(&a.ID), &a.Conversation, &a.Uploader, &a.Name, &a.Size, &a.ContentType, &a.SHA256,
		&a.ChunkSize, &a.Chunks, &a.Status, &a.Width, &a.Height, (*gocql.UUID)(&a.PreviewID), &a.PreviewWidth, &a.PreviewHeight)
	if errors.Is(err, gocql.ErrNotFound) || (err == nil && a.Status != StatusReady) {
		return chat.Attachment{}, fmt.Errorf("store: attachment %s: %w", id, chat.ErrNotFound)
	}
	if err != nil {
		return chat.Attachment{}, s.fail("read attachment", err)
	}
	return a, nil
}

// ChunkReads is how many attachment chunks this store has read since it
// was created: downloads and preview decodes together.
func (s *Store) ChunkReads() int64 { return s.chunkReads.Load() }

// Chunk reads chunk no of attachment id.
func (s *Store) Chunk(ctx context.Context, id chat.ID, no int) ([]byte, error) {
	s.chunkReads.Add(1)
	q, err := s.query(ctx, selectChunk, gocql.UUID(id), no)
	if err != nil {
		return nil, err
	}
	var data []byte
	if err := q.Scan(&data); err != nil {
		if errors.Is(err, gocql.ErrNotFound) {
			return nil, fmt.Errorf("store: chunk %d of %s: %w", no, id, chat.ErrNotFound)
		}
		return nil, s.fail("read chunk", err)
	}
	return data, nil
}

// OpenAttachment reads a ready attachment's bytes: an io.ReadSeeker that
// holds one chunk at a time and reads a chunk only when a read reaches it,
// so a range reads only the chunks it covers. The chunks that all open
// readers of the process hold together stay within Config.ReadBudget: a
// reader waits for room before it loads one. ctx bounds every read and
// every wait; Close lets the chunk go.
func (s *Store) OpenAttachment(ctx context.Context, a chat.Attachment) io.ReadSeekCloser {
	return &AttachmentReader{s: s, ctx: ctx, a: a, loaded: -1}
}

// AttachmentReader is an open attachment (see OpenAttachment).
type AttachmentReader struct {
	s      *Store
	ctx    context.Context
	a      chat.Attachment
	pos    int64
	loaded int
	chunk  []byte
	held   int64 // of the read budget
}

// Read reads from the current position, loading its chunk if needed.
func (r *AttachmentReader) Read(p []byte) (int, error) {
	if r.pos >= r.a.Size {
		return 0, io.EOF
	}
	no := int(r.pos / int64(r.a.ChunkSize))
	if no != r.loaded {
		r.Close() // let the old chunk go before the next arrives
		need := min(int64(r.a.ChunkSize), r.s.readBudgetSize)
		if err := r.s.readBudget.Acquire(r.ctx, need); err != nil {
			return 0, err
		}
		r.held = need
		data, err := r.s.Chunk(r.ctx, r.a.ID, no)
		if err != nil {
			r.Close()
			return 0, err
		}
		r.chunk, r.loaded = data, no
	}
	off := int(r.pos - int64(no)*int64(r.a.ChunkSize))
	if off >= len(r.chunk) {
		return 0, fmt.Errorf("store: chunk %d of %s is short: %w", no, r.a.ID, io.ErrUnexpectedEOF)
	}
	n := copy(p, r.chunk[off:])
	r.pos += int64(n)
	return n, nil
}

// Close lets the chunk the reader holds go; a later Read loads it again.
// It never fails.
func (r *AttachmentReader) Close() error {
	r.chunk, r.loaded = nil, -1
	if r.held > 0 {
		r.s.readBudget.Release(r.held)
		r.held = 0
	}
	return nil
}

// Seek moves the position; it reads nothing.
func (r *AttachmentReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.a.Size
	default:
		return r.pos, errors.New("store: seek: bad whence")
	}
	if offset < 0 {
		return r.pos, errors.New("store: seek: negative position")
	}
	r.pos = offset
	return offset, nil
}

// SweepUploads deletes uploads that started before olderThan and never
// finished: their process died mid-upload (an upload that fails in a
// living process deletes its own rows). It reads the pending_uploads
// partitions of the last 7 days up to olderThan's; an entry whose
// attachment is ready (the process died just before removing the entry)
// only loses the entry. Deletes are idempotent, so instances may sweep
// at the same time. It returns how many uploads it removed.
func (s *Store) SweepUploads(ctx context.Context, olderThan time.Time) (int, error) {
	removed := 0
	for d := range sweepDays {
		day := chat.TimeBucket(olderThan.AddDate(0, 0, -d))
		q, err := s.query(ctx, selectPendingUploads, day, gocql.UUID(chat.MinIDAt(olderThan)))
		if err != nil {
			return removed, err
		}
		type pending struct {
			id    chat.ID
			conv  string
			limit int
		}
		var found []pending
		iter := q.Iter()
		var p pending
		for iter.Scan((*gocql.UUID)(&p.id), &p.conv, &p.limit) {
			found = append(found, p)
		}
		if err := iter.Close(); err != nil {
			return removed, s.fail("list pending uploads", err)
		}
		for _, p := range found {
			status, err := s.attachmentStatus(ctx, p.id)
			if err != nil {
				return removed, err
			}
			if status != StatusReady {
				if err := s.deleteAttachment(ctx, p.conv, p.id, p.limit); err != nil {
					return removed, err
				}
				removed++
			}
			if err := s.exec(ctx, "sweep pending upload", deletePendingUpload, day, gocql.UUID(p.id)); err != nil {
				return removed, err
			}
		}
	}
	return removed, nil
}

func (s *Store) attachmentStatus(ctx context.Context, id chat.ID) (string, error) {
	q, err := s.query(ctx, selectAttachmentStatus, gocql.UUID(id))
	if err != nil {
		return "", err
	}
	var status string
	if err := q.Scan(&status); err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return "", s.fail("read attachment status", err)
	}
	return status, nil
}

// conversationAttachmentDeletes are the statements that delete every
// attachment of a conversation, its chunks and its listing: part of a
// room's clean-up.
func (s *Store) conversationAttachmentDeletes(ctx context.Context, conv string) ([]batchStmt, error) {
	q, err := s.query(ctx, selectConversationAttachments, conv)
	if err != nil {
		return nil, err
	}
	var stmts []batchStmt
	iter := q.Iter()
	var (
		id     chat.ID
		chunks int
	)
	for iter.Scan((*gocql.UUID)(&id), &chunks) {
		for no := range chunks {
			stmts = append(stmts, batchStmt{deleteChunk, []any{gocql.UUID(id), no}})
		}
		stmts = append(stmts, batchStmt{deleteAttachment, []any{gocql.UUID(id)}})
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("list attachments of "+conv, err)
	}
	return append(stmts, batchStmt{deleteConversationAttachments, []any{conv}}), nil
}

// DeleteDMFilesOf deletes every file login sent in a DM (and its
// preview), as the deletion of their account does: files in rooms stay
// with the rooms. It reads each of login's DMs' listing of files and each
// file's row for its uploader, which a deletion, once per account, can
// afford. It returns how many files it deleted.
func (s *Store) DeleteDMFilesOf(ctx context.Context, login string) (int, error) {
	dms, err := s.DMList(ctx, login)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, e := range dms {
		conv := chat.DMPrefix + e.DM.Address
		q, err := s.query(ctx, selectConversationAttachments, conv)
		if err != nil {
			return deleted, err
		}
		var (
			ids    []chat.ID
			id     chat.ID
			chunks int
		)
		iter := q.Iter()
		for iter.Scan((*gocql.UUID)(&id), &chunks) {
			ids = append(ids, id)
		}
		if err := iter.Close(); err != nil {
			return deleted, s.fail("list attachments of "+conv, err)
		}
		for _, id := range ids {
			a, err := s.Attachment(ctx, id)
			if errors.Is(err, chat.ErrNotFound) {
				continue // a preview deleted with its file, or an upload under way
			}
			if err != nil {
				return deleted, err
			}
			if chat.NameKey(a.Uploader.Login) != chat.NameKey(login) {
				continue
			}
			if err := s.DiscardAttachment(ctx, a); err != nil {
				return deleted, err
			}
			deleted++
		}
	}
	return deleted, nil
}

package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
)

// randomBytes is a reader of n pseudo-random bytes (seeded, so a failure
// can be replayed), never held in memory at once.
func randomBytes(n int64, seed uint64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}), n)
}

func sumOf(r io.Reader) []byte {
	h := sha256.New()
	_, _ = io.Copy(h, r)
	return h.Sum(nil)
}

// conversationOf is a conversation with these members, as a room or DM
// would give.
func conversationOf(members ...chat.User) chat.Conversation {
	c := chat.Conversation{ID: unique("files"), Since: time.Now().Add(-time.Hour), Members: map[string]chat.UserRef{}}
	for _, m := range members {
		c.Members[m.Login] = m.Ref()
	}
	return c
}

func TestAttachmentRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	conv := conversationOf(ada)
	for _, size := range []int64{0, 1, 999_999, store.ChunkSize, store.ChunkSize + 1, 25 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			a, err := db.StoreAttachment(ctx, conv, ada.Ref(), "data.bin", randomBytes(size, uint64(size)), 25<<20)
			if err != nil {
				t.Fatal(err)
			}
			want := sumOf(randomBytes(size, uint64(size)))
			if !bytes.Equal(a.SHA256, want) || a.Size != size {
				t.Fatalf("stored size %d sha %x, want %d %x", a.Size, a.SHA256, size, want)
			}
			if wantChunks := int((size + store.ChunkSize - 1) / store.ChunkSize); a.Chunks != wantChunks {
				t.Errorf("chunks = %d, want %d", a.Chunks, wantChunks)
			}
			got, err := db.Attachment(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != store.StatusReady || got.Name != "data.bin" || got.Conversation != conv.ID || got.ChunkSize != store.ChunkSize {
				t.Errorf("read back %+v", got)
			}
			if sum := sumOf(db.OpenAttachment(ctx, got)); !bytes.Equal(sum, want) {
				t.Errorf("read back sha %x, want %x", sum, want)
			}
		})
	}
}

func TestAttachmentRangeReadsOnlyItsChunks(t *testing.T) {
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	const size = 3*store.ChunkSize + 10
	a, err := db.StoreAttachment(ctx, conversationOf(ada), ada.Ref(), "r.bin", randomBytes(size, 7), 25<<20)
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(db.OpenAttachment(ctx, a))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		start, end int64 // [start, end)
		chunks     int
	}{
		{"first byte", 0, 1, 1},
		{"last byte of a chunk", store.ChunkSize - 1, store.ChunkSize, 1},
		{"at a boundary", store.ChunkSize, store.ChunkSize + 5, 1},
		{"across one boundary", store.ChunkSize - 5, store.ChunkSize + 5, 2},
		{"across two boundaries", store.ChunkSize - 5, 2*store.ChunkSize + 5, 3},
		{"the tail", size - 10, size, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := db.OpenAttachment(ctx, a)
			db.Recorder.Start()
			if _, err := r.Seek(tc.start, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(io.LimitReader(r, tc.end-tc.start))
			queries := db.Recorder.Stop()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, all[tc.start:tc.end]) {
				t.Error("wrong bytes")
			}
			reads := 0
			for _, q := range queries {
				if strings.Contains(q.Statement, "FROM attachment_chunks") {
					reads++
				}
			}
			if reads != tc.chunks {
				t.Errorf("read %d chunks, want %d", reads, tc.chunks)
			}
		})
	}
}

// chunkRows counts the chunk rows and the other rows an attachment has.
func attachmentRows(t *testing.T, conv string, id chat.ID, chunks int) (found []string) {
	t.Helper()
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	count := func(what, stmt string, values ...any) {
		var n int
		if err := sess.Query(stmt, values...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			found = append(found, fmt.Sprintf("%s: %d", what, n))
		}
	}
	for no := range chunks {
		count(fmt.Sprintf("chunk %d", no), `SELECT count(*) FROM attachment_chunks WHERE attachment_id = ? AND chunk_no = ?`, gocql.UUID(id), no)
	}
	count("attachments", `SELECT count(*) FROM attachments WHERE id = ?`, gocql.UUID(id))
	count("listing", `SELECT count(*) FROM attachments_by_conversation WHERE conversation = ? AND attachment_id = ?`, conv, gocql.UUID(id))
	day := id.Time().UTC().Year()*10000 + int(id.Time().UTC().Month())*100 + id.Time().UTC().Day()
	count("pending", `SELECT count(*) FROM pending_uploads WHERE day = ? AND attachment_id = ?`, day, gocql.UUID(id))
	return found
}

// listedIDs are the attachments listed for a conversation.
func listedIDs(t *testing.T, conv string) []chat.ID {
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	iter := sess.Query(`SELECT attachment_id FROM attachments_by_conversation WHERE conversation = ?`, conv).Iter()
	var ids []chat.ID
	var id chat.ID
	for iter.Scan((*gocql.UUID)(&id)) {
		ids = append(ids, id)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// stallingReader gives n bytes, then calls at (once) and returns err.
type stallingReader struct {
	r   io.Reader
	at  func()
	err error
}

func (s *stallingReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if errors.Is(err, io.EOF) {
		if s.at != nil {
			s.at()
			s.at = nil
		}
		return n, s.err
	}
	return n, err
}

func TestAttachmentCutOffLeavesNothing(t *testing.T) {
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	conv := conversationOf(ada)
	var id chat.ID
	body := &stallingReader{r: randomBytes(3_000_000, 3), err: io.ErrUnexpectedEOF, at: func() {
		ids := listedIDs(t, conv.ID)
		if len(ids) != 1 {
			t.Errorf("mid-upload: %d attachments listed, want 1 pending", len(ids))
			return
		}
		id = ids[0]
		if _, err := db.Attachment(ctx, id); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("a pending attachment is served: %v", err)
		}
	}}
	_, err := db.StoreAttachment(ctx, conv, ada.Ref(), "cut.bin", body, 25<<20)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut-off upload: %v, want the read error", err)
	}
	if left := attachmentRows(t, conv.ID, id, 4); len(left) > 0 {
		t.Errorf("a cut-off upload left %v", left)
	}
}

func TestAttachmentTooLarge(t *testing.T) {
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	conv := conversationOf(ada)
	_, err := db.StoreAttachment(ctx, conv, ada.Ref(), "big.bin", randomBytes(3*store.ChunkSize, 1), 2*store.ChunkSize+7)
	if !errors.Is(err, chat.ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if ids := listedIDs(t, conv.ID); len(ids) != 0 {
		t.Errorf("a refused upload left %v listed", ids)
	}
	// A member-only conversation: an outsider stores nothing.
	bob := newUser(t, unique("bob"))
	if _, err := db.StoreAttachment(ctx, conv, bob.Ref(), "x", strings.NewReader("x"), 10); !errors.Is(err, chat.ErrNotParticipant) {
		t.Errorf("outsider upload: %v, want ErrNotParticipant", err)
	}
}

// TestSweepRemovesDeadUploads stands for a process that died mid-upload:
// the upload stalls after 3 MB, and another instance's sweep, an hour
// later, deletes its chunks and rows while it is still stalled.
func TestSweepRemovesDeadUploads(t *testing.T) {
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	conv := conversationOf(ada)
	stalled, release := make(chan struct{}), make(chan struct{})
	body := &stallingReader{r: randomBytes(3_000_000, 5), err: io.ErrUnexpectedEOF, at: func() {
		close(stalled)
		<-release
	}}
	done := make(chan error)
	go func() {
		_, err := db.StoreAttachment(ctx, conv, ada.Ref(), "dead.bin", body, 25<<20)
		done <- err
	}()
	<-stalled
	ids := listedIDs(t, conv.ID)
	if len(ids) != 1 {
		t.Fatalf("%d attachments listed, want 1", len(ids))
	}
	// Chunks 0 and 1 are full, so they are written (or being written).
	deadline := time.Now().Add(10 * time.Second)
	for len(attachmentRows(t, conv.ID, ids[0], 2)) < 5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := attachmentRows(t, conv.ID, ids[0], 2); len(left) != 5 {
		t.Fatalf("before the sweep: %v", left)
	}
	// A sweep with the upload still young removes nothing.
	if n, err := db.SweepUploads(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("early sweep: %d, %v", n, err)
	}
	n, err := db.SweepUploads(ctx, time.Now().Add(time.Hour))
	if err != nil || n < 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if left := attachmentRows(t, conv.ID, ids[0], 26); len(left) > 0 {
		t.Errorf("after the sweep: %v", left)
	}
	close(release)
	if err := <-done; err == nil {
		t.Error("the stalled upload succeeded")
	}
}

func TestSweepKeepsReadyUploads(t *testing.T) {
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	conv := conversationOf(ada)
	a, err := db.StoreAttachment(ctx, conv, ada.Ref(), "ok.bin", randomBytes(10, 1), 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SweepUploads(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Attachment(ctx, a.ID); err != nil {
		t.Errorf("a ready attachment was swept: %v", err)
	}
}

func pngOf(w, h int, alpha uint8) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 100, alpha})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// bombPNG is a valid 1×1 PNG whose header claims w×h pixels.
func bombPNG(w, h uint32) []byte {
	b := pngOf(1, 1, 255)
	binary.BigEndian.PutUint32(b[16:], w)
	binary.BigEndian.PutUint32(b[20:], h)
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	return b
}

// tinyWebP is a 1×1 lossless WebP.
var tinyWebP, _ = base64.StdEncoding.DecodeString("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")

func TestAttachmentPreviews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	conv := conversationOf(ada)
	store1 := func(t *testing.T, name string, data []byte) (chat.Attachment, error) {
		return db.StoreAttachment(ctx, conv, ada.Ref(), name, bytes.NewReader(data), 25<<20)
	}
	t.Run("large PNG is scaled to fit 480x360", func(t *testing.T) {
		a, err := store1(t, "wide.png", pngOf(1200, 600, 255))
		if err != nil {
			t.Fatal(err)
		}
		if a.ContentType != "image/png" || a.Width != 1200 || a.Height != 600 || !a.Inline() {
			t.Fatalf("got %+v", a)
		}
		if a.PreviewID == a.ID || a.PreviewWidth != 480 || a.PreviewHeight != 240 {
			t.Fatalf("preview %v %dx%d", a.PreviewID, a.PreviewWidth, a.PreviewHeight)
		}
		p, err := db.Attachment(ctx, a.PreviewID)
		if err != nil {
			t.Fatal(err)
		}
		img, _, err := image.Decode(db.OpenAttachment(ctx, p))
		if err != nil {
			t.Fatal(err)
		}
		if p.ContentType != "image/jpeg" || img.Bounds().Dx() != 480 || img.Bounds().Dy() != 240 {
			t.Errorf("preview is %s %v", p.ContentType, img.Bounds())
		}
	})
	t.Run("transparent tall PNG keeps PNG", func(t *testing.T) {
		a, err := store1(t, "tall.png", pngOf(100, 720, 128))
		if err != nil {
			t.Fatal(err)
		}
		p, err := db.Attachment(ctx, a.PreviewID)
		if err != nil {
			t.Fatal(err)
		}
		if a.PreviewWidth != 50 || a.PreviewHeight != 360 || p.ContentType != "image/png" {
			t.Errorf("preview %dx%d %s", a.PreviewWidth, a.PreviewHeight, p.ContentType)
		}
	})
	t.Run("small image is its own preview", func(t *testing.T) {
		a, err := store1(t, "small.png", pngOf(40, 30, 255))
		if err != nil {
			t.Fatal(err)
		}
		if a.PreviewID != a.ID || a.PreviewWidth != 40 || a.PreviewHeight != 30 {
			t.Errorf("preview %v %dx%d", a.PreviewID, a.PreviewWidth, a.PreviewHeight)
		}
	})
	t.Run("WebP", func(t *testing.T) {
		a, err := store1(t, "dot.webp", tinyWebP)
		if err != nil {
			t.Fatal(err)
		}
		if a.ContentType != "image/webp" || a.Width != 1 || !a.Inline() || !a.Ref().HasPreview() {
			t.Errorf("got %+v", a)
		}
	})
	t.Run("decompression bomb is refused before anything is stored", func(t *testing.T) {
		before := len(listedIDs(t, conv.ID))
		_, err := store1(t, "bomb.png", bombPNG(50_000, 50_000))
		if !errors.Is(err, chat.ErrInvalid) {
			t.Fatalf("got %v, want a ValidationError", err)
		}
		if after := len(listedIDs(t, conv.ID)); after != before {
			t.Errorf("listed %d attachments, had %d", after, before)
		}
	})
	t.Run("SVG and HTML are not inline", func(t *testing.T) {
		for name, data := range map[string]string{
			"x.svg":  `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`,
			"x.html": `<!DOCTYPE html><html><script>alert(1)</script></html>`,
		} {
			a, err := store1(t, name, []byte(data))
			if err != nil {
				t.Fatal(err)
			}
			if a.Inline() || a.Ref().HasPreview() {
				t.Errorf("%s (%s) would be shown inline", name, a.ContentType)
			}
		}
	})
}

func TestAttachmentMessage(t *testing.T) {
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	conv := conversationOf(ada)
	a, err := db.StoreAttachment(ctx, conv, ada.Ref(), "note.txt", strings.NewReader("hello"), 100)
	if err != nil {
		t.Fatal(err)
	}
	m, err := db.DraftAttachmentMessage(conv, ada.Ref(), "  ", a.Ref())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveMessage(ctx, conv, m); err != nil {
		t.Fatal(err)
	}
	plain, err := db.PostMessage(ctx, conv, ada.Ref(), "no file")
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := db.MessagesBefore(ctx, conv, chat.ID{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Attachment == nil || *msgs[0].Attachment != a.Ref() || msgs[0].Content != "" {
		t.Fatalf("read back %+v", msgs)
	}
	if msgs[1].ID != plain.ID || msgs[1].Attachment != nil {
		t.Errorf("a plain message read back with %+v", msgs[1].Attachment)
	}
}

func TestDeleteRoomDeletesAttachments(t *testing.T) {
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	r, err := db.CreateRoom(ctx, ada.Ref(), chat.NewRoom{Name: unique("filesroom")})
	if err != nil {
		t.Fatal(err)
	}
	a, err := db.StoreAttachment(ctx, r, ada.Ref(), "two.bin", randomBytes(store.ChunkSize+1, 2), 25<<20)
	if err != nil {
		t.Fatal(err)
	}
	img, err := db.StoreAttachment(ctx, r, ada.Ref(), "wide.png", bytes.NewReader(pngOf(1000, 100, 255)), 25<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteRoom(ctx, ada.Login, r.Name); err != nil {
		t.Fatal(err)
	}
	for _, id := range []chat.ID{a.ID, img.ID, img.PreviewID} {
		if left := attachmentRows(t, r.Name, id, 2); len(left) > 0 {
			t.Errorf("attachment %s of a deleted room left %v", id, left)
		}
	}
}

func TestCleanFileName(t *testing.T) {
	for in, want := range map[string]string{
		"report.pdf":                      "report.pdf",
		"../../etc/passwd":                "passwd",
		`C:\Users\ada\cat.png`:            "cat.png",
		"  a\x00b\u202ec.txt  ":           "abc.txt",
		"":                                "file",
		"..":                              "file",
		strings.Repeat("x", 300) + ".png": strings.Repeat("x", 196) + ".png",
	} {
		if got := chat.CleanFileName(in); got != want {
			t.Errorf("CleanFileName(%q) = %q, want %q", in, got, want)
		}
	}
}

// png16 is a w×h PNG of 16-bit RGBA: decoded, 8 bytes a pixel.
func png16(w, h int) []byte {
	img := image.NewNRGBA64(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 61), uint16(y * 59), 100, 0xffff})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// TestPreviewDecodeBudget: an image is decoded for its preview only when
// its decoded bytes (pixels × bytes per pixel of its model, not its
// pixels alone) fit the process's decode budget; one that does not is
// kept, without a preview, and decoded by no one.
func TestPreviewDecodeBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A decode is charged twice its decoded bytes.
	st, err := db.AnotherWith(func(c *store.Config) { c.DecodeBudget = 9 << 20 })
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ada := newUser(t, unique("ada"))
	conv := conversationOf(ada)
	for _, tc := range []struct {
		name    string
		data    []byte
		preview bool
	}{
		{"8-bit 1000x1000 (4 MB decoded) fits", pngOf(1000, 1000, 255), true},
		{"16-bit 1000x1000 (8 MB decoded) does not", png16(1000, 1000), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := st.ChunkReads()
			a, err := st.StoreAttachment(ctx, conv, ada.Ref(), "big.png", bytes.NewReader(tc.data), 25<<20)
			if err != nil {
				t.Fatal(err)
			}
			if a.Width != 1000 || a.Height != 1000 {
				t.Fatalf("got %+v", a)
			}
			if got := a.Ref().HasPreview(); got != tc.preview {
				t.Errorf("preview %v, want %v", got, tc.preview)
			}
			if !tc.preview && st.ChunkReads() != reads {
				t.Errorf("an image over the budget was read back for decoding (%d chunk reads)", st.ChunkReads()-reads)
			}
			if _, err := st.Attachment(ctx, a.ID); err != nil {
				t.Errorf("the file was not kept: %v", err)
			}
		})
	}
}

// blockedReader gives its bytes, then blocks until release is closed.
type blockedReader struct {
	r       io.Reader
	release chan struct{}
}

func (b *blockedReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		<-b.release
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// TestStalledUploadsHoldNoBuffers: uploads that send a little and then
// stall hold none of the process's chunk buffers, so the next upload is
// not stuck behind them.
func TestStalledUploadsHoldNoBuffers(t *testing.T) {
	st, err := db.AnotherWith(func(c *store.Config) { c.ChunkBuffers = 2 })
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ada := newUser(t, unique("ada"))
	conv := conversationOf(ada)
	release := make(chan struct{})
	var stalled sync.WaitGroup
	for i := range 4 {
		stalled.Add(1)
		go func() {
			defer stalled.Done()
			body := &blockedReader{r: randomBytes(1024, uint64(i)), release: release}
			_, _ = st.StoreAttachment(context.Background(), conv, ada.Ref(), "stalled.bin", body, 25<<20)
		}()
	}
	defer func() {
		close(release)
		stalled.Wait()
	}()
	time.Sleep(200 * time.Millisecond) // the stalled uploads are under way
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := st.StoreAttachment(ctx, conv, ada.Ref(), "next.bin", randomBytes(3*store.ChunkSize, 9), 25<<20); err != nil {
		t.Errorf("an upload behind 4 stalled ones: %v", err)
	}
}

// TestReadBudget: the chunks that open readers hold stay within the
// process's read budget; a reader waits for room, and Close makes it.
func TestReadBudget(t *testing.T) {
	ctx := context.Background()
	st, err := db.AnotherWith(func(c *store.Config) { c.ReadBudget = store.ChunkSize })
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ada := newUser(t, unique("ada"))
	a, err := st.StoreAttachment(ctx, conversationOf(ada), ada.Ref(), "two.bin", randomBytes(2*store.ChunkSize, 4), 25<<20)
	if err != nil {
		t.Fatal(err)
	}
	first := st.OpenAttachment(ctx, a)
	if _, err := first.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	waiting, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := st.OpenAttachment(waiting, a).Read(make([]byte, 1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second reader over the budget: %v, want it to wait", err)
	}
	first.Close()
	second := st.OpenAttachment(ctx, a)
	defer second.Close()
	if _, err := io.Copy(io.Discard, second); err != nil {
		t.Errorf("once the first is closed: %v", err)
	}
}

// TestRestoreFileSniffsItsType (issue 39, PDFs open in the browser): a
// file restored from an archive gets the type of its bytes, as an upload
// does, not the archive's word: a text the archive calls a PDF or an
// image is text (and has no image size), a PDF is a PDF.
func TestRestoreFileSniffsItsType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	conv := conversationOf(ada)
	var ids chat.IDGenerator
	for _, tc := range []struct {
		name, body, claim string
		width             int
		want              string
	}{
		{"claimed.pdf", "plain text, not a PDF", chat.PDFType, 0, "text/plain; charset=utf-8"},
		{"claimed.png", "<html><script>alert(1)</script></html>", "image/png", 640, "text/html; charset=utf-8"},
		{"real.pdf", "%PDF-1.4\n%%EOF\n", "application/octet-stream", 0, chat.PDFType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := sha256.Sum256([]byte(tc.body))
			f := chat.StoredFile{ID: ids.Next(time.Now()), Conversation: conv.ID, Uploader: ada.Ref(), Name: tc.name,
				Size: int64(len(tc.body)), ContentType: tc.claim, SHA256: sum[:], Width: tc.width, Height: tc.width}
			if err := db.RestoreFile(ctx, f, strings.NewReader(tc.body)); err != nil {
				t.Fatal(err)
			}
			got, err := db.Attachment(ctx, f.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.ContentType != tc.want || got.Width != 0 || got.Height != 0 {
				t.Errorf("restored as %q, %d×%d; want %q and no image size", got.ContentType, got.Width, got.Height, tc.want)
			}
		})
	}
}

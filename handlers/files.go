// This file owns attachments over HTTP: the composer's multipart upload,
// read as a stream (never ParseMultipartForm) and stored chunk by chunk as
// it arrives, each file posted as its own message; the download route for
// members of the conversation, with Range, ETag and headers that keep an
// uploaded file from ever running in our origin; and the sweeper of
// uploads whose process died.
package handlers

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
)

const (
	// DefaultMaxUpload is the default of Config.MaxUpload.
	DefaultMaxUpload = 25 << 20
	// DefaultUploadTimeout is the default of Config.UploadTimeout.
	DefaultUploadTimeout = 10 * time.Minute
	// formSlack is what an upload request may carry besides its files:
	// the token, the text, the multipart headers.
	formSlack = 64 << 10
	// maxFilesPerPost bounds the files of one request (each is a message).
	maxFilesPerPost = 10
	// sweepEvery is how often an instance sweeps dead uploads.
	sweepEvery = 10 * time.Minute
	// DefaultMaxUploadsPerUser is the default of Config.MaxUploadsPerUser.
	DefaultMaxUploadsPerUser = 4
	// DefaultUploadMinRate is the default of Config.UploadMinRate.
	DefaultUploadMinRate = 16 << 10
	// uploadGrace is how long an upload may take before the minimum
	// rate applies to what it has sent.
	uploadGrace = 10 * time.Second
)

// streamedForms are the routes whose multipart bodies are read as a
// stream, with the CSRF token checked from the body (checkStreamedCSRF);
// any other route refuses a multipart body without the token header.
var streamedForms = map[string]bool{
	"/rooms/:room/messages": true,
	"/dm/:logins/messages":  true,
}

// skipBodyLimit exempts streamed uploads from the global 64 KB body limit:
// they have their own, --max-upload.
func skipBodyLimit(c echo.Context) bool {
	return streamedForms[c.Path()] && web.IsMultipart(c.Request())
}

// errTooLarge is the 413 a person reads.
func (s *Server) errTooLarge() error {
	return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
		fmt.Sprintf("The file is larger than the %s limit. Nothing was stored.", humanSize(s.cfg.MaxUpload)))
}

// postFiles handles a multipart post of the composer: the _csrf field,
// then the text, then the files, read in that order from the stream. Each
// file is stored as it arrives and posted as its own message (the text
// goes with the first); text without a file is posted as usual.
// composer renders the composer with a form's errors (422); back is where
// a plain form goes next.
func (s *Server) postFiles(c echo.Context, in store.Place, composer func(views.Form) error, back string) error {
	req := c.Request()
	me := mustUser(c)
	maxBody := s.cfg.MaxUpload + formSlack
	if req.ContentLength > maxBody {
		s.metrics.CountUpload("too_large", 0)
		return s.errTooLarge()
	}
	// The hourly byte budget: all at once when the length is known,
	// chunk by chunk as they arrive otherwise (a chunked request).
	if req.ContentLength > 0 {
		if ok, wait := s.limits.uploadBytes.AllowN(me.Login, int(req.ContentLength)); !ok {
			s.metrics.CountUpload("rate_limited", 0)
			return web.TooMany(c, wait, "uploading")
		}
	}
	if !s.uploads.take(me.Login) {
		s.metrics.CountUpload("rate_limited", 0)
		return web.TooMany(c, 5*time.Second, "uploading several files at once")
	}
	defer s.uploads.give(me.Login)
	// The server's read timeout is sized for forms; an upload gets a
	// deadline of its own instead, generous but not unbounded, and must
	// keep up a minimum rate (a stalled upload holds a connection, and
	// perhaps a chunk buffer, for nothing).
	rc := http.NewResponseController(c.Response())
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.UploadTimeout + time.Minute))
	paced := &pacedBody{ReadCloser: req.Body, rc: rc, grace: s.uploadGrace,
		rate: float64(s.cfg.UploadMinRate), end: time.Now().Add(s.cfg.UploadTimeout)}
	body := &recordingBody{ReadCloser: http.MaxBytesReader(c.Response(), paced, maxBody)}
	req.Body = body
	mr, err := req.MultipartReader()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The upload could not be read.")
	}
	var (
		conv     = in.Conversation().ID
		content  string
		clientID string
		sawCSRF  bool
		posted   []store.Message
		files    int
		budgeted = req.ContentLength > 0
	)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if body.err == nil {
				// The bytes arrived; they are not a multipart form.
				err = fmt.Errorf("%w: %w", errMalformed, err)
			}
			return s.uploadError(err)
		}
		name := part.FormName()
		if !sawCSRF && web.NeedsStreamed(c) {
			// The token must come first, so nothing is stored for a
			// forged form.
			if name != web.CSRFField {
				return web.ErrCSRF
			}
			token, err := readField(part, 256)
			if err != nil {
				return s.uploadError(err)
			}
			if err := s.csrf.CheckStreamed(c, token); err != nil {
				return err
			}
			sawCSRF = true
			continue
		}
		switch {
		case name == "client_id":
			if clientID, err = readField(part, 64); err != nil {
				return s.uploadError(err)
			}
			if !validClientID(clientID) {
				return echo.NewHTTPError(http.StatusBadRequest, "This message form is broken. Reload the page and send again.")
			}
		case name == "content":
			if content, err = readField(part, 4*store.MaxContent+1024); err != nil {
				return s.uploadError(err)
			}
			if strings.TrimSpace(content) != "" {
				if _, err := store.CheckContent(content); err != nil {
					return composer(withErrors(views.Form{Values: map[string]string{"content": content, "client_id": clientID}, Errors: map[string]string{}}, err))
				}
			}
		case name == "file" && part.FileName() != "":
			files++
			if files > maxFilesPerPost {
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
					fmt.Sprintf("Send at most %d files at once.", maxFilesPerPost))
			}
			// Each file is a message: the request paid for the first,
			// every other one takes a token of its own before it is stored.
			if files > 1 {
				if ok, wait := s.limits.messages.Allow(me.Login); !ok {
					s.metrics.CountUpload("rate_limited", 0)
					return web.TooMany(c, wait, "sending messages")
				}
			}
			var file io.Reader = part
			if !budgeted {
				file = &budgetReader{r: part, take: func(n int) bool {
					ok, _ := s.limits.uploadBytes.AllowN(me.Login, n)
					return ok
				}}
			}
			text := content
			content = "" // the text goes with the first file only
			stored := false
			m, err := s.recent.post(req.Context(), postKey{author: me.Login, room: conv, clientID: fileKey(clientID, files)},
				func(ctx context.Context) (store.Message, error) {
					stored = true
					return s.postFile(ctx, in, me, part.FileName(), file, text)
				})
			if err != nil {
				return err
			}
			if !stored {
				// A repeat of a send already done: its message is the
				// first one's, and its bytes are read past.
				if _, err := io.Copy(io.Discard, part); err != nil {
					return s.uploadError(err)
				}
			}
			posted = append(posted, m)
		default:
			// An empty file input, or a field we do not know: read past it.
			if _, err := io.Copy(io.Discard, part); err != nil {
				return s.uploadError(err)
			}
		}
	}
	if web.NeedsStreamed(c) && !sawCSRF {
		return web.ErrCSRF // an empty body: still no token
	}
	if len(posted) == 0 {
		m, err := s.recent.post(req.Context(), postKey{author: me.Login, room: conv, clientID: clientID}, func(ctx context.Context) (store.Message, error) {
			return s.post(ctx, in, func() (store.Message, error) { return s.db.DraftMessage(in, me, content) })
		})
		if errors.Is(err, store.ErrInvalid) {
			return composer(withErrors(views.Form{Values: map[string]string{"content": content, "client_id": clientID}, Errors: map[string]string{}}, err))
		}
		if err != nil {
			return err
		}
		posted = append(posted, m)
	}
	if isHTMX(c) {
		return s.renderRaw(c, http.StatusOK, views.PostedFiles(posted, newClientID()))
	}
	return c.Redirect(http.StatusSeeOther, back)
}

// postTimeout bounds posting a stored file's message, which no longer
// depends on the client: its bytes are all in.
const postTimeout = 30 * time.Second

// postFile stores one file of an upload and posts its message (with text,
// if any). Once the file is stored it is posted under a context of its
// own: a client that hangs up after its last byte still gets its message.
// A file whose message cannot be posted (the room was deleted meanwhile,
// Cassandra failed) is deleted, so no file is ever left without one.
func (s *Server) postFile(ctx context.Context, in store.Place, me store.UserRef, name string, body io.Reader, text string) (store.Message, error) {
	a, err := s.db.StoreAttachment(ctx, in, me, name, body, s.cfg.MaxUpload)
	if err != nil {
		return store.Message{}, s.uploadError(err)
	}
	s.metrics.CountUpload("stored", a.Size)
	if s.fileStored != nil {
		s.fileStored(ctx)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), postTimeout)
	defer cancel()
	m, err := s.post(ctx, in, func() (store.Message, error) {
		return s.db.DraftAttachmentMessage(in, me, text, a.Ref())
	})
	if err != nil {
		if derr := s.db.DiscardAttachment(ctx, a); derr != nil {
			s.log.Warn("discard the file of a message not posted", "attachment", a.ID, "err", derr)
		}
		return store.Message{}, err
	}
	return m, nil
}

// fileKey is the recent-posts key of the n-th file of a post whose
// composer sent clientID: one post of several files is several messages.
func fileKey(clientID string, n int) string {
	if clientID == "" {
		return "" // no client_id: no protection against a repeat
	}
	return clientID + "/" + strconv.Itoa(n)
}

// uploadError maps what can end an upload to what a person reads.
func (s *Server) uploadError(err error) error {
	var tooBig *http.MaxBytesError
	var invalid store.ValidationError
	switch {
	case errors.As(err, &tooBig), errors.Is(err, store.ErrTooLarge):
		s.metrics.CountUpload("too_large", 0)
		return s.errTooLarge()
	case errors.Is(err, errOverBudget):
		s.metrics.CountUpload("rate_limited", 0)
		return echo.NewHTTPError(http.StatusTooManyRequests,
			"You are uploading too fast. Please wait a while and try again. Nothing was stored.")
	case errors.As(err, &invalid):
		s.metrics.CountUpload("refused", 0)
		return echo.NewHTTPError(http.StatusUnprocessableEntity, invalid["file"])
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.metrics.CountUpload("too_slow", 0)
		return echo.NewHTTPError(http.StatusRequestTimeout,
			fmt.Sprintf("The upload was too slow (under %s a second, or longer than %s) and was stopped. Nothing of the file was kept.",
				humanSize(s.cfg.UploadMinRate), s.cfg.UploadTimeout))
	case errors.Is(err, errMalformed):
		s.metrics.CountUpload("refused", 0)
		s.log.Info("malformed upload", "err", err)
		return echo.NewHTTPError(http.StatusBadRequest,
			"The upload could not be read: its form is malformed. Files before the fault were sent; nothing after it was stored.")
	case errors.Is(err, store.ErrNotParticipant), errors.Is(err, store.ErrUnavailable):
		return err
	}
	s.metrics.CountUpload("failed", 0)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("upload cut off: %w", context.Canceled)
	}
	return fmt.Errorf("upload: %w", err)
}

var (
	errOverBudget = errors.New("over the hourly upload budget")
	errMalformed  = errors.New("malformed multipart body")
)

// pacedBody is an upload's body that must arrive at rate bytes a second
// on average after a grace period, and whole before end. Only the time
// spent waiting for the client counts (not the server's own work between
// reads): before each read the connection's read deadline moves to when
// the client's waiting time would pass grace plus the bytes so far at
// rate. A read past it fails with os.ErrDeadlineExceeded. At the body's
// end the deadline goes back to end, for the server's background read
// while the handler works.
type pacedBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	grace  time.Duration
	rate   float64
	end    time.Time
	read   int64
	waited time.Duration
}

func (b *pacedBody) Read(p []byte) (int, error) {
	now := time.Now()
	due := now.Add(b.grace + time.Duration(float64(b.read)/b.rate*float64(time.Second)) - b.waited)
	if due.After(b.end) {
		due = b.end
	}
	_ = b.rc.SetReadDeadline(due)
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	b.waited += time.Since(now)
	if errors.Is(err, io.EOF) {
		_ = b.rc.SetReadDeadline(b.end)
	}
	return n, err
}

// uploadCounts caps the uploads one person has under way on this
// instance at once.
type uploadCounts struct {
	mu     sync.Mutex
	max    int
	byUser map[string]int
}

func newUploadCounts(max int) *uploadCounts {
	return &uploadCounts{max: max, byUser: map[string]int{}}
}

// take counts one more upload of login, or answers false at the cap.
func (u *uploadCounts) take(login string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byUser[login] >= u.max {
		return false
	}
	u.byUser[login]++
	return true
}

func (u *uploadCounts) give(login string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byUser[login]--; u.byUser[login] <= 0 {
		delete(u.byUser, login)
	}
}

// recordingBody keeps the error of reading the request body itself (the
// client went away, the body is too long), to tell it from a body that
// arrived whole but does not parse.
type recordingBody struct {
	io.ReadCloser
	err error
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}

// budgetReader takes a token per byte read from the uploader's hourly
// budget, for a request whose length was not known in advance.
type budgetReader struct {
	r    io.Reader
	take func(n int) bool
}

func (b *budgetReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 && !b.take(n) {
		return 0, errOverBudget
	}
	return n, err
}

// readField reads a small form field, refusing one longer than max.
func readField(part *multipart.Part, max int64) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, max+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > max {
		return "", echo.NewHTTPError(http.StatusRequestEntityTooLarge, "A form field is too long.")
	}
	return string(b), nil
}

// downloadFile serves an attachment to the members of its conversation
// (404 for anyone else, as if it did not exist). http.ServeContent does
// Range (206, 416), If-None-Match (304, with the sha256 as ETag) and HEAD;
// the reader loads only the chunks a range covers, one at a time.
func (s *Server) downloadFile(c echo.Context) error {
	id, err := gocql.ParseUUID(c.Param("id"))
	if err != nil {
		return store.ErrNotFound
	}
	ctx := c.Request().Context()
	a, err := s.db.Attachment(ctx, id)
	if err != nil {
		return err
	}
	if ok, err := s.canRead(ctx, mustUser(c).Login, a); err != nil || !ok {
		return cmpErr(err, store.ErrNotFound)
	}
	h := c.Response().Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("ETag", `"`+hex.EncodeToString(a.SHA256)+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	// The id never names other bytes, so the browser may keep it; private,
	// since only members may read it.
	h.Set("Cache-Control", "private, max-age=86400")
	disposition := "attachment"
	if a.Inline() {
		disposition = "inline"
	}
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": a.Name}))
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Now().Add(s.cfg.UploadTimeout))
	if rng := c.Request().Header.Get("Range"); rng != "" {
		if merged, ok := mergeRanges(rng, a.Size); !ok {
			c.Request().Header.Del("Range") // too many: the whole file, as a plain GET
		} else {
			c.Request().Header.Set("Range", merged)
		}
	}
	r := s.db.OpenAttachment(ctx, a)
	defer r.Close()
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, r)
	return nil
}

const (
	// maxRanges is the most byte ranges one download serves; a request for
	// more gets the whole file (RFC 9110 lets a server ignore Range).
	maxRanges = 8
	// rangeGap is the gap under which two ranges are served as one: less
	// than a multipart part's own headers.
	rangeGap = 80
)

// mergeRanges rewrites a Range header for a file of size bytes so that
// http.ServeContent reads each chunk at most once: its ranges sorted,
// overlapping and nearly adjacent ones merged (RFC 9110 §14.2 allows
// both, whatever order the client gave). It answers ok=false for more
// than maxRanges ranges left after merging, and the header unchanged when
// it does not parse or nothing in it is satisfiable, for ServeContent to
// answer (416 or the whole file).
func mergeRanges(header string, size int64) (string, bool) {
	specs, found := strings.CutPrefix(header, "bytes=")
	if !found {
		return header, true
	}
	type span struct{ start, end int64 } // end exclusive
	var spans []span
	for _, spec := range strings.Split(specs, ",") {
		spec = textproto.TrimString(spec)
		if spec == "" {
			continue
		}
		first, last, ok := strings.Cut(spec, "-")
		if !ok {
			return header, true
		}
		first, last = textproto.TrimString(first), textproto.TrimString(last)
		var sp span
		if first == "" { // a suffix: the last N bytes
			n, err := strconv.ParseInt(last, 10, 64)
			if err != nil || n < 0 {
				return header, true
			}
			sp = span{max(size-n, 0), size}
		} else {
			start, err := strconv.ParseInt(first, 10, 64)
			if err != nil || start < 0 {
				return header, true
			}
			end := size
			if last != "" {
				e, err := strconv.ParseInt(last, 10, 64)
				if err != nil || e < start {
					return header, true
				}
				end = min(e+1, size)
			}
			sp = span{start, end}
		}
		if sp.start < sp.end { // unsatisfiable ranges are dropped, as ServeContent does
			spans = append(spans, sp)
		}
	}
	if len(spans) == 0 {
		return header, true
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.start <= last.end+rangeGap {
			last.end = max(last.end, sp.end)
			continue
		}
		merged = append(merged, sp)
	}
	if len(merged) > maxRanges {
		return "", false
	}
	parts := make([]string, len(merged))
	for i, sp := range merged {
		parts[i] = fmt.Sprintf("%d-%d", sp.start, sp.end-1)
	}
	return "bytes=" + strings.Join(parts, ","), true
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// canRead reports whether login is a member of the attachment's
// conversation now: a DM's members are in its id; a room's are read, and
// a file of an earlier room of the same name (deleted) is no one's.
func (s *Server) canRead(ctx context.Context, login string, a store.Attachment) (bool, error) {
	if store.IsDM(a.Conversation) {
		for _, m := range strings.Split(strings.TrimPrefix(a.Conversation, "dm:"), "+") {
			if m == login {
				return true, nil
			}
		}
		return false, nil
	}
	r, err := s.roomFor(ctx, a.Conversation, login)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return r.HasParticipant(login) && !a.ID.Time().Before(r.CreatedAt), nil
}

// sweepUploads removes, every sweepEvery, the uploads of dead processes:
// pending for longer than two upload deadlines, which no living upload
// is. Every instance sweeps; the deletes are idempotent.
func (s *Server) sweepUploads() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		n, err := s.db.SweepUploads(ctx, time.Now().Add(-2*s.cfg.UploadTimeout))
		cancel()
		if err != nil {
			s.log.Warn("sweep dead uploads", "err", err)
		} else if n > 0 {
			s.log.Info("swept dead uploads", "count", n)
		}
	}
}

// humanSize is a byte count for people: "25 MiB", "999 KB".
func humanSize(n int64) string { return views.HumanSize(n) }

package files

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
	"github.com/killrchat/killrchat/web/csrf"
	"github.com/killrchat/killrchat/web/limit"
	"github.com/killrchat/killrchat/web/metrics"
	"github.com/labstack/echo/v4"
)

const (
	// maxFilesPerPost bounds the files of one request (each is a message).
	maxFilesPerPost = 10
	// sweepEvery is how often an instance sweeps dead uploads.
	sweepEvery = 10 * time.Minute
)

// Files are the attachments' bytes as stored (store.Store).
type Files interface {
	OpenAttachment(ctx context.Context, a chat.Attachment) io.ReadSeekCloser
}

// App is the use cases of files (service.Service): one posted per file
// of a send (or the text of a send with none), a file read by a member,
// the sweep of dead uploads.
type App interface {
	PostFile(ctx context.Context, f service.FilePost) (chat.Message, bool, error)
	PostWithoutFile(ctx context.Context, in chat.Place, author chat.UserRef, content, clientID string) (chat.Message, error)
	File(ctx context.Context, login string, id chat.ID) (chat.Attachment, error)
	SweepUploads(ctx context.Context, olderThan time.Time)
}

// Core is what the module uses of the HTTP core (handlers.Server): the
// room a file's reader asks about, the hand-over of the multipart posts,
// rendering, and the checks every upload passes (OpenUpload) with the
// answers to its faults (UploadError), which the bots' API shares.
type Core interface {
	RoomFor(ctx context.Context, name, login string) (chat.RoomFor, error)
	HandleUploads(h handlers.UploadHandler)
	RenderRaw(c echo.Context, status int, comp templ.Component) error
	OpenUpload(c echo.Context, login string) (*handlers.Upload, error)
	UploadError(err error) error
}

// Deps are what the module is built from.
type Deps struct {
	Core  Core
	Files Files
	App   App
	// Config bounds uploads (MaxUpload, UploadTimeout, UploadMinRate).
	Config handlers.Config
	// CSRF checks a form read as a stream. Messages is the posting rate
	// per person (Core.OpenUpload has the byte budget and the uploads
	// under way).
	CSRF     *csrf.Guard
	Messages *limit.Keyed
	Metrics  *metrics.Registry
	Log      *slog.Logger
	// Closing is closed when the server shuts down: the sweeper stops.
	Closing <-chan struct{}
}

// routes are the attachments' routes.
type routes struct{ Deps }

// Register lists the download route, takes the conversations' multipart
// posts, and starts the sweeper of dead uploads.
func Register(r handlers.Routes, d Deps) {
	s := routes{d}
	r.Auth.GET("/files/:id/:name", s.downloadFile)
	d.Core.HandleUploads(s.postFiles)
	go s.sweepUploads()
}

// postFiles handles a multipart post of the composer: the _csrf field,
// then the text, then the files, read in that order from the stream. Each
// file is stored as it arrives and posted as its own message (the text
// goes with the first); text without a file is posted as usual.
// composer renders the composer with a form's errors (422); back is where
// a plain form goes next.
func (s routes) postFiles(c echo.Context, in chat.Place, composer func(views.Form) error, back string) error {
	req := c.Request()
	me := handlers.MustUser(c)
	up, err := s.Core.OpenUpload(c, me.Login)
	if err != nil {
		return err
	}
	defer up.Close()
	body := up.Body
	mr, err := req.MultipartReader()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The upload could not be read.")
	}
	var (
		content  string
		clientID string
		sawCSRF  bool
		posted   []chat.Message
		files    int
	)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if body.Err == nil {
				// The bytes arrived; they are not a multipart form.
				err = fmt.Errorf("%w: %w", handlers.ErrMalformedUpload, err)
			}
			return s.uploadError(err)
		}
		name := part.FormName()
		if !sawCSRF && csrf.NeedsStreamed(c) {
			// The token must come first, so nothing is stored for a
			// forged form.
			if name != csrf.Field {
				return csrf.ErrToken
			}
			token, err := web.ReadField(part, 256)
			if err != nil {
				return s.uploadError(err)
			}
			if err := s.CSRF.CheckStreamed(c, token); err != nil {
				return err
			}
			sawCSRF = true
			continue
		}
		switch {
		case name == "client_id":
			if clientID, err = web.ReadField(part, 64); err != nil {
				return s.uploadError(err)
			}
			if !handlers.ValidClientID(clientID) {
				return echo.NewHTTPError(http.StatusBadRequest, "This message form is broken. Reload the page and send again.")
			}
		case name == "content":
			if content, err = web.ReadField(part, 4*chat.MaxContent+1024); err != nil {
				return s.uploadError(err)
			}
			if strings.TrimSpace(content) != "" {
				if _, err := chat.CheckContent(content); err != nil {
					return composer(handlers.WithErrors(views.Form{Values: map[string]string{"content": content, "client_id": clientID}, Errors: map[string]string{}}, err))
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
				if ok, wait := s.Messages.Allow(me.Login); !ok {
					s.Metrics.CountUpload("rate_limited", 0)
					return limit.TooMany(c, wait, "sending messages")
				}
			}
			file := up.File(part)
			text := content
			content = "" // the text goes with the first file only
			m, stored, err := s.App.PostFile(req.Context(), service.FilePost{In: in, Uploader: me, Name: part.FileName(),
				Body: file, Limit: s.Config.MaxUpload, Text: text, ClientID: fileKey(clientID, files)})
			var notStored *service.StoreError
			if errors.As(err, &notStored) {
				return s.uploadError(notStored.Err)
			}
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
	if csrf.NeedsStreamed(c) && !sawCSRF {
		return csrf.ErrToken // an empty body: still no token
	}
	if len(posted) == 0 {
		m, err := s.App.PostWithoutFile(req.Context(), in, me, content, clientID)
		if errors.Is(err, chat.ErrInvalid) {
			return composer(handlers.WithErrors(views.Form{Values: map[string]string{"content": content, "client_id": clientID}, Errors: map[string]string{}}, err))
		}
		if err != nil {
			return err
		}
		posted = append(posted, m)
	}
	if handlers.IsHTMX(c) {
		return s.Core.RenderRaw(c, http.StatusOK, views.PostedFiles(posted, handlers.NewClientID()))
	}
	return c.Redirect(http.StatusSeeOther, back)
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
func (s routes) uploadError(err error) error { return s.Core.UploadError(err) }

// fileCSP is the policy of every file but a PDF: were a browser to show
// one as a page in our origin after all, it could load nothing and run
// nothing, in an origin of its own (sandbox).
const fileCSP = "default-src 'none'; sandbox"

// pdfCSP is a PDF's policy (issue 39: PDFs opened nowhere but in a
// download). A PDF is served inline, from our own origin, so that the
// browser opens it in its viewer; but a viewer that is a plugin (as
// Chromium's was, crbug.com/271452) or a frame of the page never loads
// in a sandboxed document, so the policy has no sandbox. What stops the
// file from acting as a page of ours is that only bytes that open with
// "%PDF-" are ever typed application/pdf (chat.SniffContentType, where
// an upload's type is decided), and nosniff, which keeps the browser to
// that type: the document it shows holds the browser's own viewer, never
// markup from the file. default-src 'none' still lets that document
// load, run and fetch nothing; object-src 'self' lets a plugin viewer
// show this same file and nothing else; frame-ancestors 'none' (with
// the X-Frame-Options: DENY every answer has) keeps another site from
// framing a member's file, as nothing of ours frames one.
const pdfCSP = "default-src 'none'; object-src 'self'; frame-ancestors 'none'"

// downloadFile serves an attachment to the members of its conversation
// (404 for anyone else, as if it did not exist). http.ServeContent does
// Range (206, 416), If-None-Match (304, with the sha256 as ETag) and HEAD;
// the reader loads only the chunks a range covers, one at a time.
func (s routes) downloadFile(c echo.Context) error {
	id, err := chat.ParseID(c.Param("id"))
	if err != nil {
		return chat.ErrNotFound
	}
	ctx := c.Request().Context()
	a, err := s.App.File(ctx, handlers.MustUser(c).Login, id)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("ETag", `"`+hex.EncodeToString(a.SHA256)+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	// The id never names other bytes, so the browser may keep it; private,
	// since only members may read it.
	h.Set("Cache-Control", "private, max-age=86400")
	disposition, policy := "attachment", fileCSP
	switch {
	case a.Inline():
		disposition = "inline"
	case a.PDF():
		disposition, policy = "inline", pdfCSP
	}
	h.Set("Content-Security-Policy", policy)
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": a.Name}))
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Now().Add(s.Config.UploadTimeout))
	if rng := c.Request().Header.Get("Range"); rng != "" {
		if merged, ok := web.MergeRanges(rng, a.Size); !ok {
			c.Request().Header.Del("Range") // too many: the whole file, as a plain GET
		} else {
			c.Request().Header.Set("Range", merged)
		}
	}
	r := s.Files.OpenAttachment(ctx, a)
	defer r.Close()
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, r)
	return nil
}

// sweepUploads removes, every sweepEvery, the uploads of dead processes:
// pending for longer than two upload deadlines, which no living upload
// is. Every instance sweeps; the deletes are idempotent.
func (s routes) sweepUploads() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.Closing:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s.App.SweepUploads(ctx, time.Now().Add(-2*s.Config.UploadTimeout))
		cancel()
	}
}

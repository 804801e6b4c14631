// This file owns what the core knows of uploads (handlers/files has the
// composer's routes, handlers/botapi the bots'): their settings, the
// routes whose multipart bodies are read as a stream, exempt from the
// form body limit, and the checks every upload passes, whoever sends it.

package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
	"github.com/killrchat/killrchat/web/limit"
)

const (
	// DefaultMaxUpload is the default of Config.MaxUpload.
	DefaultMaxUpload = 25 << 20
	// DefaultUploadTimeout is the default of Config.UploadTimeout.
	DefaultUploadTimeout = 10 * time.Minute
	// DefaultMaxUploadsPerUser is the default of Config.MaxUploadsPerUser.
	DefaultMaxUploadsPerUser = 4
	// DefaultUploadMinRate is the default of Config.UploadMinRate.
	DefaultUploadMinRate = 16 << 10
	// uploadGrace is how long an upload may take before the minimum
	// rate applies to what it has sent.
	uploadGrace = 10 * time.Second
	// uploadFormSlack is what an upload request may carry besides its
	// files: the token, the text, the multipart headers.
	uploadFormSlack = 64 << 10
)

// streamedForms are the routes whose multipart bodies are read as a
// stream, with the CSRF token checked from the body (checkStreamedCSRF);
// any other route refuses a multipart body without the token header.
var streamedForms = map[string]bool{
	"/rooms/:room/messages": true,
	"/dm/:logins/messages":  true,
	"/profile/avatar":       true,
}

// BotUploadRoute is the bots' upload (handlers/botapi): a stream too,
// with no CSRF token (a bot sends its API token, never a cookie).
const BotUploadRoute = "/api/v1/conversations/:conv/files"

// skipBodyLimit exempts streamed uploads from the global 64 KB body limit:
// they have their own, --max-upload.
func skipBodyLimit(c echo.Context) bool {
	return (streamedForms[c.Path()] || c.Path() == BotUploadRoute) && web.IsMultipart(c.Request())
}

// Upload is an upload request let in by OpenUpload. Its body is bounded
// by Config.MaxUpload (and what a form carries besides), must keep up
// Config.UploadMinRate and end within Config.UploadTimeout, and its bytes
// come out of the uploader's hourly budget.
type Upload struct {
	// Body is the request's body as the upload reads it; Body.Err is set
	// when the connection, not the bytes, failed.
	Body     *web.RecordingBody
	s        *Server
	login    string
	budgeted bool
}

// OpenUpload lets in c's upload by login, a person or a bot alike, or
// returns why not: 413 past Config.MaxUpload, 429 past login's byte
// budget or its uploads under way. Close gives its place back.
func (s *Server) OpenUpload(c echo.Context, login string) (*Upload, error) {
	req := c.Request()
	maxBody := s.cfg.MaxUpload + uploadFormSlack
	if req.ContentLength > maxBody {
		s.metrics.CountUpload("too_large", 0)
		return nil, s.errUploadTooLarge()
	}
	// The hourly byte budget: all at once when the length is known,
	// chunk by chunk as they arrive otherwise (a chunked request).
	if req.ContentLength > 0 {
		if ok, wait := s.limits.uploadBytes.AllowN(login, int(req.ContentLength)); !ok {
			s.metrics.CountUpload("rate_limited", 0)
			return nil, limit.TooMany(c, wait, "uploading")
		}
	}
	if !s.uploads.Take(login) {
		s.metrics.CountUpload("rate_limited", 0)
		return nil, limit.TooMany(c, 5*time.Second, "uploading several files at once")
	}
	// The server's read timeout is sized for forms; an upload gets a
	// deadline of its own instead, generous but not unbounded, and must
	// keep up a minimum rate (a stalled upload holds a connection, and
	// perhaps a chunk buffer, for nothing).
	rc := http.NewResponseController(c.Response())
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.UploadTimeout + time.Minute))
	paced := &web.PacedBody{ReadCloser: req.Body, RC: rc, Grace: s.uploadGrace,
		Rate: float64(s.cfg.UploadMinRate), End: time.Now().Add(s.cfg.UploadTimeout)}
	u := &Upload{Body: &web.RecordingBody{ReadCloser: http.MaxBytesReader(c.Response(), paced, maxBody)},
		s: s, login: login, budgeted: req.ContentLength > 0}
	req.Body = u.Body
	return u, nil
}

// File is a file of the upload as its store reads it: from the byte
// budget as it arrives, when the request's length was not known before.
func (u *Upload) File(r io.Reader) io.Reader {
	if u.budgeted {
		return r
	}
	return &web.BudgetReader{R: r, Take: func(n int) bool {
		ok, _ := u.s.limits.uploadBytes.AllowN(u.login, n)
		return ok
	}}
}

// Close ends the upload's place among its uploader's uploads under way.
func (u *Upload) Close() { u.s.uploads.Give(u.login) }

// ErrMalformedUpload marks an upload whose bytes arrived but are not a
// multipart form.
var ErrMalformedUpload = errors.New("malformed multipart body")

// errUploadTooLarge is the 413 a person reads.
func (s *Server) errUploadTooLarge() error {
	return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
		fmt.Sprintf("The file is larger than the %s limit. Nothing was stored.", views.HumanSize(s.cfg.MaxUpload)))
}

// UploadError maps what can end an upload (a *service.StoreError's
// cause, or the multipart stream's fault) to what its sender reads.
func (s *Server) UploadError(err error) error {
	var tooBig *http.MaxBytesError
	var invalid chat.ValidationError
	switch {
	case errors.As(err, &tooBig), errors.Is(err, chat.ErrTooLarge):
		s.metrics.CountUpload("too_large", 0)
		return s.errUploadTooLarge()
	case errors.Is(err, web.ErrOverBudget):
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
				views.HumanSize(s.cfg.UploadMinRate), s.cfg.UploadTimeout))
	case errors.Is(err, ErrMalformedUpload):
		s.metrics.CountUpload("refused", 0)
		s.log.Info("malformed upload", "err", err)
		return echo.NewHTTPError(http.StatusBadRequest,
			"The upload could not be read: its form is malformed. Files before the fault were sent; nothing after it was stored.")
	case errors.Is(err, chat.ErrNotParticipant), errors.Is(err, chat.ErrUnavailable):
		return err
	}
	s.metrics.CountUpload("failed", 0)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("upload cut off: %w", context.Canceled)
	}
	return fmt.Errorf("upload: %w", err)
}

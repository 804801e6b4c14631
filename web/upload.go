// This file holds the request-body plumbing of streamed uploads: a body
// that must keep up a minimum rate, one that records its own read errors,
// a reader that spends a byte budget, small multipart fields, and how to
// tell a multipart body.

package web

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// ErrOverBudget is a BudgetReader's error once its budget is spent.
var ErrOverBudget = errors.New("over the hourly upload budget")

// PacedBody is an upload's body that must arrive at rate bytes a second
// on average after a grace period, and whole before end. Only the time
// spent waiting for the client counts (not the server's own work between
// reads): before each read the connection's read deadline moves to when
// the client's waiting time would pass grace plus the bytes so far at
// rate. A read past it fails with os.ErrDeadlineExceeded. At the body's
// end the deadline goes back to end, for the server's background read
// while the handler works.
type PacedBody struct {
	io.ReadCloser
	RC    *http.ResponseController
	Grace time.Duration
	Rate  float64 // bytes a second
	End   time.Time

	read   int64
	waited time.Duration
}

func (b *PacedBody) Read(p []byte) (int, error) {
	now := time.Now()
	due := now.Add(b.Grace + time.Duration(float64(b.read)/b.Rate*float64(time.Second)) - b.waited)
	if due.After(b.End) {
		due = b.End
	}
	_ = b.RC.SetReadDeadline(due)
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	b.waited += time.Since(now)
	if errors.Is(err, io.EOF) {
		_ = b.RC.SetReadDeadline(b.End)
	}
	return n, err
}

// RecordingBody keeps the error of reading the request body itself (the
// client went away, the body is too long), to tell it from a body that
// arrived whole but does not parse.
type RecordingBody struct {
	io.ReadCloser
	Err error
}

func (b *RecordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.Err = err
	}
	return n, err
}

// BudgetReader takes a token per byte read from the uploader's hourly
// budget, for a request whose length was not known in advance.
type BudgetReader struct {
	R    io.Reader
	Take func(n int) bool
}

func (b *BudgetReader) Read(p []byte) (int, error) {
	n, err := b.R.Read(p)
	if n > 0 && !b.Take(n) {
		return 0, ErrOverBudget
	}
	return n, err
}

// ReadField reads a small form field, refusing one longer than max.
func ReadField(part *multipart.Part, max int64) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, max+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > max {
		return "", echo.NewHTTPError(http.StatusRequestEntityTooLarge, "A form field is too long.")
	}
	return string(b), nil
}

// IsMultipart reports whether a request's body is multipart/form-data.
func IsMultipart(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "multipart/form-data"
}

// This file owns what the core knows of uploads (handlers/files has the
// routes): their settings, and the routes whose multipart bodies are read
// as a stream, exempt from the form body limit.

package handlers

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/web"
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
)

// streamedForms are the routes whose multipart bodies are read as a
// stream, with the CSRF token checked from the body (checkStreamedCSRF);
// any other route refuses a multipart body without the token header.
var streamedForms = map[string]bool{
	"/rooms/:room/messages": true,
	"/dm/:logins/messages":  true,
	"/profile/avatar":       true,
}

// skipBodyLimit exempts streamed uploads from the global 64 KB body limit:
// they have their own, --max-upload.
func skipBodyLimit(c echo.Context) bool {
	return streamedForms[c.Path()] && web.IsMultipart(c.Request())
}

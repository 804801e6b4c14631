// Package static holds the browser files (vendored htmx, CSS, app.js, live.js),
// embedded in the binary.
package static

import "embed"

// Files are served under /static/.
//
//go:embed app.css app.js live.js settings.js sw.js favicon.svg htmx
var Files embed.FS

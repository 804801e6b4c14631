package static

import (
	"embed"
	"mime"
)

// Files are served under /static/.
//
//go:embed app.css app.js live.js settings.js sw.js favicon.svg htmx
//go:embed manifest.webmanifest icon-192.png icon-512.png catchup.js drafts.js
//go:embed tools.js tools.css emoji.txt
var Files embed.FS

// The web app manifest has its own type (the W3C manifest spec); the
// system's MIME table may not know the extension.
func init() {
	_ = mime.AddExtensionType(".webmanifest", "application/manifest+json")
}

package static

import "embed"

// Files are served under /static/.
//
//go:embed app.css app.js live.js settings.js sw.js favicon.svg htmx
var Files embed.FS

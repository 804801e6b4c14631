// Package static holds the browser files (vendored htmx, CSS, app.js, live.js),
// embedded in the binary.
package static

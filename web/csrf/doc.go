// Package csrf guards state-changing requests: a token, bound to the
// session (or to a visitor cookie before login), that forms send in the
// field _csrf and htmx in the header X-CSRF-Token, checked before the
// handler runs or, for streamed multipart uploads, from the body's first
// part.
package csrf

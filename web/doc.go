// Package web is the small request plumbing that handlers and the other
// plumbing packages share: how an error becomes a status and a sentence
// (StatusOf), how a request reached us (Transport, SecureCookie), the
// bodies and fields of streamed uploads, byte ranges of downloads, random
// tokens, the bounded row cache behind the session and room caches, and
// the set of avatar versions. The server, sessions, CSRF, limits and
// metrics each have a package of their own below it.
package web

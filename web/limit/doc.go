// Package limit holds the per-person and per-address limits on writes:
// token buckets by key kept in this instance's memory, the middleware and
// 429 answer that apply them, and the cap on what one person has under
// way at once (UserCounts).
package limit

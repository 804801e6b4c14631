// Package server is KillrChat's HTTP server: its read, write and idle
// timeouts, the cap on open connections that closes the longest-idle one
// to make room (ConnLimiter), and the lifting of deadlines for live
// streams.
package server

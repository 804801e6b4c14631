// Package hangup notices clients that close a live stream's connection.
// A taken-over stream connection has no reader (one would cost a
// goroutine per connection). Where the system has epoll
// (epoll_linux.go), every such socket is registered, for its peer's end
// only, with an epoll instance of the watcher's own, and one goroutine
// waits on it: a closed tab is noticed at once, and 10,000 open streams
// cost nothing while nobody leaves. Elsewhere, or for a socket that epoll
// refuses, one goroutine looks at each socket every Check, without
// blocking, skipping those written to since its last look (the write
// after a closed tab's fails, and ends the stream). Either way the
// stream's gone channel is closed.
package hangup

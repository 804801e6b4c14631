// Package presence says who is online (issue 19): a person is online
// while any of their browsers holds a live stream on any instance. Each
// instance knows its own streams (the live engine's counts); it tells the
// others through the hub, if the hub carries presence (Transport), with
// one message when a person's first stream here opens or their last one
// closes, and a heartbeat every Every naming everyone online here, so an
// instance that died is forgotten TTL after its last heartbeat. Never a
// message per room, and nothing stored: a heartbeat costs about (login
// length + 3) bytes per online person, three times a minute.
package presence

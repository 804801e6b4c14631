// Package natshub is the live hub for several app instances, over a NATS
// broker: events
// are delivered to this instance's subscribers at once and published on
// NATS for the others. Core NATS is at-most-once; a page that missed an
// event while the broker was away catches up by its Last-Event-ID replay
// from Cassandra, so nothing acknowledged is lost.
package natshub

// Package live carries events between instances and to browsers: the hub
// (in-process, or over NATS between instances) and its fan-out, the
// server-sent-event writer and stream loop, the sequencer that publishes
// an instance's messages in id order, resuming a stream by replay, the
// limits on streams and replays, stream ends and cache invalidations. It
// knows nothing of HTTP routing or of templates: the handlers give it a
// Source to read what a stream missed and a Render for each message.
package live

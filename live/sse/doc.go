// Package sse is the wire side of KillrChat's live streams: how an event
// is written as server-sent events (the HTML standard's text/event-stream),
// and the connection a stream writes to. It knows nothing of rooms,
// messages or the hub; package live decides what to write and when.
package sse

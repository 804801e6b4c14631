// Package events is the routes of the live streams: a conversation's
// (GET /rooms/:room/events, /dm/:logins/events), and a browser's personal
// stream (GET /events), which carries the person's own events and the
// conversations its tabs show. Each parses the request, checks who asks
// and what they may see, and hands the stream to the live engine
// (package live), which replays what the page missed and then writes the
// live events.
package events

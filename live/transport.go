// This file is what a transport between instances (package
// live/natshub) needs of the local hub: to hand it the events and
// watermarks of other instances, and to say when the broker is lost and
// back.

package live

import "time"

// HeartbeatEvery is how often an instance's transport sends its
// watermark when it has nothing else to send (see live/watermark).
const HeartbeatEvery = 100 * time.Millisecond

// PublishRemote hands ev, an event of instance from, to the fan-out, then
// takes note of the watermark it came with.
func (h *LocalHub) PublishRemote(ev Event, from string) { h.publishRemote(ev, from) }

// HeardMark takes note of instance from's watermark (a heartbeat).
func (h *LocalHub) HeardMark(from string, mark int64) { h.heardMark(from, mark) }

// Discover keeps cursors window behind the clock for the first moments
// after connecting, until the other instances are heard.
func (h *LocalHub) Discover(window time.Duration) { h.marks.Discover(window) }

// BrokerLost says events of other instances may be missed from now on:
// their watermarks must not move on past them.
func (h *LocalHub) BrokerLost() {
	h.marks.Freeze()
	h.gap(true)
}

// BrokerBack says the broker is back after an absence: revocations may
// have been missed, so caches start over; so may events, so every page
// here resumes from its cursor, which did not move past them; only then
// do watermarks move again.
func (h *LocalHub) BrokerBack() {
	h.gap(false)
	h.resetWatchers()
	h.dropAll()
	h.marks.Thaw()
}

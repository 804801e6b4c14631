// This file is what presence (package live/presence) needs of the
// engine: who has a stream open here, and a word when a person's first
// stream opens or their last one closes.

package live

// StreamLogins are the people with a live stream open on this instance.
func (e *Engine) StreamLogins() []string { return e.streams.logins() }

// HasStream says whether login has a live stream open on this instance.
func (e *Engine) HasStream(login string) bool { return e.streams.has(login) }

// OnStreamChange has f hear a person's first stream open here and their
// last one close (outside the counts' lock). Set it before streams open.
func (e *Engine) OnStreamChange(f func(login string, online bool)) { e.streams.onChange = f }

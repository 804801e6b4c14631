// Package changes is what people do to a message once it is posted, in a room
// or a DM alike: its page (the way to edit it without JavaScript), edits,
// deletes and reactions. Each change takes an id of its own from the live
// engine's sequencer, as a post does, so every page sees the messages and
// the changes of an instance in one order, and a page that resumes gets
// the changes it missed (see live.Source.ChangesAfter).
package changes

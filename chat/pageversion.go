package chat

// PageVersion says which state of a conversation a newest page was read
// in: two equal versions, read one after the other, have no change of
// the page stored between them. Changes is the conversation's change
// count (edits, deletes, reactions, take-backs, and posts stored near the
// end of their day); Day the newest day whose partition the page reads
// first, and Writers the marks of that day's writes, and of the next
// day's when it starts within the hour (store.Version). A post moves the
// marks; a count only grows.
type PageVersion struct {
	Changes int64
	Day     int
	Writers string
}

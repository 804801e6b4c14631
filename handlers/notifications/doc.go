// Package notifications is how much each conversation tells a person
// (issue 19): POST /rooms/:room/notifications and
// /dm/:logins/notifications set the level (everything, mentions or
// nothing) from the conversation's "⋯" menu, a plain form that works
// without JavaScript.
package notifications

// Package presence answers who is online (issue 19): GET /presence?l=<login>…
// for the dots a page shows beside people (members, DM entries, hover
// cards). The answer comes from memory (package live/presence): no statement.
package presence

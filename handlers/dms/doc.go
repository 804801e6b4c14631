// Package dms is what is only a DM's: the list of a person's direct
// messages, and starting one (by logins, with suggestions). A DM's page,
// messages and stream are the conversations' (see handlers'
// conversations.go), and the sidebar's recent DMs the core's.
package dms

// Package missed sends missed-message emails (issue 35): a message
// qualifies for a person who has not read it and has had no live
// connection on any instance since it was posted, when their email
// setting asks for it (mentions and DMs by default, or also every
// message of conversations at the level "everything") and their address
// is verified.
//
// Durable and once. The instance that stores a message writes, off the
// post's path, one row per person and conversation in Cassandra
// (email_pending), keyed by the due time: the end of the window of
// length Delay the message was posted in, plus Delay. Messages of one
// conversation posted in one window are one email. Every instance scans
// the due times that have come (listed by day in email_dues) and claims
// each row by a lightweight transaction ("IF owner = null"), sends it,
// and finishes it ("IF owner = <me>"). A claim holds for Lease: a row
// whose owner died is claimed again once its lease ran out, by "IF
// owner = <as read> AND lease_until = <as read>". Conditional writes
// were chosen over an owner per token range because instances come and
// go without any membership protocol (they share only Cassandra and the
// hub), emails are few (at most one per person, conversation and
// window), and a claim's four round trips cost nothing beside an SMTP
// exchange; owners per range would need agreement on who is alive, and
// a handover that loses or doubles rows while it is wrong. The one gap
// is an instance that dies after the SMTP server accepted a mail and
// before its finishing write: that mail goes again after the lease.
//
// At send time the email shows what is true then: messages read, deleted
// or seen (a live connection since their post) are left out, an email
// left with none is dropped, edits show. A server that is down delays
// mail: the row moves to a later due time, with back-off, for up to a
// day; a refusal (5xx) is logged and counted, never retried.
package missed

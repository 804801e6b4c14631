// Package push sends Web Push notifications (issue 19) for messages to the
// people who are away: not seen on any instance for Away, whose level in
// the conversation asks for the message, never its author. Only the
// instance that stored a message sends for it, so each person's browsers
// get it once. Sending never slows a post: a post hands the message to a
// bounded queue (full: the push is dropped and counted), and a few
// workers find the recipients, read their subscriptions and send, with
// retries after a 429 or 5xx; a 404 or 410 deletes the subscription.
// Pushes go only to public addresses, checked when the connection is
// made, and never follow a redirect (addresses.go).
package push

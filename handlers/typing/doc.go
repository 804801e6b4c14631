// Package typing is "Ada is typing…" (issue 19): a member's page says,
// at most every few seconds while its composer changes, that they are
// typing (POST /rooms/:room/typing, /dm/:logins/typing), and the hub takes
// it to the conversation's open pages on every instance. Nothing is
// stored: pages forget it after typingShown, or when the person's message
// arrives.
package typing

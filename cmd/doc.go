// Package cmd is KillrChat's composition root: the one configuration of
// every command (flags with environment fallbacks, checked at start),
// Main, which puts the server together and which the tests start as the
// binary does, and the other commands.
package cmd

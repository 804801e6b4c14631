// Package mentions is the list of the messages that mention a person
// (GET /mentions), each linked to its message.
package mentions

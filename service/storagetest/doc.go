// Package storagetest holds the contract of service.Messages, the part of
// the use cases' storage that keeps a conversation's messages and their
// changes, and Memory, its in-memory implementation. The fast tier runs
// the contract and the use cases over Memory; store's tests run the same
// contract over Cassandra, so the two cannot drift apart.
package storagetest

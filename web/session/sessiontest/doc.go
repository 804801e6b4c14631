// Package sessiontest is the contract of session.Sessions, Run, which
// every implementation must pass (the store's on Cassandra and Memory),
// and Memory, the in-memory implementation that the fast tests of the
// session store use.
package sessiontest

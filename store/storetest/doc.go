// Package storetest gives each test package a fresh keyspace on the real
// Cassandra (CASSANDRA_HOSTS, default 127.0.0.1), dropped when the package's
// tests end. A test that needs Cassandra fails when it is unreachable; it
// never skips.
package storetest

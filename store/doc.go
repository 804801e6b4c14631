// Package store is KillrChat's Cassandra adapter: every CQL statement the
// application runs, over the domain types of package chat. The use cases
// of package service reach it through the interfaces they declare (wired
// in handlers/routes and cmd); it alone (with schema) calls gocql.
package store

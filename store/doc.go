// Package store is KillrChat's Cassandra adapter: every CQL statement the
// application runs, over the domain types of package chat. Handlers call
// it; it alone (with schema) calls gocql.
package store

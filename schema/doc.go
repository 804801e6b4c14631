// Package schema owns KillrChat's CQL migrations and the runner that applies
// them: it creates the keyspace, applies the numbered .cql files in order,
// records each one with a checksum and refuses to run over a changed file.
package schema

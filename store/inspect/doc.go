// Package inspect reads and writes a KillrChat keyspace behind the
// application's back, for the tools that check what the application
// stored or write what would take too long to make through it: the
// fault run's invariants (e2e/chaos), the load commands' raw baselines
// and seeds (e2e/load), and scripts/cqlping. The application never uses
// it; with store and schema it is the only code that talks to the
// driver.
package inspect

// Package moving brings a team's history in and takes everything out:
// the export of a site or of one room as JSON lines (and its files as
// entries of a tar beside them), the import of such an export into an
// empty keyspace, and the import of a Slack workspace export. It reads
// and writes through the small interfaces it declares (store.Store
// implements them), so it imports no driver.
package moving

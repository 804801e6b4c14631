// Package search is search over HTTP: GET /search (the page, its live
// results as one types, and their pages). store.Indexer writes the index.
package search

// Package handlers is KillrChat's HTTP layer: one Register function lists
// every route, one file per resource, and one error handler maps the
// store's sentinel errors to status codes and readable pages.
package handlers

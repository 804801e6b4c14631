// Package routes puts KillrChat's HTTP side together: the core of package
// handlers and every route module.
package routes

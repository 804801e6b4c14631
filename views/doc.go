// Package views holds KillrChat's templ components and the view-model
// structs they take. Components never call the store: they render the
// domain's types (package chat) and the view models built from them.
package views

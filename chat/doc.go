// Package chat is KillrChat's domain: the people, rooms, direct messages,
// messages and their changes, the id that orders them (a timeuuid of its
// own, ID), the sentinel errors and validation rules every layer shares, and
// the pure text analysis behind mentions and search. It knows no database
// driver, no HTTP framework and no templates: store, live, views and
// handlers all speak its types.
package chat

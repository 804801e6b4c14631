// Package service is KillrChat's application layer: the use cases (post,
// announce, create, join, leave and delete a room, add, promote and
// remove members, join by invitation, ...), each one function that makes
// its checks and writes, then drops the caches it changed on every
// instance, fences the room's posts and publishes its live events, in one
// place. It speaks the domain's types (package chat) and depends only on
// the small interfaces it declares here: the storage it writes through,
// the bus (the live hub), the sequencer, a renderer of live events, the
// search indexer and the push sender. It imports no HTTP framework, no
// templates and no database driver; handlers parse a request, call one
// use case and render.
package service

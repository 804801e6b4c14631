// Package cache is the per-instance cache of rows the requests read most
// (issue 13), a decorator over service.Storage: a room's header by name,
// a person's standing in it by room and login, its first participants by
// name (issue 21: never all its members), a DM by address, and a person's
// row (their list of rooms) by login, so that a post, a room page or the
// home page does not read them from Cassandra each time; each person's
// sidebar state (Sidebars: markers, DM list, heads, unread counts), kept
// while no event, invalidation or gap touched it; and the newest page of
// conversations (Pages). Writes and every other read pass through to the
// storage it decorates. The rules
// (docs/data-model.md, rule 12):
//   - an entry is dropped on every instance when its row changes: the use
//     case that changed it invalidates it through the hub, which brings
//     the invalidation here (Hub.WatchInvalidations); the whole cache is
//     dropped when the broker reconnects, since invalidations may have
//     been missed meanwhile;
//   - an entry lives at most the TTL (--cache-ttl, default 10 s), which
//     bounds what a partition with no event at all can leave stale;
//   - a cache never decides an LWT: joins, leaves, creations and deletes
//     read at SERIAL from Cassandra, as before;
//   - a cached "not a participant" is checked again in Cassandra before a
//     request is refused (RoomFor), so a join on another instance is seen
//     at once.
package cache

// Package members is a room's people over HTTP (issue 21): the members page, adding
// someone, making an admin, removing a member, the room's kind, and
// invitation links (making, revoking, opening and using one). The store
// decides each change in an LWT; here every change drops the caches it
// touched through the hub, and a removal ends the removed person's streams
// of the room on every instance, as a leave does.
package members

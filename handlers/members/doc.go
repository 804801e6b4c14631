// Package members is a room's people over HTTP (issue 21): the members page, adding
// someone, making an admin, removing a member, the room's kind, and
// invitation links (making, revoking, opening and using one). Each change
// is one use case of package service, which drops the caches it touched
// through the hub and, for a removal, fences the room's posts and ends the
// removed person's streams of the room on every instance, as a leave does.
package members

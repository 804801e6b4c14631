// Package avatars is the route module of avatar pictures (issue 19): a
// person uploads a picture from their profile (a streamed multipart form,
// read as the composer's uploads are), or removes it, and anyone signed in
// gets it at /users/:login/avatar. Which people have a picture is held by
// every instance (handlers.Server.AvatarVersion), so pages draw it, or the
// initials, with no statement.
package avatars

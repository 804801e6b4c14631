// Package fence owns fences: how a change that takes away the right to post
// in a room (a member removed or leaving, the room deleted) makes sure no
// post that checked the room before it can still store a message once it
// is acknowledged, while a post checks the room in this instance's cache
// and writes with no read (issue 18: two statements, no read).
package fence

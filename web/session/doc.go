// Package session is the gorilla/sessions store of KillrChat: a cookie that
// holds only a signed random id, the session's values in storage (a row
// with a TTL, through the Sessions interface) so that every instance
// serves every session and logout revokes, and an in-process cache of
// verified sessions that the hub's stream ends invalidate.
package session

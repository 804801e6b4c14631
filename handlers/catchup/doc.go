// Package catchup is catching up on a conversation or on everything: "mark
// all as read" for the conversation open (POST <conversation>/read-all,
// which the page's Escape key also sends) and for every room and DM at
// once (POST /read). Plain forms that answer 303, so they work without
// JavaScript; an htmx request gets 204.
package catchup

// Package directory is the people directory (GET /people): everyone on the
// site, or those whose login or a name starts with ?q=, a page at a time,
// with their presence and a link that starts a DM, so that someone in no
// room yet can find colleagues (issue 39). A plain GET form: it works
// without JavaScript.
package directory

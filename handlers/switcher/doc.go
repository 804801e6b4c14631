// Package switcher is the quick switcher's query (GET /switch?q=): the
// rooms and DMs of the person asking, and the people of the site, whose
// name matches q (issue 39). static/tools.js asks it for JSON as one types
// in the Ctrl/Cmd+K dialog; without JavaScript it is a page with a form
// and links.
package switcher

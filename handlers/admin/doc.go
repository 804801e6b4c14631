// Package admin is the administration page, /admin: people and what
// administrators do to their accounts, the sign-up policy, who creates
// rooms, sign-up links and the audit log. Everyone but an administrator
// gets 404 on every route of it, a POST as well as a page. It depends on
// the use cases (package service) and the core's rendering through the
// small interfaces below, not on the core's server.
package admin

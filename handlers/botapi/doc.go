// Package botapi is the bots' REST API under /api/v1: JSON in and out,
// a bot's API token as "Authorization: Bearer …", errors as
// {"error": "…"} with the project's status codes, and a rate limit per
// bot told in X-RateLimit-Limit, -Remaining and -Reset on every answer.
//
// A token is checked against storage once, then cached on the instance
// until an invalidation names its bot (a rotation, a revocation, a
// deactivation: their fence waits for every instance to drop it) or the
// hub resets; a cached entry also lives at most tokenTTL.
package botapi

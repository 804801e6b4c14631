// Package outgoing delivers messages to bots' outgoing webhooks: a
// message that @mentions a bot in a room it is in, or any message in a
// DM with it (never the bot's own), is queued durably in Cassandra
// (store's bot_deliveries) before the post answers, then POSTed to the
// bot's endpoint by whichever instance claims it (an LWT), signed like
// Slack's requests:
//
//	X-KillrChat-Request-Timestamp: <unix seconds>
//	X-KillrChat-Signature: v0=<hex HMAC-SHA256 of "v0:<timestamp>:<body>">
//
// A 2xx answer with a text (text/plain, or JSON {"text": …}) becomes
// the bot's reply in the conversation, posted at most once (an LWT on
// the delivery's row); a time-out (Timeout, 7 s) or a 5xx is retried
// at most Retries (3) times with back-off, each retry carrying
// X-KillrChat-Retry-Num. A 4xx or a refused address ends it.
//
// Where a delivery may go is push.Guard's rule, checked on the
// endpoint's host and again on every connection after DNS; redirects
// are not followed. Config.Allow opens the operator's list of prefixes.
package outgoing

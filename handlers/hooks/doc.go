// Package hooks is a room's incoming webhooks: the page where its
// administrators make and delete them (/rooms/:room/hooks), and the
// door tools post through, POST /hooks/:id, in Slack's
// incoming-webhook format.
//
// The secret travels in the URL's last segment (/hooks/<id>/<secret>)
// or in the header X-KillrChat-Hook-Secret on /hooks/<id>. The URL form
// is there because the tools that post to Slack (CI services, Grafana,
// Alertmanager) take one URL and no header; this server logs the
// route, never the path, of /hooks/, but a proxy in front may log
// URLs, so a sender that can set a header should use it. A leaked URL
// is closed by deleting the hook and making another.
package hooks

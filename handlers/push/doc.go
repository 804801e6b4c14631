// Package push is Web Push's routes (issue 19): the VAPID public key a
// browser subscribes with (GET /push/key), and a person's browsers'
// subscriptions (POST /push/subscriptions, POST
// /push/subscriptions/delete), plus the service worker at the site's root
// (/sw.js), which shows the pushes. Sending is package push's.
package push

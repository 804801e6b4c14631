// KillrChat's service worker (issue 19): it shows the Web Push
// notifications the server sends for messages while no tab is open, and
// opens (or focuses) the conversation at the message when one is clicked.
// Served at /sw.js so its scope is the whole site; no build step.
"use strict";

self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

self.addEventListener("push", function (event) {
  var data = {};
  try { data = event.data ? event.data.json() : {}; } catch (e) { data = { title: "KillrChat", body: event.data ? event.data.text() : "" }; }
  var title = data.title || "KillrChat";
  event.waitUntil(self.registration.showNotification(title, {
    body: data.body || "",
    tag: data.tag || undefined,
    icon: "/static/favicon.svg",
    data: { url: data.url || "/" },
  }));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var url = (event.notification.data && event.notification.data.url) || "/";
  var target = new URL(url, self.location.origin).href;
  event.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (list) {
    for (var i = 0; i < list.length; i++) {
      var c = list[i];
      if (new URL(c.url).origin === self.location.origin && "focus" in c) {
        return c.focus().then(function (w) { return w && w.navigate ? w.navigate(target) : w; });
      }
    }
    return self.clients.openWindow(target);
  }));
});

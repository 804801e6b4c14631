// The push settings of /profile/notifications (issue 19), loaded by that
// page only: a room page does not carry them.
(function () {
  "use strict";

  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") || "" : "";
  }

  // Push (issue 19): the service worker at /sw.js receives the pushes the
  // server sends while no tab is open. Turning push on asks for the
  // notification permission (from the button: a user gesture), subscribes
  // with the server's VAPID key, and gives the server the subscription;
  // turning it off takes it back on both sides.
  function pushSettings() {
    var box = document.getElementById("push-settings");
    if (!box) return;
    var state = document.getElementById("push-state");
    var on = document.getElementById("push-on");
    var off = document.getElementById("push-off");
    box.hidden = false;
    if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
      state.textContent = "This browser cannot receive push notifications.";
      return;
    }
    function post(path, sub) {
      var body = new URLSearchParams();
      body.set("endpoint", sub.endpoint);
      if (path === "/push/subscriptions") {
        var j = sub.toJSON();
        body.set("p256dh", (j.keys && j.keys.p256dh) || "");
        body.set("auth", (j.keys && j.keys.auth) || "");
      }
      return fetch(path, { method: "POST", credentials: "same-origin", body: body,
        headers: { "X-CSRF-Token": csrf(), "HX-Request": "true" } }).then(function (resp) {
        if (!resp.ok) throw new Error("The server said " + resp.status + ".");
      });
    }
    function keyBytes(b64) {
      var s = atob(b64.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((b64.length + 3) % 4));
      var out = new Uint8Array(s.length);
      for (var i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
      return out;
    }
    function show(sub, problem) {
      var denied = Notification.permission === "denied";
      state.textContent = problem || (sub ? "On." : denied ? "Blocked: allow notifications for this site in the browser's settings." : "Off.");
      on.hidden = !!sub || denied;
      off.hidden = !sub;
    }
    var registration = navigator.serviceWorker.register("/sw.js");
    registration.then(function (reg) { return reg.pushManager.getSubscription(); }).then(function (sub) {
      show(sub);
      // The server may have dropped it (a 410): give it again.
      if (sub) post("/push/subscriptions", sub).catch(function () {});
    }, function (e) { show(null, "Push cannot start here: " + e.message); });
    on.addEventListener("click", function () {
      Notification.requestPermission().then(function (p) {
        if (p !== "granted") return show(null);
        return Promise.all([registration, fetch("/push/key", { credentials: "same-origin" }).then(function (r) {
          if (!r.ok) throw new Error("Push notifications are off on this server.");
          return r.text();
        })]).then(function (both) {
          return both[0].pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(both[1].trim()) });
        }).then(function (sub) {
          return post("/push/subscriptions", sub).then(function () { show(sub); });
        });
      }).catch(function (e) { show(null, "Could not turn push on: " + e.message); });
    });
    off.addEventListener("click", function () {
      registration.then(function (reg) { return reg.pushManager.getSubscription(); }).then(function (sub) {
        if (!sub) return show(null);
        return post("/push/subscriptions/delete", sub).then(function () { return sub.unsubscribe(); }).then(function () { show(null); });
      }).catch(function (e) { show(null, "Could not turn push off: " + e.message); });
    });
  }


  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", pushSettings);
  else pushSettings();
})();

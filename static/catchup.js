// Catching up (issue 39): Escape marks the open conversation read up to
// its newest message, as Slack's does. It posts the same form the page's
// "Mark all as read" button posts (POST <conversation>/read-all), so the
// server decides what "newest" is, then drops the "New since your last
// visit" divider and has app.js refresh the sidebar.
//
// An Escape that closes something (a menu, the "@" suggestions, a picker)
// is that thing's: this listener runs in the capture phase, before those
// close, and leaves such an Escape alone.
(function () {
  "use strict";

  var OPEN_THINGS = "details.message-menu[open], details.room-menu[open], " +
    "#mention-suggestions:not([hidden]):not(:empty), [data-popup]:not([hidden]), dialog[open]";

  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") || "" : "";
  }

  // openConversation is the address of the conversation the page shows,
  // when the reader takes part in it (it has a composer).
  function openConversation() {
    var room = document.querySelector("#room[data-url]");
    if (!room || !document.getElementById("composer")) return null;
    return room.getAttribute("data-url");
  }

  function markOpenRead() {
    var url = openConversation();
    if (!url) return;
    fetch(url + "/read-all", {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf(), "HX-Request": "true" }
    }).then(function (resp) {
      if (!resp.ok) return;
      var sep = document.getElementById("unread-since");
      if (sep) sep.remove();
      var bar = document.getElementById("catch-up");
      if (bar) bar.remove();
      document.dispatchEvent(new CustomEvent("killrchat:sidebar-stale"));
    }, function () {});
  }

  document.addEventListener("keydown", function (evt) {
    if (evt.key !== "Escape" || evt.defaultPrevented) return;
    if (evt.shiftKey || evt.altKey || evt.ctrlKey || evt.metaKey || evt.isComposing) return;
    if (document.querySelector(OPEN_THINGS)) return;
    markOpenRead();
  }, true);
})();

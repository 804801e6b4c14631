// Drafts (issue 39): what one types in a conversation's composer is kept
// in this browser (localStorage, per conversation address) while it is
// not sent, and put back when one comes back to the conversation. A sent
// message empties the composer (app.js), which drops the draft. Nothing
// leaves the browser.
(function () {
  "use strict";

  var PREFIX = "killrchat:draft:";
  var SAVE_AFTER_MS = 300;

  function store() {
    try { return window.localStorage; } catch (e) { return null; }
  }

  // keyOf is the draft's key for the composer's conversation.
  function keyOf(form) {
    var action = form && form.getAttribute("action");
    return action ? PREFIX + action.replace(/\/messages$/, "") : null;
  }

  // restoredInto is the composer a draft was last offered to: a draft is
  // put back once per composer (a page, or a swap that brings another
  // conversation's composer), never into the same composer again after a
  // swap, which would bring back a message just sent.
  var restoredInto = null;

  function restore() {
    var form = document.getElementById("composer"), box = document.getElementById("content"), ls = store();
    var key = keyOf(form);
    if (!box || !ls || !key || box === restoredInto) return;
    restoredInto = box;
    if (box.value !== "") return;
    var kept = ls.getItem(key);
    if (kept) {
      box.value = kept;
      box.dispatchEvent(new Event("input", { bubbles: true })); // app.js sizes the box
    }
  }

  // save keeps the composer's text as its conversation's draft, or drops
  // the draft when the composer is empty.
  function save() {
    var box = document.getElementById("content"), key = keyOf(box && box.form), ls = store();
    if (!box || !key || !ls) return;
    if (box.value.trim() === "") ls.removeItem(key);
    else ls.setItem(key, box.value);
  }

  var timer = null;
  document.addEventListener("input", function (evt) {
    if (!evt.target || evt.target.id !== "content") return;
    clearTimeout(timer);
    timer = setTimeout(save, SAVE_AFTER_MS);
  });

  // A sent message empties the composer (app.js, which listens first):
  // after any request, the draft is what the composer holds.
  document.addEventListener("htmx:after:request", function () {
    clearTimeout(timer);
    setTimeout(save, 0);
  });
  // Sending drops the draft at once: a swap while the message is on its
  // way must not bring it back. A send that fails keeps the text in the
  // composer, and the next keystroke or leaving the page keeps it again.
  document.addEventListener("submit", function (evt) {
    var form = evt.target, key = keyOf(form), ls = store();
    if (!form || form.id !== "composer" || !key || !ls) return;
    clearTimeout(timer);
    ls.removeItem(key);
  }, true);
  // Leaving the page saves at once, whatever the timer.
  window.addEventListener("pagehide", save);

  document.addEventListener("htmx:after:swap", restore);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", restore);
  else restore();
})();

// KillrChat browser glue for htmx 4.0.1 and its SSE extension (hx-sse).
//
// CSP-safe: no eval / new Function, no inline script, no inline style.
// Only plain DOM listeners for events that htmx 4.0.1 dispatches (checked
// against dist/htmx.js and dist/ext/hx-sse.js of htmx.org@4.0.1):
//   htmx:config:request  detail.ctx.request.headers is the header object fetch() sends
//   htmx:before:request  just before fetch() (used to clear #flash)
//   htmx:after:request   detail.ctx.response.status is the HTTP status (fires before the swap)
//   htmx:response:error  status >= 400
//   htmx:before:swap     detail.ctx, detail.tasks[{target, swapSpec:{style}}]
//   htmx:before:settle   fired per swap task right after the DOM was changed
//   htmx:after:swap      detail.ctx, after every task of the response was swapped
//   htmx:finally:swap    always, after success or error
//   htmx:sse:error       detail.status is set when an SSE *reconnect* got a non-2xx answer
// plus the DOM event that hx-sse dispatches for a named SSE event
// ("event: room-deleted") on the element that carries hx-sse:connect; it bubbles.
//
// It needs neither the htmx global nor a load order: load it with
// <script src="/static/app.js" defer></script>.
(function () {
  "use strict";

  var HOME_AFTER_DELETE = "/?notice=room-deleted";

  // ---------------------------------------------------------------------------
  // 1. CSRF: header X-CSRF-Token on every htmx request (same origin only).
  //    The token comes from the submitted form's _csrf field when there is one
  //    (it is rendered with the form, so it is never stale), else from
  //    <meta name="csrf-token" content="...">.
  // ---------------------------------------------------------------------------
  function csrfToken(ctx) {
    var form = ctx.request.form;
    if (form && form.elements) {
      var field = form.elements.namedItem("_csrf");
      if (field && field.value) return field.value;
    }
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") || "" : "";
  }

  function sameOrigin(url) {
    try {
      return new URL(url, document.baseURI).origin === window.location.origin;
    } catch (e) {
      return false;
    }
  }

  document.addEventListener("htmx:config:request", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (!ctx || !ctx.request || !ctx.request.headers) return;
    if (!sameOrigin(ctx.request.action || window.location.href)) return;
    var token = csrfToken(ctx);
    if (token) ctx.request.headers["X-CSRF-Token"] = token;
  });

  // ---------------------------------------------------------------------------
  // 2. <form data-reset-on-success ...>: reset it after a 2xx htmx response.
  //    htmx:after:request fires once the body was read and before the swap,
  //    for every status (422 included) - so check the status here.
  //    It does not fire for a request that failed on the network, nor for an
  //    SSE stream.
  // ---------------------------------------------------------------------------
  document.addEventListener("htmx:after:request", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (!ctx || !ctx.response) return;
    var status = ctx.response.status;
    if (status < 200 || status > 299) return;
    var form = ctx.request && ctx.request.form;
    if (!form && ctx.sourceElement && ctx.sourceElement.closest) {
      form = ctx.sourceElement.closest("form");
    }
    if (form && form.hasAttribute("data-reset-on-success")) form.reset();
  });

  // ---------------------------------------------------------------------------
  // 3. Scrolling of #messages.
  //    a) "Load older messages": content inserted above what the reader sees
  //       must not push the view down. Remember the distance to the bottom of
  //       the scroll box before the swap and restore it after.
  //    b) A live message appended at the bottom keeps the view pinned to the
  //       bottom if the reader was already there (within 80px).
  //    c) On page load the list starts at the bottom (newest message).
  //    The scroll box is #messages when it scrolls itself, else the page.
  // ---------------------------------------------------------------------------
  var NEAR_BOTTOM_PX = 80;
  var pending = null; // {box, fromBottom} or {box, stick: true}

  function messagesList() {
    return document.getElementById("messages");
  }

  function scrollBox(list) {
    var style = window.getComputedStyle(list);
    if (/(auto|scroll)/.test(style.overflowY) && list.scrollHeight > list.clientHeight) {
      return list;
    }
    return document.scrollingElement || document.documentElement;
  }

  function isOlderPageSwap(ctx, tasks, list) {
    var src = ctx && ctx.sourceElement;
    if (src && src.closest && src.closest(".load-older, [data-keep-scroll]")) return true;
    for (var i = 0; i < tasks.length; i++) {
      var t = tasks[i];
      var target = t.target;
      var style = t.swapSpec && t.swapSpec.style;
      if (target && target.nodeType === 1 && list.contains(target) &&
          (style === "afterbegin" || style === "beforebegin")) {
        return true;
      }
    }
    return false;
  }

  function isAppendSwap(tasks, list) {
    for (var i = 0; i < tasks.length; i++) {
      var t = tasks[i];
      var style = t.swapSpec && t.swapSpec.style;
      if (t.target === list && style === "beforeend") return true;
    }
    return false;
  }

  function applyPending() {
    if (!pending) return;
    var box = pending.box;
    if (pending.stick) {
      box.scrollTop = box.scrollHeight;
    } else {
      box.scrollTop = box.scrollHeight - pending.fromBottom;
    }
  }

  document.addEventListener("htmx:before:swap", function (evt) {
    var list = messagesList();
    var detail = evt.detail || {};
    var tasks = detail.tasks || [];
    pending = null;
    if (!list) return;
    var box = scrollBox(list);
    if (isOlderPageSwap(detail.ctx, tasks, list)) {
      pending = { box: box, fromBottom: box.scrollHeight - box.scrollTop };
    } else if (isAppendSwap(tasks, list)) {
      var gap = box.scrollHeight - box.scrollTop - box.clientHeight;
      if (gap <= NEAR_BOTTOM_PX) pending = { box: box, stick: true };
    }
  });
  // Restore as early as possible (before the browser paints the new rows) and
  // once more when every task of the response is done; both are idempotent.
  document.addEventListener("htmx:before:settle", applyPending);
  document.addEventListener("htmx:after:swap", applyPending);
  document.addEventListener("htmx:finally:swap", function () {
    pending = null;
  });

  function scrollToNewest() {
    var list = messagesList();
    if (!list) return;
    var box = scrollBox(list);
    if (box === list) box.scrollTop = box.scrollHeight;
  }

  // ---------------------------------------------------------------------------
  // 4. Room deleted -> leave the room page.
  //    - named SSE event "room-deleted" (hx-sse dispatches it as a DOM event on
  //      the hx-sse:connect element; it bubbles to document);
  //    - or an element #room-deleted-notice swapped in by any response;
  //    - or the room's event stream answering 404/410 (room is gone: e.g. it
  //      was deleted while the tab was in the background and the stream was
  //      paused, so the named event was never seen).
  // ---------------------------------------------------------------------------
  var leaving = false;

  function leaveDeletedRoom() {
    if (leaving) return;
    leaving = true;
    window.location.assign(HOME_AFTER_DELETE);
  }

  function checkDeletedNotice() {
    if (document.getElementById("room-deleted-notice")) leaveDeletedRoom();
  }

  function isStreamElement(elt) {
    return !!(elt && elt.hasAttribute &&
      (elt.hasAttribute("hx-sse:connect") || elt.hasAttribute("data-hx-sse:connect")));
  }

  // A response with HX-Redirect leaves the page already. The creator's own
  // "Yes, delete" gets one, and the stream brings "room-deleted" to the same
  // page at about the same moment: only the first of the two may start a
  // page load (a second one aborts the first request half-way).
  // htmx:after:request fires after HX-* headers are read, before htmx acts
  // on them; cancelling it stops htmx's redirect.
  document.addEventListener("htmx:after:request", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (!ctx || !ctx.hx || !ctx.hx.redirect) return;
    if (leaving) {
      evt.preventDefault();
      return;
    }
    leaving = true;
  });

  // The creator's own delete answers with its own redirect (and a notice
  // saying they deleted it): while that request runs, the stream's
  // "room-deleted" for the same room is not for this page to act on.
  var deletingOwnRoom = false;
  document.addEventListener("submit", function (evt) {
    var action = evt.target && evt.target.getAttribute && evt.target.getAttribute("action");
    if (action && /\/delete$/.test(action)) deletingOwnRoom = true;
  }, true);
  document.addEventListener("htmx:after:request", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (deletingOwnRoom && !(ctx && ctx.hx && ctx.hx.redirect)) deletingOwnRoom = false;
  });

  // The stream says the page missed more than it can replay: load it anew.
  document.addEventListener("reload", function () {
    if (!leaving) {
      leaving = true;
      window.location.reload();
    }
  });

  document.addEventListener("room-deleted", function () {
    if (!deletingOwnRoom) leaveDeletedRoom();
  });
  document.addEventListener("htmx:after:swap", checkDeletedNotice);

  document.addEventListener("htmx:sse:error", function (evt) {
    var status = evt.detail && evt.detail.status;
    if (status === 404 || status === 410) leaveDeletedRoom();
  });

  // The first connect of hx-sse:connect is an ordinary htmx GET: a 404/410
  // (not an event stream) arrives as a normal response.
  document.addEventListener("htmx:response:error", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (!ctx || !ctx.response) return;
    var status = ctx.response.status;
    if ((status === 404 || status === 410) && isStreamElement(ctx.sourceElement)) {
      leaveDeletedRoom();
    }
  });

  // ---------------------------------------------------------------------------
  // 5. #flash (the slot the server's error handler retargets htmx errors into):
  //    dismiss on click; cleared when the next htmx request starts.
  // ---------------------------------------------------------------------------
  document.addEventListener("click", function (evt) {
    var flash = document.getElementById("flash");
    if (flash && evt.target && evt.target.nodeType === 1 && flash.contains(evt.target)) {
      flash.replaceChildren();
    }
  });
  document.addEventListener("htmx:before:request", function () {
    var flash = document.getElementById("flash");
    if (flash && flash.firstChild) flash.replaceChildren();
  });

  // ---------------------------------------------------------------------------
  // 6. One element per message id in #messages.
  //    A message one posts arrives twice with the same id (msg-<timeuuid>):
  //    appended out of band by the POST response, and by the live stream,
  //    in either order. An older page could in principle overlap too. Keep
  //    the element that was there first and drop a later one with the same
  //    id. A MutationObserver sees every insertion whatever swapped it in,
  //    and its callback runs before the browser paints, so the duplicate is
  //    never seen.
  // ---------------------------------------------------------------------------
  function sameIdElsewhere(list, el) {
    var children = list.children;
    for (var i = 0; i < children.length; i++) {
      if (children[i] !== el && children[i].id === el.id) return true;
    }
    return false;
  }

  function dropDuplicates(records) {
    for (var r = 0; r < records.length; r++) {
      var list = records[r].target;
      if (!list || list.id !== "messages") continue;
      var added = records[r].addedNodes;
      for (var i = 0; i < added.length; i++) {
        var el = added[i];
        if (el.nodeType !== 1 || !el.id || el.parentNode !== list) continue;
        if (sameIdElsewhere(list, el)) list.removeChild(el);
      }
    }
  }

  var observed = null;

  function watchMessages() {
    var list = messagesList();
    if (!list || list === observed || typeof MutationObserver !== "function") return;
    observed = list;
    new MutationObserver(dropDuplicates).observe(list, { childList: true });
  }

  // #messages comes with the page; watch a list that a swap brings too.
  document.addEventListener("htmx:after:swap", watchMessages);

  function onReady() {
    watchMessages();
    checkDeletedNotice();
    scrollToNewest();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onReady);
  } else {
    onReady();
  }
})();

// KillrChat browser glue for htmx 4.0.1, and the tabs' side of the live
// connection (static/live.js).
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
//   htmx:error           the request failed on the network (or timed out)
// Live events come from static/live.js (section 15), not from htmx.
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
  // 3. Scrolling of #messages (the scroll box of the room page, at every width).
  //    a) A page opens on the newest message.
  //    b) A reader at the bottom (within NEAR_BOTTOM_PX) stays there: after a
  //       message arrives (live, or one's own), the newest is fully in view.
  //       "At the bottom" is remembered from the reader's own scrolling, not
  //       measured when a message arrives: a tall message that makes the list
  //       overflow for the first time must not unstick it. Resizes (a growing
  //       composer, a phone keyboard) keep a stuck reader at the bottom too.
  //    c) A reader who scrolled up is not moved: a "N new messages" pill
  //       counts what arrived below; it jumps to the newest and goes away at
  //       the bottom. One's own message always jumps to the newest.
  //    d) "Load older messages": content inserted above must not move what
  //       the reader sees; the first message wholly in view keeps its place
  //       across the swap and the regrouping after it.
  //    e) Scrolling up to within OLDER_MARGIN_PX of that link loads the older
  //       page by itself. The link stays (keyboards, pages without scripts);
  //       when it had the focus, its successor gets it (or, at the start of
  //       the conversation, the list), so the focus never falls to <body>.
  // ---------------------------------------------------------------------------
  var NEAR_BOTTOM_PX = 40;
  var stuck = true;      // the reader is at the bottom of #messages
  var unseen = 0;        // messages that arrived below while not stuck
  var ownPost = false;   // a post of ours is being answered
  var pending = null;    // {box, fromBottom} across an older-page swap

  function messagesList() {
    return document.getElementById("messages");
  }

  // scrollBox is #messages when the stylesheet makes it scroll (whether or
  // not it overflows yet), else the page.
  function scrollBox(list) {
    if (/(auto|scroll)/.test(window.getComputedStyle(list).overflowY)) return list;
    return document.scrollingElement || document.documentElement;
  }

  function gapBelow(box) {
    var visible = box === document.scrollingElement || box === document.documentElement ? window.innerHeight : box.clientHeight;
    return box.scrollHeight - box.scrollTop - visible;
  }

  function toBottom() {
    var list = messagesList();
    if (!list) return;
    var box = scrollBox(list);
    box.scrollTop = box.scrollHeight;
    stuck = true;
    setUnseen(0);
  }

  function setUnseen(n) {
    unseen = n;
    var pill = document.getElementById("new-messages");
    if (!pill) return;
    pill.hidden = n === 0;
    pill.textContent = n === 1 ? "1 new message ↓" : n + " new messages ↓";
  }

  var OLDER_MARGIN_PX = 300;
  var olderLoading = null; // the "Load older messages" link being followed

  function olderLink(list) {
    return list.querySelector(":scope > li.load-older-row > a.load-older");
  }

  function loadOlderAtTop(list) {
    var link = olderLink(list);
    if (!link || (olderLoading && olderLoading.isConnected)) return;
    var box = scrollBox(list);
    var top = box === list ? list.getBoundingClientRect().top : 0;
    if (link.getBoundingClientRect().bottom < top - OLDER_MARGIN_PX) return;
    olderLoading = link;
    link.click();
  }

  function olderFailed(evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (ctx && ctx.sourceElement && ctx.sourceElement === olderLoading) olderLoading = null;
  }
  document.addEventListener("htmx:response:error", olderFailed);
  document.addEventListener("htmx:error", olderFailed);

  function onListScroll() {
    var list = messagesList();
    if (!list) return;
    loadOlderAtTop(list);
    var was = stuck;
    stuck = gapBelow(scrollBox(list)) <= NEAR_BOTTOM_PX;
    if (stuck && unseen) setUnseen(0);
    if (stuck && !was) messagesSeen();
  }

  // Messages appended at the end of the list (whatever swapped them in).
  function arrived(count) {
    if (count === 0) return;
    if (stuck || ownPost) {
      toBottom();
    } else {
      setUnseen(unseen + count);
    }
  }

  // The pill takes the reader to what came: that is reading it. toBottom
  // marks the list as at the bottom before its scroll event runs, so the
  // scroll alone would not tell the server.
  document.addEventListener("click", function (evt) {
    var pill = evt.target && evt.target.closest && evt.target.closest("#new-messages");
    if (!pill) return;
    toBottom();
    messagesSeen();
  });

  // firstMessageInView is the first message wholly inside the list's box.
  function firstMessageInView(list) {
    var top = list.getBoundingClientRect().top;
    var msgs = list.querySelectorAll(":scope > li.message");
    for (var i = 0; i < msgs.length; i++) {
      if (msgs[i].getBoundingClientRect().top >= top - 1) return msgs[i];
    }
    return null;
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

  // The first message the reader sees keeps its place; without one (an
  // empty view), the distance to the bottom is kept.
  function applyPending() {
    if (!pending) return;
    if (pending.anchor && pending.anchor.isConnected) {
      var moved = pending.anchor.getBoundingClientRect().top - pending.anchorTop;
      if (moved) pending.box.scrollTop += moved;
      return;
    }
    pending.box.scrollTop = pending.box.scrollHeight - pending.fromBottom;
  }

  document.addEventListener("htmx:before:swap", function (evt) {
    var list = messagesList();
    var detail = evt.detail || {};
    pending = null;
    if (!list) return;
    if (isOlderPageSwap(detail.ctx, detail.tasks || [], list)) {
      var box = scrollBox(list);
      var anchor = box === list ? firstMessageInView(list) : null;
      var row = list.querySelector(":scope > li.load-older-row");
      pending = {
        box: box, fromBottom: box.scrollHeight - box.scrollTop,
        anchor: anchor, anchorTop: anchor ? anchor.getBoundingClientRect().top : 0,
        refocus: !!(row && row.contains(document.activeElement))
      };
    }
  });
  // Restore as early as possible (before the browser paints the new rows) and
  // once more when every task of the response is done; both are idempotent.
  document.addEventListener("htmx:before:settle", applyPending);
  document.addEventListener("htmx:after:swap", applyPending);
  document.addEventListener("htmx:after:swap", function () {
    var list = messagesList();
    if (!pending || !pending.refocus || !list) return;
    var active = document.activeElement;
    if (active && active !== document.body && active.isConnected) return;
    (olderLink(list) || list).focus({ preventScroll: true });
  });
  document.addEventListener("htmx:finally:swap", function () {
    pending = null;
  });

  // ---------------------------------------------------------------------------
  // 4. Room deleted -> leave the room page.
  //    - the live event "room-deleted" of the page's conversation (the
  //      stream sends it too when it is asked to carry a room that is gone);
  //    - or an element #room-deleted-notice swapped in by any response.
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
  // Only the delete's own answer (without a redirect: it failed) ends that;
  // other requests (a hover card, a post) may finish meanwhile.
  function isDeleteRequest(ctx) {
    return !!(ctx && ctx.request && /\/delete$/.test(String(ctx.request.action || "")));
  }
  document.addEventListener("htmx:after:request", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (deletingOwnRoom && isDeleteRequest(ctx) && !(ctx.hx && ctx.hx.redirect)) deletingOwnRoom = false;
  });
  document.addEventListener("htmx:error", function (evt) {
    if (isDeleteRequest(evt.detail && evt.detail.ctx)) deletingOwnRoom = false;
  });

  // The stream says the page missed more than it can replay, or no
  // longer carries its conversation (left, logged out): load it anew.
  function reloadPage() {
    if (!leaving) {
      leaving = true;
      window.location.reload();
    }
  }

  // leavePage goes to path, a page of this site, once.
  function leavePage(path) {
    if (leaving || !/^\/(?![\/\\])/.test(path)) return;
    leaving = true;
    window.location.assign(path);
  }

  function roomDeleted() {
    if (!deletingOwnRoom) leaveDeletedRoom();
  }
  document.addEventListener("htmx:after:swap", checkDeletedNotice);

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
  // 6. One element per message id in #messages, in id order.
  //    A message one posts arrives twice with the same id (msg-<timeuuid>):
  //    appended out of band by the POST response, and by the live stream,
  //    in either order. An older page could in principle overlap too. Keep
  //    the element that was there first and drop a later one with the same
  //    id. A MutationObserver sees every insertion whatever swapped it in,
  //    and its callback runs before the browser paints, so the duplicate is
  //    never seen. The same callback groups, dates and scrolls (7, 3).
  // ---------------------------------------------------------------------------
  function sameIdElsewhere(list, el) {
    var children = list.children;
    for (var i = 0; i < children.length; i++) {
      if (children[i] !== el && children[i].id === el.id) return true;
    }
    return false;
  }

  // A message from another server instance can arrive after a newer one
  // (it was stored a moment later), and a resumed stream sends again the
  // last few seconds, which the check above drops: a late message goes
  // where its id puts it, so the list stays in id order. idKey orders ids
  // as the server does: a timeuuid's timestamp, then its remaining bytes.
  function idKey(id) {
    var m = /^msg-([0-9a-f]{8})-([0-9a-f]{4})-[0-9a-f]([0-9a-f]{3})-([0-9a-f]{4})-([0-9a-f]{12})$/.exec(id || "");
    return m ? m[3] + m[2] + m[1] + m[4] + m[5] : null;
  }

  function previousMessage(el) {
    for (var r = el.previousElementSibling; r; r = r.previousElementSibling) {
      if (r.classList.contains("message") && idKey(r.id) !== null) return r;
    }
    return null;
  }

  function placeInOrder(list, el) {
    var key = idKey(el.id);
    if (key === null) return;
    var prev = previousMessage(el);
    if (!prev || idKey(prev.id) < key) return; // in order: the usual case
    var before = prev;
    for (var r = previousMessage(prev); r && idKey(r.id) > key; r = previousMessage(r)) before = r;
    // Above the day separator of the message it goes before; regrouping
    // then gives it its own day's separator if it needs one.
    var sep = before.previousElementSibling;
    if (sep && sep.classList.contains("day-sep")) before = sep;
    list.insertBefore(el, before);
  }

  function onListChange(records) {
    var list = messagesList();
    if (!list) return;
    var appended = 0;
    for (var r = 0; r < records.length; r++) {
      if (records[r].target !== list) continue;
      var added = records[r].addedNodes;
      for (var i = 0; i < added.length; i++) {
        var el = added[i];
        if (el.nodeType !== 1 || el.parentNode !== list) continue;
        if (el.id && sameIdElsewhere(list, el)) {
          list.removeChild(el);
          continue;
        }
        if (el.classList.contains("message") && !messageArrived(el)) continue;
        if (el.classList.contains("message")) placeInOrder(list, el);
        // Only messages after every earlier row count as arrivals: an
        // older page goes in above.
        if (el.classList.contains("message") && !el.nextElementSibling) appended++;
      }
    }
    // Regrouping may add or drop a day separator, or regroup a message,
    // above what the reader sees (an older page that continues the first
    // day): the first message in view keeps its place (3d).
    var box = scrollBox(list), anchor = null, anchorTop = 0;
    if (!pending && box === list && !stuck) {
      anchor = firstMessageInView(list);
      if (anchor) anchorTop = anchor.getBoundingClientRect().top;
    }
    localTimes(list);
    regroup(list);
    highlightMyMentions(list);
    if (pending) {
      applyPending();
    } else if (anchor && anchor.isConnected) {
      var moved = anchor.getBoundingClientRect().top - anchorTop;
      if (moved) list.scrollTop += moved;
    }
    arrived(appended);
    if (appended) messagesSeen();
  }

  var observed = null;

  function watchMessages() {
    var list = messagesList();
    if (!list || list === observed || typeof MutationObserver !== "function") return;
    observed = list;
    new MutationObserver(onListChange).observe(list, { childList: true });
    list.addEventListener("scroll", onListScroll, { passive: true });
    if (typeof ResizeObserver === "function") {
      // The list's box shrinks when the composer grows or a phone's keyboard
      // opens: keep a stuck reader at the bottom.
      new ResizeObserver(function () {
        if (stuck) toBottom();
      }).observe(list);
    }
    localTimes(list);
    regroup(list);
  }

  // #messages comes with the page; watch a list that a swap brings too.
  document.addEventListener("htmx:after:swap", watchMessages);
  window.addEventListener("scroll", function () {
    var list = messagesList();
    if (list && scrollBox(list) !== list) onListScroll();
  }, { passive: true });

  // ---------------------------------------------------------------------------
  // 7. Times and groups in the reader's time zone.
  //    The server writes UTC ("15:04 UTC") and groups and separates days in
  //    UTC; here every <time datetime> shows local time, the message's title
  //    the full local date, and days and groups are redone in local time:
  //    consecutive messages of one author within GROUP_MS are one group
  //    (class "cont" hides the repeated name and time), and a separator
  //    ("Today", "Yesterday", a date) starts each day. Idempotent: a pass
  //    over an unchanged list changes nothing (so it does not feed the
  //    MutationObserver that calls it).
  // ---------------------------------------------------------------------------
  var GROUP_MS = 5 * 60 * 1000;

  function messageTime(li) {
    var t = li.querySelector("time[datetime]");
    var d = t ? new Date(t.getAttribute("datetime")) : null;
    return d && !isNaN(d.getTime()) ? d : null;
  }

  // A <time data-format="datetime"> (lists of mentions and DMs, a room's
  // creation) shows the date too, and gets the full date as its title.
  function localTimes(root) {
    var times = root.querySelectorAll("time[datetime]:not([data-local])");
    for (var i = 0; i < times.length; i++) {
      var t = times[i];
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d.getTime())) continue;
      t.setAttribute("data-local", "");
      var full = d.toLocaleString([], { dateStyle: "full", timeStyle: "short" });
      if (t.getAttribute("data-format") === "datetime") {
        t.textContent = d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
        t.title = full;
        continue;
      }
      t.textContent = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
      var li = t.closest("li.message");
      if (li) li.title = full;
    }
  }

  // Times outside the message list (pages swapped in by htmx too).
  document.addEventListener("htmx:after:swap", function () {
    localTimes(document);
  });

  function dayKey(d) {
    return d.getFullYear() + "-" + (d.getMonth() + 1) + "-" + d.getDate();
  }

  function dayLabel(d) {
    var today = new Date();
    var yesterday = new Date(today.getFullYear(), today.getMonth(), today.getDate() - 1);
    if (dayKey(d) === dayKey(today)) return "Today";
    if (dayKey(d) === dayKey(yesterday)) return "Yesterday";
    return d.toLocaleDateString([], { weekday: "long", day: "numeric", month: "long", year: "numeric" });
  }

  function setSeparator(sep, key, label) {
    if (sep.getAttribute("data-local-day") !== key) sep.setAttribute("data-local-day", key);
    var span = sep.firstElementChild;
    if (!span) {
      span = document.createElement("span");
      sep.appendChild(span);
    }
    if (span.textContent !== label) span.textContent = label;
  }

  function regroup(list) {
    var rows = Array.prototype.slice.call(list.children);
    var sep = null;         // a separator waiting for the next message
    var prev = null, prevTime = null, prevDay = null;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      if (row.classList.contains("day-sep")) {
        if (sep) list.removeChild(sep);
        sep = row;
        continue;
      }
      if (row.classList.contains("unread-sep")) {
        prev = null; // "New since your last visit" starts a new group
        continue;
      }
      if (!row.classList.contains("message")) continue;
      var time = messageTime(row);
      if (!time) continue;
      var day = dayKey(time);
      if (day !== prevDay) {
        if (!sep) {
          sep = document.createElement("li");
          sep.className = "day-sep";
          list.insertBefore(sep, row);
        }
        setSeparator(sep, day, dayLabel(time));
        sep = null;
        if (row.classList.contains("cont")) row.classList.remove("cont");
      } else {
        if (sep) {
          list.removeChild(sep);
          sep = null;
        }
        var author = row.getAttribute("data-author");
        var cont = !!author && !row.classList.contains("system") && prev !== null &&
          !prev.classList.contains("system") && prev.getAttribute("data-author") === author &&
          time - prevTime < GROUP_MS;
        if (row.classList.contains("cont") !== cont) row.classList.toggle("cont", cont);
      }
      prev = row;
      prevTime = time;
      prevDay = day;
    }
    if (sep) list.removeChild(sep);
    foldJoins(list);
  }

  // foldJoins shows a run of three or more joins in a row as one line
  // ("A, B, C and 27 others joined the room", every name in its title):
  // 30 joins made 30 rows (issue 39). The rows stay, hidden, and come back
  // when what is around them changes.
  var JOINS = " joins the room";

  function foldJoins(list) {
    var folded = list.querySelectorAll("li.message.system[data-joins]");
    for (var i = 0; i < folded.length; i++) {
      folded[i].querySelector(".text").textContent = folded[i].getAttribute("data-joins");
      folded[i].removeAttribute("data-joins");
      folded[i].title = folded[i].getAttribute("data-title") || "";
    }
    var hidden = list.querySelectorAll("li.message.system.folded-join");
    for (var j = 0; j < hidden.length; j++) {
      hidden[j].classList.remove("folded-join");
      hidden[j].hidden = false;
    }
    var run = [];
    function flush() {
      if (run.length >= 3) {
        var names = run.map(function (r) { return r.querySelector(".text").textContent.slice(0, -JOINS.length); });
        var last = run[run.length - 1], text = last.querySelector(".text");
        last.setAttribute("data-joins", text.textContent);
        text.textContent = names.slice(0, 3).join(", ") +
          (names.length > 3 ? " and " + (names.length - 3) + (names.length === 4 ? " other" : " others") : "") + " joined the room";
        if (!last.hasAttribute("data-title")) last.setAttribute("data-title", last.title);
        last.title = last.getAttribute("data-title") + ": " + names.join(", ");
        for (var k = 0; k < run.length - 1; k++) {
          run[k].classList.add("folded-join");
          run[k].hidden = true;
        }
      }
      run = [];
    }
    var rows = list.children;
    for (var n = 0; n < rows.length; n++) {
      var t = rows[n].classList.contains("system") && rows[n].querySelector(".text");
      if (t && t.textContent.length > JOINS.length && t.textContent.slice(-JOINS.length) === JOINS) run.push(rows[n]);
      else if (rows[n].classList.contains("message") || rows[n].classList.contains("day-sep") || rows[n].classList.contains("unread-sep")) flush();
    }
    flush();
  }

  // ---------------------------------------------------------------------------
  // 8. The composer.
  //    - Enter sends, Shift+Enter is a new line; Enter that ends an IME
  //      composition does not send.
  //    - Send is disabled while a post is in flight (hx-disable on the form;
  //      Enter checks it too): the form's client_id makes a repeat harmless
  //      on the server, this keeps it from being sent at all.
  //    - On success the text box is emptied (unless the person already typed
  //      something else) and keeps the focus; the answer brings the next
  //      client_id. On 422 the server's message shows under the box.
  //    - On a network failure or a 5xx: "Couldn't send" with Retry, the text
  //      stays; Retry sends again with the same client_id.
  //    - The box grows with its text up to the stylesheet's max-height.
  //    - On a device with a keyboard, the room opens with the focus in it.
  // ---------------------------------------------------------------------------
  var sentText = null;

  function composer() {
    return document.getElementById("composer");
  }

  function isComposerRequest(ctx) {
    var f = composer();
    return !!(f && ctx && ctx.sourceElement && (ctx.sourceElement === f || f.contains(ctx.sourceElement)));
  }

  function composerBox() {
    return document.getElementById("content");
  }

  function sendButton() {
    var f = composer();
    return f ? f.querySelector("button[type=submit]") : null;
  }

  function grow(box) {
    // Empty, the box takes its height from the style sheet: a
    // placeholder that wraps on a narrow screen does not grow it.
    if (!box.value) {
      box.style.height = "";
      return;
    }
    box.style.height = "auto";
    box.style.height = box.scrollHeight + 2 + "px";
  }

  function showComposerError(text, withRetry) {
    var slot = document.getElementById("composer-error");
    if (!slot) return;
    var p = document.createElement("p");
    p.className = "field-error";
    p.setAttribute("role", "alert");
    p.appendChild(document.createTextNode(text));
    if (withRetry) {
      var retry = document.createElement("button");
      retry.type = "button";
      retry.className = "btn-link retry";
      retry.textContent = "Retry";
      p.appendChild(document.createTextNode(" "));
      p.appendChild(retry);
    }
    slot.replaceChildren(p);
  }

  function clearComposerError() {
    var slot = document.getElementById("composer-error");
    if (slot && slot.firstChild) slot.replaceChildren();
    var box = composerBox();
    if (box) box.removeAttribute("aria-invalid");
  }

  // The composer's limit (issue 39): a maxlength would cut a long paste
  // silently, so the page has none (data-max; without scripts the server
  // refuses the text and gives it back). With scripts the text is kept
  // whole, the composer says by how much it is over, and it is not sent.
  function composerOver() {
    var box = composerBox();
    if (!box) return false;
    var max = parseInt(box.getAttribute("data-max") || "0", 10);
    if (!max) return false;
    var n = Array.from(box.value).length;
    var slot = document.getElementById("composer-error");
    var shown = slot && slot.querySelector(".too-long");
    if (n <= max) {
      if (shown) clearComposerError();
      return false;
    }
    if (!shown || shown.getAttribute("data-n") !== String(n)) {
      showComposerError(n.toLocaleString("en") + " characters, " + (n - max).toLocaleString("en") +
        " over the limit of " + max.toLocaleString("en") + ": shorten it to send it.", false);
      var p = slot && slot.firstChild;
      if (p) {
        p.classList.add("too-long");
        p.setAttribute("data-n", String(n));
      }
    }
    box.setAttribute("aria-invalid", "true");
    return true;
  }

  document.addEventListener("input", function (evt) {
    if (evt.target && evt.target.id === "content") composerOver();
  });

  // Before htmx sees it: a text over the limit is not sent.
  document.addEventListener("submit", function (evt) {
    if (evt.target && evt.target.id === "composer" && composerOver()) {
      evt.preventDefault();
      evt.stopPropagation();
    }
  }, true);

  function send() {
    var f = composer(), btn = sendButton();
    if (!f || (btn && btn.disabled)) return;
    if (typeof f.requestSubmit === "function") f.requestSubmit(btn || undefined);
    else if (btn) btn.click();
  }

  document.addEventListener("keydown", function (evt) {
    if (evt.key !== "Enter" || !evt.target || evt.target.id !== "content") return;
    if (evt.shiftKey || evt.altKey || evt.ctrlKey || evt.metaKey) return;
    if (evt.isComposing || evt.keyCode === 229) return;
    evt.preventDefault();
    send();
  });

  document.addEventListener("input", function (evt) {
    if (evt.target && evt.target.id === "content") grow(evt.target);
  });

  document.addEventListener("click", function (evt) {
    if (evt.target && evt.target.closest && evt.target.closest("#composer-error .retry")) send();
  });

  document.addEventListener("htmx:config:request", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (!isComposerRequest(ctx)) return;
    var box = composerBox();
    sentText = box ? box.value : null;
    // Whichever copy of the message comes first (the answer or the live
    // stream), it is one's own: jump to it.
    ownPost = true;
    clearComposerError();
  });

  document.addEventListener("htmx:after:request", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (!isComposerRequest(ctx) || !ctx.response) return;
    var status = ctx.response.status;
    var box = composerBox();
    if (status >= 200 && status < 300) {
      if (box && box.value === sentText) {
        box.value = "";
        grow(box);
      }
      ownPostShown();
    } else if (status === 422) {
      if (box) box.setAttribute("aria-invalid", "true");
    } else if (status >= 500 || status === 429) {
      // Not this message's fault: say so beside it, keep the text.
      evt.preventDefault();
      showComposerError("Couldn't send.", true);
    }
  });

  document.addEventListener("htmx:error", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (isComposerRequest(ctx)) showComposerError("Couldn't send — the server did not answer.", true);
  });

  document.addEventListener("htmx:finally:request", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (!isComposerRequest(ctx)) return;
    ownPost = false;
    sentText = null;
    // A click on Send left the focus on the (disabled) button, or on body.
    var box = composerBox(), active = document.activeElement;
    if (box && (!active || active === document.body || active === sendButton())) box.focus();
  });

  function focusComposerOnOpen() {
    var box = composerBox();
    // A touch screen would open its on-screen keyboard over the room.
    if (!box || (window.matchMedia && window.matchMedia("(pointer: coarse)").matches)) return;
    box.focus({ preventScroll: true });
  }

  // ---------------------------------------------------------------------------
  // 9. The live stream's state.
  //    While the stream is down, a "Reconnecting…" bar shows (after a short
  //    grace, so a routine reconnect does not flash it). The reconnect delay
  //    is capped at 5 s (static/live.js); when the browser comes back online
  //    or the tab becomes visible, a reconnect that is waiting goes at once.
  // ---------------------------------------------------------------------------
  var DOWN_GRACE_MS = 800;
  var downTimer = null;

  function streamElement() {
    return document.getElementById("room-stream");
  }

  function setStreamDown(down) {
    var bar = document.getElementById("stream-status");
    if (!down) {
      clearTimeout(downTimer);
      downTimer = null;
      if (bar) bar.hidden = true;
      return;
    }
    if (downTimer || (bar && !bar.hidden)) return;
    downTimer = setTimeout(function () {
      downTimer = null;
      var b = document.getElementById("stream-status");
      if (b && !leaving) b.hidden = false;
    }, DOWN_GRACE_MS);
  }

  window.addEventListener("online", function () {
    livePost({ t: "online" });
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) livePost({ t: "online" });
  });

  // ---------------------------------------------------------------------------
  // 10. Forms: after an error, the focus goes to the first invalid field.
  // ---------------------------------------------------------------------------
  document.addEventListener("htmx:after:swap", function (evt) {
    var ctx = evt.detail && evt.detail.ctx;
    if (!ctx || !ctx.response || ctx.response.status < 400) return;
    var main = document.getElementById("main");
    var bad = main && main.querySelector('form [aria-invalid="true"]');
    if (bad) bad.focus();
  });

  // ---------------------------------------------------------------------------
  // 11. Unread state.
  //    a) Marking read: while the tab is visible and the reader is at the
  //       bottom of #messages, the newest message there is read: POST
  //       <conversation>/read with its id, at most one POST per
  //       MARK_EVERY_MS (the last one waits for the interval, so the newest
  //       id always goes). A full page load marks read on the server, so
  //       this only follows live messages. The server keeps the newest
  //       marker whatever order two tabs send theirs in.
  //    b) The sidebar (#sidebar-lists) and the "(N) " of the title are
  //       refreshed from GET /sidebar, at most once per SIDEBAR_EVERY_MS:
  //       when the page's stream says another conversation got a message
  //       ("event: unread", data = its id), when a message arrives here
  //       that is not read at once (tab hidden, reader scrolled up), and
  //       after marking read a conversation the sidebar shows as unread.
  // ---------------------------------------------------------------------------
  var MARK_EVERY_MS = 2000;
  var SIDEBAR_EVERY_MS = 1000;

  // conversationURL is the open conversation's address ("/rooms/x",
  // "/dm/a+b"), taken from its live stream's URL.
  function conversationURL() {
    var el = streamElement();
    var src = el && el.getAttribute("data-events");
    if (!src) return null;
    return src.replace(/\/events(\?.*)?$/, "");
  }

  function newestMessageID() {
    var list = messagesList();
    if (!list) return null;
    var msgs = list.querySelectorAll(":scope > li.message[id^='msg-']");
    return msgs.length ? msgs[msgs.length - 1].id.slice(4) : null;
  }

  function metaCSRF() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") || "" : "";
  }

  // throttled runs fn at most once per ms; a call within the interval runs
  // it once at the interval's end.
  function throttled(fn, ms) {
    var last = 0, timer = null;
    return function () {
      if (timer) return;
      var wait = Math.max(0, last + ms - Date.now());
      timer = setTimeout(function () {
        timer = null;
        last = Date.now();
        fn();
      }, wait);
    };
  }

  var markedID = null;

  function sidebarEntry(url) {
    var lists = document.getElementById("sidebar-lists");
    if (!lists || !url) return null;
    var links = lists.querySelectorAll("a[data-unread]");
    for (var i = 0; i < links.length; i++) {
      var href = (links[i].getAttribute("href") || "").replace(/#.*$/, "");
      if (href === url) return links[i];
    }
    return null;
  }

  var markRead = throttled(function () {
    var url = conversationURL(), id = newestMessageID();
    if (!url || !id || id === markedID || document.hidden || !stuck) return;
    markedID = id;
    var body = new URLSearchParams();
    body.set("id", id);
    fetch(url + "/read", {
      method: "POST", credentials: "same-origin", body: body,
      headers: { "X-CSRF-Token": metaCSRF(), "HX-Request": "true" }
    }).then(function (resp) {
      var entry = sidebarEntry(url);
      if (resp.ok && entry && entry.getAttribute("data-unread") !== "0") refreshSidebar();
    }, function () {
      markedID = null; // try again with the next message
    });
  }, MARK_EVERY_MS);

  // messagesSeen: new messages are in #messages, or the reader reached the
  // bottom, or came back to the tab. A DM that the sidebar does not list
  // yet got its first message while its page was open here: the message
  // came on this page's stream, so nothing else tells the sidebar.
  function messagesSeen() {
    var url = conversationURL();
    if (!url) return;
    if (url.indexOf("/dm/") === 0 && !sidebarEntry(url)) refreshSidebar();
    if (!document.hidden && stuck) {
      markRead();
    } else {
      refreshSidebar();
    }
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) messagesSeen();
  });

  // ownPostShown: a post of ours was stored. The first message of a DM
  // one just started makes it a conversation, which the sidebar does not
  // list yet (nobody's stream tells the sender about it).
  function ownPostShown() {
    var f = composer();
    var url = f && (f.getAttribute("action") || "").replace(/\/messages$/, "");
    if (url && !sidebarEntry(url)) refreshSidebar();
  }

  var refreshSidebar = throttled(function () {
    fetch("/sidebar", { credentials: "same-origin", headers: { "HX-Request": "true" } }).then(function (resp) {
      return resp.ok ? resp.text() : null;
    }).then(function (html) {
      if (!html) return;
      var tpl = document.createElement("template");
      tpl.innerHTML = html;
      var fresh = tpl.content.getElementById("sidebar-lists");
      var old = document.getElementById("sidebar-lists");
      if (!fresh || !old) return;
      old.replaceWith(fresh);
      if (fresh.querySelector("[data-presence]:not([data-online])")) refreshPresence();
      var n = parseInt(fresh.getAttribute("data-unread-conversations") || "0", 10);
      var bare = document.title.replace(/^\(\d+\) /, "");
      document.title = n > 0 ? "(" + n + ") " + bare : bare;
      menuMarks(n, parseInt(fresh.getAttribute("data-mention-conversations") || "0", 10));
    }, function () {});
  }, SIDEBAR_EVERY_MS);

  // Another script changed unread state (catchup.js: Escape).
  document.addEventListener("killrchat:sidebar-stale", function () { refreshSidebar(); });

  // menuMarks shows, on the phone's closed Menu button, how many
  // conversations are unread and whether one mentions the reader; its
  // name says so (views.MenuLabel says the same on a page load).
  function menuMarks(unread, mentions) {
    var button = document.querySelector(".menu-button");
    if (!button) return;
    var dot = button.querySelector(".menu-dot"), at = button.querySelector(".menu-mention");
    if (dot) {
      dot.setAttribute("data-count", String(unread));
      dot.hidden = unread === 0;
    }
    if (at) at.hidden = mentions === 0;
    var label = "Menu";
    if (unread > 0) label += ", " + unread + " unread";
    if (mentions > 0) label += ", " + mentions + " with mentions";
    button.setAttribute("aria-label", label);
  }

  // The lists of the page, when it is one of them (the DM list, the
  // mentions' first page), follow the person's events too.
  var refreshList = throttled(function () {
    var path = window.location.pathname;
    var id = { "/dm": "dms", "/mentions": "mentions" }[path];
    if (!id || window.location.search) return;
    fetch(path, { credentials: "same-origin", headers: { "HX-Request": "true" } }).then(function (resp) {
      return resp.ok ? resp.text() : null;
    }).then(function (html) {
      if (!html) return;
      var tpl = document.createElement("template");
      tpl.innerHTML = html;
      var fresh = tpl.content.getElementById(id);
      var old = document.getElementById(id);
      if (!fresh || !old) return;
      old.replaceWith(fresh);
      if (fresh.querySelector("[data-presence]:not([data-online])")) refreshPresence();
      localTimes(fresh);
    }, function () {});
  }, SIDEBAR_EVERY_MS);

  // ---------------------------------------------------------------------------
  // 12. Mentions of the reader. A message is rendered once for every reader
  //     of the live stream, so it cannot know who reads it: each mention is
  //     <a class="mention" data-login="...">, the body says who the reader
  //     is (data-viewer), and the reader's own get class "mention-me" here
  //     (pages rendered for one reader come with it already).
  // ---------------------------------------------------------------------------
  function highlightMyMentions(root) {
    var me = document.body && document.body.getAttribute("data-viewer");
    if (!me || !root) return;
    var links = root.querySelectorAll("a.mention:not(.mention-me)");
    for (var i = 0; i < links.length; i++) {
      if (links[i].getAttribute("data-login") === me) links[i].classList.add("mention-me");
    }
  }

  // ---------------------------------------------------------------------------
  // 13. "@" suggestions in the composer: typing "@" and the start of a
  //     login asks <conversation>/members?q= (debounced); the answer lists
  //     members under the text box; Up/Down choose, Enter or Tab (or a
  //     click) put "@login " in the text, Escape closes. Without JavaScript
  //     the composer is plain text, and "@login" still links when sent.
  // ---------------------------------------------------------------------------
  var SUGGEST_DELAY_MS = 200;
  var suggestTimer = null, suggestSeq = 0;

  function mentionAtCaret(box) {
    var before = box.value.slice(0, box.selectionStart);
    // Letters of any script: "@Émi" and "@Zoë" ask for suggestions too.
    var m = /(^|[^\p{L}\p{N}_@.+-])@([\p{L}\p{N}_.-]{0,31})$/u.exec(before);
    return m ? { start: before.length - m[2].length - 1, query: m[2] } : null;
  }

  function suggestions() {
    return document.getElementById("mention-suggestions");
  }

  function closeSuggestions() {
    var list = suggestions();
    if (list) list.remove();
    var box = composerBox();
    if (box) box.removeAttribute("aria-activedescendant");
  }

  function membersURL() {
    var f = composer();
    var action = f && f.getAttribute("action");
    return action ? action.replace(/\/messages$/, "/members") : null;
  }

  function askSuggestions() {
    var box = composerBox(), url = membersURL();
    var at = box && mentionAtCaret(box);
    if (!at || !url) {
      closeSuggestions();
      return;
    }
    var mine = ++suggestSeq;
    fetch(url + "?q=" + encodeURIComponent(at.query), {
      credentials: "same-origin", headers: { "HX-Request": "true" }
    }).then(function (resp) {
      return resp.ok ? resp.text() : "";
    }).then(function (html) {
      if (mine !== suggestSeq) return; // a newer question was asked
      closeSuggestions();
      var tpl = document.createElement("template");
      tpl.innerHTML = html;
      var list = tpl.content.getElementById("mention-suggestions");
      if (!list || !list.children.length) return;
      var row = composer().querySelector(".composer-row");
      row.parentNode.insertBefore(list, row);
      box.setAttribute("aria-activedescendant", list.children[0].id);
    }, function () {});
  }

  function moveSuggestion(step) {
    var list = suggestions();
    var opts = list ? list.children : [];
    var cur = 0;
    for (var i = 0; i < opts.length; i++) {
      if (opts[i].getAttribute("aria-selected") === "true") cur = i;
      opts[i].setAttribute("aria-selected", "false");
    }
    var next = (cur + step + opts.length) % opts.length;
    opts[next].setAttribute("aria-selected", "true");
    composerBox().setAttribute("aria-activedescendant", opts[next].id);
  }

  function pickSuggestion(opt) {
    var box = composerBox();
    var at = box && mentionAtCaret(box);
    if (!opt || !at) return closeSuggestions();
    var login = opt.getAttribute("data-login");
    var after = box.value.slice(box.selectionStart);
    box.value = box.value.slice(0, at.start) + "@" + login + " " + after;
    var caret = at.start + login.length + 2;
    box.setSelectionRange(caret, caret);
    closeSuggestions();
    box.focus();
  }

  document.addEventListener("input", function (evt) {
    if (!evt.target || evt.target.id !== "content") return;
    clearTimeout(suggestTimer);
    if (!mentionAtCaret(evt.target)) {
      closeSuggestions();
      return;
    }
    suggestTimer = setTimeout(askSuggestions, SUGGEST_DELAY_MS);
  });

  // Capture phase: runs before the composer's Enter-sends handler.
  document.addEventListener("keydown", function (evt) {
    if (!evt.target || evt.target.id !== "content" || !suggestions()) return;
    var key = evt.key;
    if (key === "ArrowDown" || key === "ArrowUp") {
      moveSuggestion(key === "ArrowDown" ? 1 : -1);
    } else if ((key === "Enter" || key === "Tab") && !evt.shiftKey && !evt.isComposing) {
      pickSuggestion(suggestions().querySelector('[aria-selected="true"]'));
    } else if (key === "Escape") {
      closeSuggestions();
    } else {
      return;
    }
    evt.preventDefault();
    evt.stopPropagation();
  }, true);

  document.addEventListener("mousedown", function (evt) {
    var opt = evt.target && evt.target.closest && evt.target.closest("#mention-suggestions [role=option]");
    if (!opt) return;
    evt.preventDefault(); // keep the focus in the text box
    pickSuggestion(opt);
  });

  document.addEventListener("htmx:config:request", function (evt) {
    if (isComposerRequest(evt.detail && evt.detail.ctx)) closeSuggestions();
  });

  // A page opened on one message (?at=, from the list of mentions) shows it
  // in the middle, not the newest at the bottom.
  function openAtMessage() {
    var target = document.querySelector("#messages > li.message.highlight");
    if (!target) return false;
    target.scrollIntoView({ block: "center" });
    var list = messagesList();
    stuck = list ? gapBelow(scrollBox(list)) <= NEAR_BOTTOM_PX : false;
    return true;
  }

  // 14. Attachments: staged files, a progress bar, drag-and-drop, paste.
  //     The composer works without JavaScript (a multipart form: the server
  //     reads _csrf, then the text, then the files, as a stream). With it,
  //     the browser's file input hides behind an "Attach" button, and files
  //     chosen there, dropped on the composer or pasted into the text box
  //     are staged: listed under the box (name, size, a thumbnail for an
  //     image, a remove button) and sent with the next Send. A Send with
  //     staged files goes by XMLHttpRequest instead of htmx: htmx 4 sends
  //     with fetch(), which reports no upload progress. Each file is its own
  //     request (and message, the text going with the first), one after the
  //     other, so each has its own progress and one too large does not sink
  //     the others; Cancel stops the upload under way and leaves it, and
  //     the files after it, staged. The answer is the same fragment as an
  //     htmx post's; its messages are appended to #messages (6. drops the
  //     copy the live stream brings) and the server's error text shows
  //     under the box.
  // ---------------------------------------------------------------------------
  var THUMB_MAX_BYTES = 10 * 1024 * 1024; // larger images get no thumbnail
  var staged = [];     // File objects, in the order they go
  var thumbs = typeof WeakMap === "function" ? new WeakMap() : null;
  var uploading = null; // the XMLHttpRequest under way

  function fileInput() {
    return document.getElementById("file");
  }

  function byId(id) {
    return document.getElementById(id);
  }

  // humanSize is views.HumanSize: "512 B", "999.9 KiB", "25 MiB".
  function humanSize(n) {
    function one(x) {
      return x.toFixed(1).replace(/\.0$/, "");
    }
    if (n < 1024) return n + " B";
    if (n < 1024 * 1024) return one(n / 1024) + " KiB";
    return one(n / (1024 * 1024)) + " MiB";
  }

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // thumbnail is an image's preview as a data: URL (the page's CSP allows
  // data: images, not blob:), read once per file.
  function thumbnail(file, img) {
    var known = thumbs && thumbs.get(file);
    if (known) {
      img.src = known;
      return;
    }
    var reader = new FileReader();
    reader.addEventListener("load", function () {
      if (thumbs) thumbs.set(file, reader.result);
      img.src = reader.result;
    });
    reader.readAsDataURL(file);
  }

  function renderStaged() {
    var list = byId("staged-files");
    if (!list) return;
    var items = [];
    for (var i = 0; i < staged.length; i++) {
      var f = staged[i];
      var li = el("li", "staged-file");
      if (/^image\//.test(f.type) && f.size <= THUMB_MAX_BYTES) {
        var img = el("img", "staged-thumb");
        img.alt = "";
        img.width = 40;
        img.height = 40;
        thumbnail(f, img);
        li.appendChild(img);
      } else {
        li.appendChild(el("span", "staged-thumb staged-icon", (f.name.split(".").pop() || "file").slice(0, 4)));
      }
      li.appendChild(el("span", "staged-name", f.name));
      li.appendChild(el("span", "staged-size muted", humanSize(f.size)));
      var remove = el("button", "staged-remove btn-link", "Remove");
      remove.type = "button";
      remove.setAttribute("data-index", String(i));
      remove.setAttribute("aria-label", "Remove " + f.name);
      remove.disabled = !!uploading;
      li.appendChild(remove);
      items.push(li);
    }
    list.replaceChildren.apply(list, items);
    list.hidden = staged.length === 0;
  }

  function stageFiles(files) {
    if (!composer() || !files.length) return;
    for (var i = 0; i < files.length; i++) staged.push(files[i]);
    renderStaged();
    clearComposerError();
  }

  document.addEventListener("click", function (evt) {
    var t = evt.target && evt.target.closest && evt.target.closest("#attach, #staged-files .staged-remove, #upload-cancel");
    if (!t) return;
    if (t.id === "attach") {
      var input = fileInput();
      if (input) input.click();
    } else if (t.id === "upload-cancel") {
      if (uploading) uploading.abort();
    } else if (!uploading) {
      var i = parseInt(t.getAttribute("data-index"), 10);
      staged.splice(i, 1);
      renderStaged();
      // The focus goes to the entry that took its place, else the box.
      var next = document.querySelectorAll("#staged-files .staged-remove");
      var to = next[Math.min(i, next.length - 1)] || composerBox();
      if (to) to.focus();
    }
  });

  document.addEventListener("change", function (evt) {
    var input = fileInput();
    if (!input || evt.target !== input || !input.files || !input.files.length) return;
    stageFiles(Array.prototype.slice.call(input.files));
    input.value = ""; // the same file can be chosen again; staged holds them
  });

  // errorText is the sentence of an error answer (the error fragment's
  // paragraph), or a fallback.
  function errorText(xhr) {
    var tpl = document.createElement("template");
    tpl.innerHTML = xhr.responseText || "";
    var p = tpl.content.querySelector("p");
    var text = p ? p.textContent.trim() : "";
    return text || "Couldn't upload (" + xhr.status + ").";
  }

  // appendPosted adds the messages of a post's answer to #messages.
  function appendPosted(html) {
    var list = messagesList();
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    var items = tpl.content.querySelectorAll("li.message");
    for (var i = 0; i < items.length; i++) {
      if (!list || document.getElementById(items[i].id)) continue;
      var li = document.importNode(items[i], true);
      list.appendChild(li);
      if (window.htmx && typeof window.htmx.process === "function") window.htmx.process(li);
    }
    var next = tpl.content.getElementById("client_id");
    var mine = document.getElementById("client_id");
    if (next && mine) mine.value = next.value;
  }

  function showProgress(file, percent) {
    var status = byId("upload-status"), bar = byId("upload-progress");
    if (!status) return;
    byId("upload-name").textContent = file ? "Uploading " + file.name : "";
    bar.value = percent;
    byId("upload-percent").textContent = percent + "%";
    status.hidden = !file;
  }

  // uploadOne posts one file (and text) and calls done(result) when it
  // ends: "ok", "failed" or "cancelled".
  function uploadOne(form, file, text, done) {
    var data = new FormData();
    var token = form.elements.namedItem("_csrf");
    // The token first: the server checks it before it stores anything.
    data.append("_csrf", token ? token.value : "");
    // The composer's one-time id: a retry of this upload stores nothing
    // more (each answer brings the next id, see appendPosted).
    var clientID = document.getElementById("client_id");
    if (clientID) data.append("client_id", clientID.value);
    data.append("content", text);
    data.append("file", file, file.name || "pasted.png");
    var xhr = new XMLHttpRequest();
    uploading = xhr;
    xhr.open("POST", form.getAttribute("action"));
    xhr.setRequestHeader("X-CSRF-Token", token ? token.value : "");
    xhr.setRequestHeader("HX-Request", "true");
    showProgress(file, 0);
    xhr.upload.addEventListener("progress", function (evt) {
      if (evt.lengthComputable) showProgress(file, Math.round((evt.loaded / evt.total) * 100));
    });
    xhr.addEventListener("load", function () {
      if (xhr.status >= 200 && xhr.status < 300) {
        ownPost = true;
        appendPosted(xhr.responseText);
        ownPost = false;
        ownPostShown();
        done("ok");
      } else {
        showComposerError(file.name + ": " + errorText(xhr), false);
        done("failed");
      }
    });
    xhr.addEventListener("error", function () {
      showComposerError(file.name + ": couldn't upload — the server did not answer.", false);
      done("failed");
    });
    xhr.addEventListener("abort", function () {
      done("cancelled");
    });
    xhr.send(data);
  }

  // uploadStaged sends the staged files one by one, the text with the
  // first; each leaves the list once it is stored. A file the server
  // refused leaves it too (its error shows); Cancel stops the rest.
  function uploadStaged() {
    var form = composer();
    if (!form || uploading || !staged.length) return;
    var box = composerBox();
    var text = box ? box.value : "";
    var btn = sendButton();
    if (btn) btn.disabled = true;
    clearComposerError();
    var first = true;
    (function next() {
      if (!staged.length) return finish();
      var file = staged[0];
      uploadOne(form, file, first ? text : "", function (result) {
        uploading = null;
        if (result === "cancelled") return finish();
        if (staged[0] === file) staged.shift();
        if (result === "ok" && first && box && box.value === text) {
          box.value = "";
          grow(box);
        }
        if (result === "ok") first = false;
        next();
      });
      renderStaged(); // its remove buttons off while uploadOne runs
    })();

    function finish() {
      uploading = null;
      if (btn) btn.disabled = false;
      showProgress(null, 0);
      renderStaged();
      if (box) box.focus();
    }
  }

  // Capture phase: this runs before htmx's own submit listener on the form,
  // so htmx never sends a form that carries files.
  document.addEventListener(
    "submit",
    function (evt) {
      var form = composer(), input = fileInput();
      if (!form || evt.target !== form) return;
      if (input && input.files && input.files.length) {
        stageFiles(Array.prototype.slice.call(input.files));
        input.value = "";
      }
      if (!staged.length && !uploading) return;
      evt.preventDefault();
      evt.stopImmediatePropagation();
      uploadStaged();
    },
    true
  );

  function hasFiles(evt) {
    return evt.dataTransfer && Array.prototype.indexOf.call(evt.dataTransfer.types, "Files") >= 0;
  }

  document.addEventListener("dragover", function (evt) {
    var form = composer();
    if (!form || !hasFiles(evt)) return;
    evt.preventDefault(); // allows the drop
    form.classList.add("dropping");
  });

  document.addEventListener("dragleave", function (evt) {
    var form = composer();
    if (form && (!evt.relatedTarget || !form.contains(evt.relatedTarget))) form.classList.remove("dropping");
  });

  document.addEventListener("drop", function (evt) {
    var form = composer();
    if (!form || !evt.dataTransfer || !evt.dataTransfer.files.length) return;
    evt.preventDefault(); // the browser would open the file instead
    form.classList.remove("dropping");
    stageFiles(Array.prototype.slice.call(evt.dataTransfer.files));
  });

  // Pasting an image (a screenshot) into the text box stages it; pasted
  // text is left to the browser.
  document.addEventListener("paste", function (evt) {
    if (!evt.target || evt.target.id !== "content" || !evt.clipboardData) return;
    var files = Array.prototype.filter.call(evt.clipboardData.files || [], function (f) {
      return /^image\//.test(f.type);
    });
    if (!files.length) return;
    evt.preventDefault();
    stageFiles(files);
  });

  // ---------------------------------------------------------------------------
  // 15. Live events: one connection per browser (static/live.js).
  //     The tab tells the browser's Manager which conversation it shows
  //     (#room-stream: data-conversation, and data-after, the page's resume
  //     point) and gets the events of the person and of that conversation:
  //     - in a SharedWorker when the browser has them;
  //     - else the tab holding the Web Lock "killrchat-live" runs the
  //       Manager and relays over the BroadcastChannel "killrchat-live";
  //       when it closes, the next tab in line for the lock takes over, and
  //       every tab tells it again what it shows, up to its own last
  //       message's resume point;
  //     - else each tab runs a Manager of its own (a stream per tab).
  //     A message of the tab's conversation goes into #messages (6. keeps
  //     one element per id, in id order); "live:message" (detail.id, the
  //     message's id) tells who wants to know. <html data-live> is "up"
  //     while the stream is up, and says which of the three runs it in
  //     data-live-mode.
  // ---------------------------------------------------------------------------
  var TAB = Math.random().toString(36).slice(2) + Date.now().toString(36);
  var livePost = function () {};
  var liveShown = null; // the "show" message this tab sent last
  var liveWasUp = false; // the stream carried this tab's conversation once
  var liveTabs = 0, liveBrowser = ""; // the Manager's tabs, and its key

  function liveScriptURL() {
    var s = document.querySelector('script[src*="/static/live.js"]');
    return s ? s.getAttribute("src") : null;
  }

  function showMessage(shared) {
    var el = streamElement();
    return {
      t: "show", tab: TAB, visible: document.visibilityState === "visible",
      conv: el ? el.getAttribute("data-conversation") || "" : "",
      cursor: el ? el.getAttribute("data-after") || "" : "",
      browser: shared ? browserKey() : ""
    };
  }

  // browserKey names the browser's shared stream to the server, which
  // ends the stream of the same key when a new one opens. It is kept in
  // localStorage so that a Manager started anew (the worker after its last
  // tab navigated, a new leader tab) replaces the old stream at once; it
  // holds the scripts' version, so two versions' workers (old tabs, new
  // tabs) do not replace each other's streams.
  function browserKey() {
    var version = (liveScriptURL() || "").replace(/^[^?]*\??/, "");
    try {
      var key = window.localStorage.getItem("killrchat-browser");
      if (!key) {
        key = Math.random().toString(36).slice(2) + Math.random().toString(36).slice(2);
        window.localStorage.setItem("killrchat-browser", key);
      }
      return (key + "-" + version).replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
    } catch (e) {
      return ""; // no storage: the Manager's own key
    }
  }

  // swapLive puts an event's HTML into the page: elements marked
  // hx-swap-oob="true" replace the element with their id, the rest go at
  // the end of #messages.
  function swapLive(html) {
    var list = messagesList();
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    var nodes = Array.prototype.slice.call(tpl.content.children);
    for (var i = 0; i < nodes.length; i++) {
      var node = nodes[i];
      if (node.getAttribute("hx-swap-oob") === "true" && node.id) {
        node.removeAttribute("hx-swap-oob");
        var old = document.getElementById(node.id);
        if (old) old.replaceWith(node);
      } else if (list) {
        list.appendChild(node);
      } else {
        continue;
      }
      if (window.htmx && typeof window.htmx.process === "function") window.htmx.process(node);
    }
  }

  function onLive(msg) {
    if (!msg) return;
    if (msg.t === "ping") {
      livePost({ t: "pong", tab: TAB });
      return;
    }
    if (msg.t === "hello") {
      // A new Manager (a tab took the lead): say what this tab shows.
      if (liveShown) livePost(liveShown);
      return;
    }
    if (msg.t === "status") {
      liveTabs = msg.tabs || 0;
      liveBrowser = msg.browser || "";
      // Up for this tab once the stream carries its conversation.
      var conv = liveShown && liveShown.conv;
      var up = !!msg.up && (!conv || (msg.carried || []).indexOf(conv) >= 0);
      document.documentElement.setAttribute("data-live", up ? "up" : "down");
      // The bar says a stream was lost or refused, not that it is still on
      // its way.
      if (up) liveWasUp = true;
      if (streamElement() && (liveWasUp || msg.refused)) setStreamDown(!up);
      return;
    }
    if (msg.t !== "event") return;
    var mine = liveShown && liveShown.conv && msg.conv === liveShown.conv;
    // The tab's own resume point: what it says when a new Manager asks.
    if (mine && msg.id) liveShown.cursor = msg.id;
    switch (msg.kind) {
      case "message":
      case "participants":
        if (!mine) return;
        swapLive(msg.data);
        if (msg.kind === "message") {
          document.dispatchEvent(new CustomEvent("live:message", { detail: { id: messageIDOf(msg.data), cursor: msg.id } }));
        }
        return;
      case "unread":
        if (msg.data && msg.notifier === TAB) notify(msg.conv, msg.data);
        if (mine) return; // its messages come on the stream
        refreshSidebar();
        refreshList();
        return;
      case "room-deleted":
        if (mine) roomDeleted();
        return;
      case "stream-end":
        // The person's account was closed or their sessions ended: every
        // tab goes where the stream says (the login page, with why).
        if (!msg.conv && msg.data) {
          leavePage(msg.data);
          return;
        }
        if (mine) reloadPage();
        return;
      case "reload":
        if (mine) reloadPage();
        return;
      default:
        // Kinds to come (edit, delete, reaction, typing, presence) are
        // dispatched for whoever handles them.
        if (mine) document.dispatchEvent(new CustomEvent("live:" + msg.kind, { detail: msg }));
    }
  }

  // ---------------------------------------------------------------------------
  // In-page notifications (issue 19). The browser's one live connection
  // hears each message of the person's other conversations ("unread",
  // whose data says who wrote what), and its Manager (live.js), which
  // knows whether any tab is in view, names one tab to notify (notifier),
  // or none while someone is looking: one notification per message,
  // whatever the tabs. Where each tab holds its own stream (no
  // SharedWorker, no Web Locks), a localStorage mark keeps the tabs from
  // repeating one another as well as it can; the notification's tag is
  // the message id, so a browser that is shown two keeps one. The level
  // comes from the sidebar entry (data-level), else the default
  // (everything for a DM, mentions for a room). The sound is off unless
  // turned on in /profile/notifications (localStorage "kc-sound").
  // ---------------------------------------------------------------------------
  function levelOf(conv) {
    var el = sidebarEntryOf(conv);
    var l = el && el.getAttribute("data-level");
    if (l) return l;
    return conv.indexOf("dm:") === 0 ? "everything" : "mentions";
  }

  function sidebarEntryOf(conv) {
    var links = document.querySelectorAll("#sidebar-lists a[data-conversation]");
    for (var i = 0; i < links.length; i++) {
      if (links[i].getAttribute("data-conversation") === conv) return links[i];
    }
    return null;
  }

  function placeOf(conv) {
    var el = sidebarEntryOf(conv);
    var title = el && el.getAttribute("title");
    if (title) return title;
    return conv.indexOf("dm:") === 0 ? "a direct message" : "#" + conv;
  }

  function conversationPath(conv) {
    return conv.indexOf("dm:") === 0 ? "/dm/" + conv.slice(3) : "/rooms/" + encodeURIComponent(conv);
  }

  function notify(conv, data) {
    var n;
    try { n = JSON.parse(data); } catch (e) { return; }
    if (!n || !n.id) return;
    var level = levelOf(conv);
    if (level === "nothing" || (level === "mentions" && !n.mention)) return;
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    if (!firstNotice(n.id)) return;
    showNotification(conv, n);
  }

  // firstNotice records id among the last 50 notified, and says whether
  // it was not there yet.
  function firstNotice(id) {
    var ids = [];
    try { ids = JSON.parse(localStorage.getItem("kc-notified") || "[]"); } catch (e) {}
    if (ids.indexOf(id) >= 0) return false;
    ids.push(id);
    try { localStorage.setItem("kc-notified", JSON.stringify(ids.slice(-50))); } catch (e) {}
    return true;
  }

  function showNotification(conv, n) {
    var link = conversationPath(conv) + "?at=" + encodeURIComponent(n.id) + "#msg-" + n.id;
    var note = new Notification(notificationTitle(conv, n.name), { body: n.text, tag: n.id });
    note.onclick = function () {
      window.focus();
      location.href = link;
      note.close();
    };
    if (localStorageGet("kc-sound") === "on") beep();
  }

  // notificationTitle says who wrote, and where unless it is a DM with
  // them alone (its title is their name: "Ada in Ada" says nothing).
  function notificationTitle(conv, name) {
    var place = placeOf(conv);
    if (conv.indexOf("dm:") === 0 && (place === name || place === "a direct message")) return name;
    return name + " in " + place;
  }

  function localStorageGet(k) {
    try { return localStorage.getItem(k); } catch (e) { return null; }
  }

  // beep is a short, quiet tone (no sound file to fetch).
  function beep() {
    var Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) return;
    try {
      var ctx = new Ctx(), osc = ctx.createOscillator(), gain = ctx.createGain();
      osc.frequency.value = 880;
      gain.gain.value = 0.05;
      osc.connect(gain);
      gain.connect(ctx.destination);
      osc.start();
      osc.stop(ctx.currentTime + 0.15);
    } catch (e) {}
  }

  // The settings page (/profile/notifications): the permission's state,
  // asking for it (only from the button, a user gesture), a test
  // notification, and the sound.
  function notificationSettings() {
    var box = document.getElementById("notification-settings");
    if (!box) return;
    var state = document.getElementById("notification-state");
    var ask = document.getElementById("notification-ask");
    var test = document.getElementById("notification-test");
    var sound = document.getElementById("notification-sound");
    var supported = "Notification" in window;
    function show() {
      var p = supported ? Notification.permission : "unsupported";
      state.textContent = { granted: "On: this browser shows notifications.", denied: "Blocked: allow notifications for this site in the browser's settings.",
        "default": "Off: not asked yet.", unsupported: "This browser cannot show notifications." }[p] || p;
      box.setAttribute("data-permission", p);
      ask.hidden = p !== "default";
      test.disabled = p !== "granted";
    }
    box.hidden = false;
    ask.addEventListener("click", function () {
      Notification.requestPermission().then(show, show);
    });
    test.addEventListener("click", function () {
      if (Notification.permission !== "granted") return;
      new Notification("KillrChat", { body: "This is a test notification.", tag: "killrchat-test" });
      if (sound.checked) beep();
    });
    sound.checked = localStorageGet("kc-sound") === "on";
    sound.addEventListener("change", function () {
      try { localStorage.setItem("kc-sound", sound.checked ? "on" : "off"); } catch (e) {}
    });
    show();
  }

  function messageIDOf(html) {
    var m = /id="msg-([0-9a-f-]{36})"/.exec(html || "");
    return m ? m[1] : "";
  }

  function useWorker(url) {
    var worker = new SharedWorker(url, { name: "killrchat-live" });
    worker.port.onmessage = function (e) { onLive(e.data); };
    worker.port.start();
    livePost = function (msg) { worker.port.postMessage(msg); };
    return "worker";
  }

  function useLeader() {
    var chan = new BroadcastChannel("killrchat-live");
    var manager = null;
    livePost = function (msg) {
      if (manager) manager.receive(msg);
      else chan.postMessage({ to: "leader", msg: msg });
    };
    chan.onmessage = function (e) {
      var d = e.data || {};
      if (d.to === "leader") {
        if (manager) manager.receive(d.msg);
      } else if (d.from === "leader") {
        onLive(d.msg);
      }
    };
    var abort = null, release = null;
    function lead() {
      abort = new AbortController();
      navigator.locks.request("killrchat-live", { signal: abort.signal }, function () {
        // This tab leads until it goes: the lock is held as long as the
        // promise is pending.
        abort = null;
        manager = new window.KillrLive.Manager(function (msg) {
          onLive(msg);
          chan.postMessage({ from: "leader", msg: msg });
        });
        window.KillrLive.current = manager;
        document.documentElement.setAttribute("data-live-leader", "");
        if (liveShown) manager.receive(liveShown);
        chan.postMessage({ from: "leader", msg: { t: "hello" } });
        return new Promise(function (resolve) { release = resolve; });
      }).catch(function () {});
    }
    lead();
    // A page kept in the back-forward cache keeps its locks: give the lead
    // (or the place in line) up when the page is hidden, take it again if
    // it comes back.
    window.addEventListener("pagehide", function () {
      if (abort) abort.abort();
      if (manager) {
        manager.close();
        manager = null;
        document.documentElement.removeAttribute("data-live-leader");
      }
      if (release) release();
      abort = release = null;
    });
    window.addEventListener("pageshow", function (e) {
      if (e.persisted) lead();
    });
    return "leader";
  }

  function useOwn() {
    var manager = new window.KillrLive.Manager(onLive);
    window.KillrLive.current = manager;
    livePost = function (msg) { manager.receive(msg); };
    return "tab";
  }

  function startLive() {
    if (!document.body || !document.body.getAttribute("data-viewer") || typeof EventSource !== "function") return;
    var url = liveScriptURL(), mode;
    if (typeof window.SharedWorker === "function" && url) {
      mode = useWorker(url);
    } else if (!window.KillrLive) {
      return;
    } else if (navigator.locks && typeof window.BroadcastChannel === "function") {
      mode = useLeader();
    } else {
      mode = useOwn();
    }
    document.documentElement.setAttribute("data-live-mode", mode);
    liveShown = showMessage(mode !== "tab");
    livePost(liveShown);
    window.addEventListener("pagehide", function (e) {
      livePost({ t: "bye", tab: TAB });
      // The browser's last page going into the back-forward cache freezes
      // the SharedWorker, its stream open and its "bye" unread: the
      // server ends that stream (a page that comes back says "show" again,
      // and the Manager, unfrozen, opens a new one).
      if (mode === "worker" && e.persisted && liveTabs <= 1 && liveBrowser && navigator.sendBeacon) {
        var body = new URLSearchParams();
        body.set("b", liveBrowser);
        body.set("_csrf", metaCSRF());
        navigator.sendBeacon("/events/end", body);
      }
    });
    // Back from the back-forward cache, unfrozen, or shown again: the
    // Manager may have dropped this tab meanwhile (it did not answer).
    window.addEventListener("pageshow", function (e) {
      if (e.persisted) livePost(liveShown);
    });
    document.addEventListener("resume", function () {
      livePost(liveShown);
    });
    document.addEventListener("visibilitychange", function () {
      var visible = document.visibilityState === "visible";
      if (liveShown) liveShown.visible = visible; // what a new Manager is told
      livePost({ t: "visible", tab: TAB, visible: visible });
      if (!document.hidden) livePost(liveShown);
    });
  }

  // ---------------------------------------------------------------------------
  // 16. Changes of messages: edits, deletes and reactions (the live
  //     events "live:edit", "live:delete", "live:reaction", see 15), the message menu's
  //     actions, and what is the reader's own.
  //     - edit: HTML whose elements (the text, "(edited)") replace the
  //       elements of the same id.
  //     - delete: the id of the message element to take away. Its id is
  //       remembered, so a copy that arrives late (a replay, another
  //       instance) is dropped too.
  //     - reaction: JSON {message, emoji, login, name, added, change}: one
  //       person's action. Each (message, emoji, person) keeps the action
  //       with the newest change id, as Cassandra does (the rows are written
  //       USING TIMESTAMP the change's time), so the page ends as the store
  //       whatever order the actions arrive in.
  //     A change for a message that is not on the page yet waits for it.
  //     Reaction and delete forms in #messages are sent by fetch (the live
  //     event shows the result); without JavaScript they post and come back.
  // ---------------------------------------------------------------------------
  var deletedMessages = {};
  var waitingChanges = {}; // message element id -> [function (li)]
  var reactionClock = {}; // "message|emoji|login" -> id key of the newest action

  function viewer() {
    return (document.body && document.body.getAttribute("data-viewer")) || "";
  }

  function uuidKey(uuid) {
    return idKey("msg-" + uuid) || "";
  }

  function whenMessage(msgId, apply) {
    var li = document.getElementById("msg-" + msgId);
    if (li) {
      apply(li);
      return;
    }
    (waitingChanges["msg-" + msgId] = waitingChanges["msg-" + msgId] || []).push(apply);
  }

  // messageArrived runs what waited for a message element, or drops it
  // when it was deleted; it returns false when it dropped it.
  function messageArrived(el) {
    if (deletedMessages[el.id]) {
      el.remove();
      return false;
    }
    var waiting = waitingChanges[el.id];
    if (waiting) {
      delete waitingChanges[el.id];
      for (var i = 0; i < waiting.length; i++) waiting[i](el);
    }
    markMine(el);
    return true;
  }

  // markMine marks the reader's own messages and reactions in root (a
  // message rendered once for every stream cannot know its reader), and
  // gives each code block a copy button.
  function markMine(root) {
    if (!root) return;
    var msgs = root.matches && root.matches("li.message") ? [root] : root.querySelectorAll("li.message");
    for (var k = 0; k < msgs.length; k++) addCopyButtons(msgs[k]);
    var me = viewer();
    if (!me) return;
    for (var i = 0; i < msgs.length; i++) {
      if (msgs[i].getAttribute("data-author") === me) msgs[i].classList.add("mine");
      var forms = msgs[i].querySelectorAll(".reactions form.reaction");
      for (var j = 0; j < forms.length; j++) paintReaction(forms[j]);
    }
  }

  // A code block goes in a div.code-block with its Copy button beside it,
  // not inside the <pre>: a wide block scrolls sideways under the button,
  // which stays whole in view (issue 39).
  function addCopyButtons(li) {
    var blocks = li.querySelectorAll(".text pre");
    for (var i = 0; i < blocks.length; i++) {
      if (blocks[i].parentNode.classList.contains("code-block")) continue;
      var wrap = document.createElement("div");
      wrap.className = "code-block";
      var b = document.createElement("button");
      b.type = "button";
      b.className = "copy-code";
      b.textContent = "Copy";
      blocks[i].replaceWith(wrap);
      wrap.append(b, blocks[i]);
    }
  }

  document.addEventListener("click", function (evt) {
    var b = evt.target && evt.target.closest && evt.target.closest("button.copy-code");
    if (!b || !navigator.clipboard) return;
    var code = b.parentNode.querySelector("pre code");
    navigator.clipboard.writeText(code ? code.textContent : "").then(function () {
      b.textContent = "Copied";
      setTimeout(function () {
        b.textContent = "Copy";
      }, 2000);
    });
  });

  // editOf is the id key of the edit a message's text shows ("" if never
  // edited): of two edits, the later one stays, whatever order they came in.
  function editOf(el) {
    var body = el && (el.hasAttribute("data-edit") ? el : el.closest && el.closest("li.message") && el.closest("li.message").querySelector(".text"));
    return body ? uuidKey(body.getAttribute("data-edit") || "") : "";
  }

  function onEdit(evt) {
    var tpl = document.createElement("template");
    tpl.innerHTML = (evt.detail && evt.detail.data) || "";
    var parts = Array.prototype.slice.call(tpl.content.children);
    for (var i = parts.length - 1; i >= 0; i--) {
      var fresh = parts[i];
      var msgId = fresh.id.replace(/^(body|edited)-/, "");
      if (!fresh.id || msgId === fresh.id) continue;
      (function (fresh) {
        whenMessage(msgId, function (li) {
          var old = li.querySelector("#" + CSS.escape(fresh.id));
          if (!old || editOf(old) > editOf(parts[0] || fresh)) return; // a newer edit is shown
          old.replaceWith(fresh);
          highlightMyMentions(li);
          addCopyButtons(li);
        });
      })(fresh);
    }
  }

  function onDelete(evt) {
    var id = ((evt.detail && evt.detail.data) || "").trim();
    if (!/^msg-[0-9a-f-]{36}$/.test(id)) return;
    deletedMessages[id] = true;
    delete waitingChanges[id];
    var li = document.getElementById(id);
    if (li) li.remove();
    var list = messagesList();
    if (list) regroup(list);
  }

  function onReaction(evt) {
    var r;
    try {
      r = JSON.parse((evt.detail && evt.detail.data) || "");
    } catch (e) {
      return;
    }
    if (!r || !r.message || !r.emoji || !r.login || !r.change) return;
    whenMessage(r.message, function (li) {
      applyReaction(li, r);
    });
  }

  function reactionGroup(block, emoji) {
    var forms = block.querySelectorAll("form.reaction");
    for (var i = 0; i < forms.length; i++) {
      if (forms[i].getAttribute("data-emoji") === emoji) return forms[i];
    }
    return null;
  }

  function reactionEntry(form, login) {
    var entries = form.querySelectorAll(".reactors data");
    for (var i = 0; i < entries.length; i++) {
      if (entries[i].value === login) return entries[i];
    }
    return null;
  }

  function newReactionGroup(li, block, emoji) {
    var picker = li.querySelector("form.react-picker");
    if (!picker || block.querySelectorAll("form.reaction").length >= MAX_REACTIONS) return null;
    var form = document.createElement("form");
    form.method = "post";
    form.action = picker.getAttribute("action");
    form.className = "reaction";
    form.setAttribute("data-emoji", emoji);
    form.innerHTML = '<input type="hidden" name="emoji"><input type="hidden" name="add" value="1">' +
      '<button type="submit" class="reaction-btn" aria-pressed="false"><span class="emoji"></span> <span class="count">0</span></button>' +
      '<span class="reactors" hidden></span>';
    form.querySelector('input[name="emoji"]').value = emoji;
    form.querySelector(".emoji").textContent = emoji;
    block.appendChild(form);
    return form;
  }

  var MAX_REACTIONS = 20;

  function applyReaction(li, r) {
    var block = li.querySelector(".reactions");
    if (!block) return;
    var key = r.message + "|" + r.emoji + "|" + r.login;
    var at = uuidKey(r.change);
    var form = reactionGroup(block, r.emoji);
    var entry = form && reactionEntry(form, r.login);
    var seen = reactionClock[key] || (entry ? uuidKey(entry.getAttribute("data-change")) : "");
    if (seen && seen >= at) return; // a newer action of this person is shown
    reactionClock[key] = at;
    if (r.added) {
      form = form || newReactionGroup(li, block, r.emoji);
      if (!form) return;
      if (!entry) {
        entry = document.createElement("data");
        entry.value = r.login;
        form.querySelector(".reactors").appendChild(entry);
      }
      entry.textContent = r.name;
      entry.setAttribute("data-change", r.change);
    } else if (entry) {
      entry.remove();
    }
    if (form) paintReaction(form);
  }

  // paintReaction shows a group as its entries say: the count, who in the
  // title, and whether it is the reader's own (then its button takes it
  // back). A group with nobody left goes.
  function paintReaction(form) {
    var entries = form.querySelectorAll(".reactors data");
    if (!entries.length) {
      form.remove();
      return;
    }
    var me = viewer(), mine = false, names = [];
    for (var i = 0; i < entries.length; i++) {
      names.push(entries[i].textContent);
      if (entries[i].value === me) mine = true;
    }
    var count = form.querySelector(".count"), button = form.querySelector("button");
    if (count) count.textContent = String(entries.length);
    if (button) {
      button.title = names.join(", ");
      button.setAttribute("aria-pressed", mine ? "true" : "false");
    }
    form.classList.toggle("mine", mine);
    var add = form.querySelector('input[name="add"]');
    if (add) add.value = mine ? "0" : "1";
  }

  // ---------------------------------------------------------------------------
  // Typing (issue 19): while the composer changes, the page says so at
  // most every TYPING_EVERY_MS (POST <conversation>/typing); the others'
  // pages show who is typing (#typing) until TYPING_SHOWN_MS after the
  // last word of it, or until that person's message arrives. Nothing is
  // stored.
  // ---------------------------------------------------------------------------
  var TYPING_EVERY_MS = 3000, TYPING_SHOWN_MS = 5000;
  var typingSent = 0;
  var typists = {}; // login -> {name, timer}

  document.addEventListener("input", function (evt) {
    if (!evt.target || evt.target.id !== "content" || !evt.target.value.trim()) return;
    var url = conversationURL();
    if (!url || Date.now() - typingSent < TYPING_EVERY_MS) return;
    typingSent = Date.now();
    fetch(url + "/typing", {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRF-Token": metaCSRF(), "HX-Request": "true" }
    }).catch(function () {});
  });

  function showTypists() {
    var el = document.getElementById("typing");
    if (!el) return;
    var names = Object.keys(typists).sort().map(function (l) { return typists[l].name; });
    if (names.length === 0) el.textContent = "";
    else if (names.length === 1) el.textContent = names[0] + " is typing…";
    else if (names.length === 2) el.textContent = names[0] + " and " + names[1] + " are typing…";
    else el.textContent = "Several people are typing…";
  }

  function stopTyping(login) {
    var t = typists[login];
    if (!t) return;
    clearTimeout(t.timer);
    delete typists[login];
    showTypists();
  }

  document.addEventListener("live:typing", function (evt) {
    var who;
    try { who = JSON.parse(evt.detail.data); } catch (e) { return; }
    if (!who || !who.login || who.login === document.body.getAttribute("data-viewer")) return;
    stopTyping(who.login);
    typists[who.login] = { name: who.name || who.login, timer: setTimeout(function () { stopTyping(who.login); }, TYPING_SHOWN_MS) };
    showTypists();
  });

  document.addEventListener("live:message", function (evt) {
    var el = evt.detail && evt.detail.id && document.getElementById("msg-" + evt.detail.id);
    if (el) stopTyping(el.getAttribute("data-author"));
  });

  // ---------------------------------------------------------------------------
  // Presence (issue 19): the dots beside people ([data-presence] = a
  // login) are asked about in one GET /presence at load, when the page
  // comes back into view, when the page gets new ones (a hover card, a
  // participants list), and every PRESENCE_EVERY_MS while it is in view.
  // The server answers from memory.
  // ---------------------------------------------------------------------------
  var PRESENCE_EVERY_MS = 15000;
  var presenceTimer = null;

  function refreshPresence() {
    var dots = document.querySelectorAll("[data-presence]");
    if (dots.length === 0) return;
    var seen = {}, q = [];
    for (var i = 0; i < dots.length && q.length < 200; i++) {
      var l = dots[i].getAttribute("data-presence");
      if (l && !seen[l]) {
        seen[l] = true;
        q.push("l=" + encodeURIComponent(l));
      }
    }
    fetch("/presence?" + q.join("&"), { credentials: "same-origin", headers: { "Accept": "application/json" } }).then(function (resp) {
      return resp.ok ? resp.json() : null;
    }).then(function (body) {
      if (!body || !body.online) return;
      var on = {};
      for (var j = 0; j < body.online.length; j++) on[body.online[j]] = true;
      // Whoever reads this page is online, whether or not their stream
      // has been counted yet.
      on[viewer()] = true;
      var all = document.querySelectorAll("[data-presence]");
      for (var k = 0; k < all.length; k++) {
        var online = !!on[all[k].getAttribute("data-presence")];
        all[k].setAttribute("data-online", online ? "true" : "false");
        all[k].setAttribute("role", "img");
        all[k].setAttribute("aria-label", online ? "online" : "offline");
        all[k].setAttribute("title", online ? "Online" : "Offline");
      }
    }, function () {});
  }

  // The typing line takes its room only where it can be filled (with JS).
  function showTypingLine() {
    var el = document.getElementById("typing");
    if (el) el.hidden = false;
  }

  function startPresence() {
    refreshPresence();
    if (presenceTimer) clearInterval(presenceTimer);
    presenceTimer = setInterval(function () {
      if (document.visibilityState === "visible") refreshPresence();
    }, PRESENCE_EVERY_MS);
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "visible") refreshPresence();
    });
    document.addEventListener("htmx:after:swap", function () {
      if (document.querySelector("[data-presence]:not([data-online])")) refreshPresence();
    });
  }

  document.addEventListener("live:edit", onEdit);
  document.addEventListener("live:delete", onDelete);
  document.addEventListener("live:reaction", onReaction);

  // A message's Delete asks once more (issue 39): the first click turns
  // it into "Yes, delete it", the second deletes (with confirm=yes, which
  // a page without scripts gets from the server's question instead).
  // Closing the menu disarms it.
  document.addEventListener("submit", function (evt) {
    var form = evt.target;
    if (!form || !form.matches || !form.matches("#messages form.delete-message")) return;
    if (form.getAttribute("data-armed") === "yes") return;
    evt.preventDefault();
    evt.stopImmediatePropagation();
    form.setAttribute("data-armed", "yes");
    var yes = document.createElement("input");
    yes.type = "hidden";
    yes.name = "confirm";
    yes.value = "yes";
    form.appendChild(yes);
    var button = form.querySelector("button");
    if (button) {
      button.textContent = "Yes, delete it";
      button.focus();
    }
  }, true);
  document.addEventListener("toggle", function (evt) {
    var d = evt.target;
    if (!d || !d.matches || !d.matches("details.message-menu") || d.open) return;
    var form = d.querySelector("form.delete-message[data-armed]");
    if (!form) return;
    form.removeAttribute("data-armed");
    var yes = form.querySelector('input[name="confirm"]');
    if (yes) yes.remove();
    var button = form.querySelector("button");
    if (button) button.textContent = "Delete";
  }, true);

  // The menu's reaction and delete forms, and the reaction buttons, on a
  // live page: sent without leaving it; the stream brings the change.
  document.addEventListener("submit", function (evt) {
    var form = evt.target;
    if (!form || !form.matches || !document.getElementById("room-stream")) return;
    if (!form.matches("#messages form.reaction, #messages form.react-picker, #messages form.delete-message")) return;
    evt.preventDefault();
    var body = new URLSearchParams(new FormData(form, evt.submitter || undefined));
    closeMenu(form.closest("details"), true);
    fetch(form.getAttribute("action"), {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "X-CSRF-Token": metaCSRF(), "HX-Request": "true" },
    }).then(function (resp) {
      if (!resp.ok) return resp.text().then(showFlashHTML);
    }, function () {
      showFlashHTML("<p>Not sent: the connection failed. Try again.</p>");
    });
  });

  function showFlashHTML(html) {
    var flash = document.getElementById("flash");
    if (!flash) return;
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    var text = (tpl.content.textContent || "").trim() || "That did not work.";
    var p = document.createElement("p");
    p.className = "flash-error";
    p.textContent = text;
    flash.replaceChildren(p);
  }

  // "Copy link" puts the message's permalink on the clipboard; "Reply
  // with quote" puts a quote of it and the link in the composer. Without
  // JavaScript both are plain links (the second opens the page with the
  // quote in the composer).
  document.addEventListener("click", function (evt) {
    var link = evt.target && evt.target.closest && evt.target.closest("li.message a.copy-link, li.message a.quote");
    if (!link) return;
    var li = link.closest("li.message");
    var permalink = new URL(li.querySelector("a.copy-link").getAttribute("href"), window.location.href).href;
    if (link.classList.contains("copy-link")) {
      if (!navigator.clipboard) return; // the link still opens the message
      evt.preventDefault();
      navigator.clipboard.writeText(permalink).then(function () {
        link.textContent = "Link copied";
        setTimeout(function () {
          link.textContent = "Copy link";
        }, 2000);
      }, function () {
        window.location.href = permalink;
      });
      return;
    }
    var box = composerBox();
    if (!box) return;
    evt.preventDefault();
    closeMenu(link.closest("details"), false);
    quoteInto(box, link);
  });

  // quoteInto puts the quote of a.quote's message in the composer: its
  // stored Markdown, as the server quotes it (GET .../messages/<id>/quote),
  // so lists, code and quotes stay as written.
  function quoteInto(box, link) {
    var url = new URL(link.getAttribute("href"), window.location.href);
    var id = url.searchParams.get("quote") || "";
    fetch(url.pathname + "/messages/" + encodeURIComponent(id) + "/quote", {
      credentials: "same-origin", headers: { "HX-Request": "true" }
    }).then(function (resp) {
      if (!resp.ok) throw new Error("quote: " + resp.status);
      return resp.text();
    }).then(function (quote) {
      box.value = quote + box.value;
      box.focus();
      box.setSelectionRange(box.value.length, box.value.length);
      grow(box);
    }, function () {
      window.location.href = url.href; // the page with the quote in the composer
    });
  }

  // ---------------------------------------------------------------------------
  // Menus (issue 39): a room's ⋯, a message's ⋯ and the phone's Menu are
  // <details>. One is open at a time; a click outside or Escape closes it
  // and gives the focus back to its button. A message's menu is laid out
  // against the viewport (class "floating"), below its button or above it
  // when there is more room there, so the message list's scroll box never
  // cuts it off.
  // ---------------------------------------------------------------------------
  var MENUS = ["details.room-menu", "details.message-menu", "details.nav-drawer"];
  var OPEN_MENUS = MENUS.map(function (m) { return m + "[open]"; }).join(", ");

  function closeMenu(d, giveFocus) {
    if (!d || !d.open) return;
    d.open = false;
    var button = d.querySelector(":scope > summary");
    if (giveFocus && button) button.focus();
  }

  function placeMessageMenu(d) {
    var menu = d.querySelector(":scope > .menu"), button = d.querySelector(":scope > summary");
    if (!menu || !button) return;
    menu.classList.add("floating");
    var b = button.getBoundingClientRect();
    var h = menu.offsetHeight, w = menu.offsetWidth, vh = window.innerHeight, vw = window.innerWidth;
    var below = vh - b.bottom, above = b.top;
    var top = below >= h + 4 || below >= above ? b.bottom + 2 : b.top - 2 - h;
    menu.style.top = Math.max(4, Math.min(top, vh - h - 4)) + "px";
    menu.style.left = Math.max(4, Math.min(b.right - w, vw - w - 4)) + "px";
  }

  document.addEventListener("toggle", function (evt) {
    var d = evt.target;
    if (!d || !d.matches || !d.matches(MENUS.join(", ")) || !d.open) return;
    document.querySelectorAll(OPEN_MENUS).forEach(function (other) {
      if (other !== d && !other.contains(d)) other.open = false;
    });
    if (d.classList.contains("message-menu")) placeMessageMenu(d);
  }, true);

  document.addEventListener("click", function (evt) {
    var target = evt.target;
    document.querySelectorAll(OPEN_MENUS).forEach(function (d) {
      if (!d.contains(target)) d.open = false;
    });
  });

  // Escape closes the innermost open menu; a page's other uses of Escape
  // see defaultPrevented.
  document.addEventListener("keydown", function (evt) {
    if (evt.key !== "Escape" || evt.defaultPrevented) return;
    var open = document.querySelectorAll(OPEN_MENUS);
    if (!open.length) return;
    evt.preventDefault();
    closeMenu(open[open.length - 1], true);
  });

  function placeOpenMessageMenu() {
    var d = document.querySelector("details.message-menu[open]");
    if (d) placeMessageMenu(d);
  }
  window.addEventListener("scroll", placeOpenMessageMenu, true);
  window.addEventListener("resize", placeOpenMessageMenu);

  // A new invitation link is shown only once (issue 39): its token leaves
  // the address bar and the history at once, and a Copy button puts the
  // whole link on the clipboard.
  function showNewInvite() {
    var link = byId("new-link");
    if (!link) return;
    var url = new URL(window.location.href);
    if (url.searchParams.has("invite")) {
      url.searchParams.delete("invite");
      history.replaceState(history.state, "", url.pathname + url.search + url.hash);
    }
    var copy = link.parentNode.querySelector(".copy-invite");
    if (!copy || !navigator.clipboard) return;
    copy.hidden = false;
    copy.addEventListener("click", function () {
      navigator.clipboard.writeText(link.href).then(function () {
        copy.textContent = "Copied";
      }, function () {
        copy.textContent = "Select the link to copy it";
      });
    });
  }

  // With scripts, the Attach button stands for the browser's file input,
  // and an emoji button opens the picker.
  function enhanceFiles() {
    var emoji = byId("emoji-button");
    if (emoji) emoji.hidden = false;
    var attach = byId("attach"), row = byId("file-row");
    if (!attach || !row) return;
    attach.hidden = false;
    row.hidden = true;
  }

  // ---------------------------------------------------------------------------
  // Tools loaded on first use (issue 39; static/tools.js): a message's Edit
  // edits it in place, and so does ↑ in an empty composer for one's newest
  // message; Ctrl/Cmd+K opens the quick switcher; the composer's emoji
  // button and a message menu's "More reactions" open the emoji picker.
  // Without scripts Edit is the message's page, and the rest is not there.
  // ---------------------------------------------------------------------------
  var TOOLS_QUERY = document.currentScript ? new URL(document.currentScript.src, window.location.href).search : "";
  var toolsWaiting = null;

  function withTools(fn, failed) {
    if (window.KillrTools) {
      fn(window.KillrTools);
      return;
    }
    if (!toolsWaiting) {
      toolsWaiting = [];
      var s = document.createElement("script");
      s.src = "/static/tools.js" + TOOLS_QUERY;
      s.addEventListener("load", function () {
        var w = toolsWaiting;
        toolsWaiting = null;
        w.forEach(function (x) { if (window.KillrTools) x.fn(window.KillrTools); });
      });
      s.addEventListener("error", function () {
        var w = toolsWaiting;
        toolsWaiting = null;
        s.remove();
        w.forEach(function (x) { if (x.failed) x.failed(); });
      });
      document.head.appendChild(s);
    }
    toolsWaiting.push({ fn: fn, failed: failed });
  }

  function editInPlace(li, back) {
    var link = li.querySelector("a.edit-link");
    withTools(function (T) {
      T.edit(li, function () {
        if (back && document.contains(back)) back.focus();
      });
    }, function () {
      if (link) window.location.href = link.getAttribute("href");
    });
  }

  document.addEventListener("click", function (evt) {
    var link = evt.target && evt.target.closest && evt.target.closest("#messages li.message a.edit-link");
    if (!link || evt.ctrlKey || evt.metaKey || evt.shiftKey) return;
    evt.preventDefault();
    var d = link.closest("details");
    closeMenu(d, false);
    editInPlace(link.closest("li.message"), composerBox() || (d && d.querySelector("summary")));
  });

  document.addEventListener("keydown", function (evt) {
    if (evt.key !== "ArrowUp" || evt.defaultPrevented || !evt.target || evt.target.id !== "content") return;
    if (evt.shiftKey || evt.altKey || evt.ctrlKey || evt.metaKey || evt.isComposing || evt.target.value !== "") return;
    var list = messagesList();
    var mine = list ? list.querySelectorAll("li.message.mine:not(.system)") : [];
    var li = mine.length ? mine[mine.length - 1] : null;
    if (!li || !li.querySelector("a.edit-link")) return;
    evt.preventDefault();
    editInPlace(li, evt.target);
  });

  document.addEventListener("keydown", function (evt) {
    if ((evt.key !== "k" && evt.key !== "K") || !(evt.ctrlKey || evt.metaKey) || evt.altKey || evt.shiftKey) return;
    if (!viewer()) return;
    evt.preventDefault();
    withTools(function (T) { T.switcher(); });
  });

  // insertAtCaret puts text where the caret is in box.
  function insertAtCaret(box, text) {
    var start = box.selectionStart, end = box.selectionEnd;
    box.setRangeText(text, start, end, "end");
    box.dispatchEvent(new Event("input", { bubbles: true }));
  }

  document.addEventListener("click", function (evt) {
    var t = evt.target && evt.target.closest && evt.target.closest("#emoji-button, #messages .react-picker button.more-emoji");
    if (!t) return;
    evt.preventDefault();
    if (t.id === "emoji-button") {
      var box = composerBox();
      withTools(function (T) {
        T.picker({ title: "Insert an emoji", back: box, onPick: function (e) { insertAtCaret(box, e); } });
      });
      return;
    }
    var form = t.closest("form.react-picker"), d = t.closest("details");
    var summary = d && d.querySelector("summary");
    closeMenu(d, false);
    withTools(function (T) {
      T.picker({ title: "React with an emoji", back: summary, onPick: function (e) {
        var b = document.createElement("button");
        b.type = "submit";
        b.name = "emoji";
        b.value = e;
        b.hidden = true;
        form.appendChild(b);
        form.requestSubmit(b);
        b.remove();
      } });
    });
  });

  // whoReacted lists, at the top of a message's open menu, who reacted
  // with what: a touch screen has no hover to show the buttons' titles
  // (issue 39).
  function whoReacted(d) {
    var li = d.closest("li.message"), menu = d.querySelector(":scope > .menu");
    if (!li || !menu) return;
    var old = menu.querySelector(".who-reacted");
    if (old) old.remove();
    var forms = li.querySelectorAll(".reactions form.reaction");
    if (!forms.length) return;
    var list = document.createElement("ul");
    list.className = "who-reacted";
    list.setAttribute("aria-label", "Who reacted");
    for (var i = 0; i < forms.length; i++) {
      var names = Array.prototype.map.call(forms[i].querySelectorAll(".reactors data"), function (x) { return x.textContent; });
      if (!names.length) continue;
      var item = document.createElement("li");
      var emoji = document.createElement("span");
      emoji.className = "emoji";
      emoji.textContent = forms[i].getAttribute("data-emoji");
      item.append(emoji, " " + names.join(", "));
      list.appendChild(item);
    }
    if (list.children.length) menu.insertBefore(list, menu.firstChild);
  }

  // A message menu's reactions end with "More reactions", which opens the
  // picker (added here: it needs scripts).
  document.addEventListener("toggle", function (evt) {
    var d = evt.target;
    if (!d || !d.matches || !d.matches("details.message-menu") || !d.open) return;
    whoReacted(d);
    var form = d.querySelector("form.react-picker");
    if (!form || form.querySelector("button.more-emoji")) {
      placeMessageMenu(d);
      return;
    }
    var more = document.createElement("button");
    more.type = "button";
    more.className = "more-emoji";
    more.setAttribute("aria-label", "More reactions");
    more.setAttribute("aria-haspopup", "dialog");
    more.textContent = "+";
    form.appendChild(more);
    placeMessageMenu(d);
  }, true);

  function onReady() {
    startLive();
    localTimes(document);
    watchMessages();
    enhanceFiles();
    showNewInvite();
    checkDeletedNotice();
    highlightMyMentions(document);
    markMine(document);
    if (!openAtMessage()) toBottom();
    composerOver();
    var box = composerBox();
    if (box && box.value) grow(box);
    focusComposerOnOpen();
    notificationSettings();
    startPresence();
    showTypingLine();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onReady);
  } else {
    onReady();
  }
})();

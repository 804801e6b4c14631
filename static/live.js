// KillrChat's live connection: one per browser, not per tab.
//
// Every tab of a person talks to one Manager, which holds one EventSource
// to GET /events. That personal stream carries the person's own events
// ("unread": another conversation got a message) and the events of every
// conversation some open tab shows; each event names its conversation
// (the first line of its data), and the Manager keeps a resume point per
// conversation: the SSE id of the last message event it got for it, an
// opaque cursor. When the set of conversations changes, the Manager opens
// a new stream with every conversation's resume point (the server
// replaces the old one and replays what each missed), so nothing is lost.
//
// Where the Manager runs:
//   - in a SharedWorker (this very file, started by app.js with
//     new SharedWorker): every tab connects to it through a MessagePort;
//   - otherwise in the one tab that holds the Web Lock "killrchat-live"
//     (the leader), which relays to the other tabs over the
//     BroadcastChannel "killrchat-live"; when the leader's tab closes, its
//     lock passes to another tab, which starts a Manager and asks every
//     tab what it shows, and carries on from the resume points the old
//     leader had broadcast with each event;
//   - otherwise (neither mechanism) in each tab, with a stream per tab.
//
// Tabs say (messages to the Manager):
//   {t: "show", tab, conv, cursor, browser}
//                                   the tab shows conv (or none: conv ""),
//                                   and its page holds conv up to cursor;
//                                   browser is the browser's key
//   {t: "bye", tab}                 the tab goes away
//   {t: "pong", tab}                an answer to "ping"
//   {t: "visible", tab, visible}    the tab came into view, or left it
// The Manager says (to every tab):
//   {t: "event", kind, conv, id, data, notifier}
//                                   an event of the stream (id: the
//                                   resume point after it, for a message;
//                                   notifier: for an "unread" while no tab
//                                   is in view, the one tab that may show
//                                   a notification of it)
//   {t: "status", up, refused, carried, tabs, browser}
//                                   the stream is up, or down (refused: it
//                                   never opened), the conversations it
//                                   carries, how many tabs it serves, and
//                                   the browser's key
//   {t: "ping"}                     tabs that do not answer twice are gone
//
// CSP-safe: no eval, no inline script. Plain ES5 but BigInt, which every
// browser with EventSource and SharedWorker or Web Locks has.
(function (root) {
  "use strict";

  var KINDS = ["message", "participants", "unread", "room-deleted", "stream-end", "reload",
    "edit", "delete", "reaction", "typing", "presence"];
  // How often tabs are asked whether they are there; one that missed two
  // asks is gone. A page that goes into the back-forward cache cannot
  // always say "bye" (its message waits, frozen with it), and a frozen or
  // crashed tab never does: within 4 to 6 s its conversation is dropped,
  // and with no tab left, the stream. A tab that wakes up says again what
  // it shows, from its own last point.
  var PING_MS = 2000;
  var CHANGE_DELAY_MS = 30;  // changes of the set within this go in one reconnect
  var RETRY_MIN_MS = 250, RETRY_MAX_MS = 60000;

  function randomKey() {
    var a = new Uint8Array(12);
    root.crypto.getRandomValues(a);
    var s = "";
    for (var i = 0; i < a.length; i++) s += ("0" + a[i].toString(16)).slice(-2);
    return s;
  }

  // stamp is a timeuuid's 60-bit time (BigInt), or null for "" (from now).
  function stamp(id) {
    var p = /^([0-9a-f]{8})-([0-9a-f]{4})-1([0-9a-f]{3})-/i.exec(id || "");
    return p ? BigInt("0x" + p[3] + p[2] + p[1]) : null;
  }

  // earlier is the earlier of two resume points; "" (from now) is the latest.
  function earlier(a, b) {
    var sa = stamp(a), sb = stamp(b);
    if (sa === null) return b || "";
    if (sb === null) return a;
    return sb < sa ? b : a;
  }

  // messageID is the id of the message an event's HTML carries (id="msg-…").
  function messageID(html) {
    var m = /id="msg-([0-9a-f-]{36})"/.exec(html || "");
    return m ? m[1] : "";
  }

  // Manager holds the stream. send(msg) reaches every tab.
  function Manager(send) {
    this.send = send;
    this.tabs = {};      // tab id -> {conv, missed, visible}
    this.cursors = {};   // conversation -> resume point ("" = from now)
    this.newest = {};    // conversation -> stamp of the newest message delivered
    this.refused = {};   // conversation -> true: the server refused it
    this.browser = randomKey();
    this.es = null;
    this.carried = "";   // the sorted list the open stream carries
    this.stale = false;  // a resume point moved back: open the stream anew
    this.timer = null;
    this.refusals = 0;   // connects in a row that never opened
    this.up = false;
    var self = this;
    this.pinger = setInterval(function () { self.ping(); }, PING_MS);
  }

  Manager.prototype.wanted = function () {
    var set = {};
    for (var id in this.tabs) {
      var c = this.tabs[id].conv;
      if (c && !this.refused[c]) set[c] = true;
    }
    return Object.keys(set).sort();
  };

  Manager.prototype.receive = function (msg) {
    if (msg && msg.t === "online") {
      this.reconnectNow();
      return;
    }
    if (!msg || !msg.tab) return;
    if (msg.t === "bye") {
      delete this.tabs[msg.tab];
      if (!this.hasTabs()) {
        // The last tab went: close the stream now, not on a timer. A
        // browser may keep the worker alive but frozen once no page is
        // left (Chromium 156 does), and a timer would then never run.
        this.closeStream();
      } else {
        this.later();
      }
      this.status();
      return;
    }
    var tab = this.tabs[msg.tab];
    if (tab) tab.missed = 0; // it is there
    if (msg.t === "pong") return;
    if (msg.t === "visible") {
      if (tab) tab.visible = !!msg.visible;
      return;
    }
    if (msg.t !== "show") return;
    // The browser's key outlives the Manager (tabs keep it in
    // localStorage): a Manager started anew replaces the stream of the
    // one before at once, rather than when its socket is seen closed.
    if (msg.browser && !this.es && !this.named) {
      this.browser = msg.browser;
      this.named = true;
    }
    var conv = msg.conv || "";
    if (tab && tab.conv === conv) {
      tab.visible = !!msg.visible;
      return;
    }
    this.tabs[msg.tab] = { conv: conv, missed: 0, visible: !!msg.visible };
    if (!conv) {
      if (!this.es) this.later();
      else this.status();
      return;
    }
    delete this.refused[conv];
    var cursor = msg.cursor || "", shared = false;
    for (var id in this.tabs) {
      if (id !== msg.tab && this.tabs[id].conv === conv) shared = true;
    }
    if (!shared || !(conv in this.cursors)) {
      // No other tab shows conv: the point is this tab's own.
      if (conv in this.cursors && this.cursors[conv] !== cursor) this.stale = true;
      this.cursors[conv] = cursor;
      delete this.newest[conv];
    } else {
      // The page holds conv up to cursor; what the stream delivered after
      // that before the tab came is replayed to it (the other tabs drop
      // what they have by id).
      var newest = this.newest[conv], at = stamp(cursor);
      var back = earlier(this.cursors[conv], cursor);
      if (newest !== undefined && (at === null || newest > at)) {
        this.cursors[conv] = back;
        this.stale = true; // reconnect even if the set is the same
      } else if (newest === undefined && back !== this.cursors[conv]) {
        this.cursors[conv] = back; // nothing came yet: start at the earlier
        this.stale = true;
      }
    }
    this.later();
    this.status();
  };

  Manager.prototype.ping = function () {
    var gone = false;
    for (var id in this.tabs) {
      if (++this.tabs[id].missed > 2) { // asked twice before this, no answer
        delete this.tabs[id];
        gone = true;
      }
    }
    this.send({ t: "ping" });
    if (gone) this.later();
  };

  // later reconnects soon if what the stream should carry changed.
  Manager.prototype.later = function () {
    var self = this;
    if (this.timer) return;
    this.timer = setTimeout(function () {
      self.timer = null;
      if (!self.hasTabs()) {
        // No tab left (the last one went, or into the back-forward cache,
        // which keeps the worker): no stream either.
        self.closeStream();
        return;
      }
      var want = self.wanted().join(" ");
      if (!self.es || self.stale || want !== self.carried) self.connect();
    }, CHANGE_DELAY_MS);
  };

  Manager.prototype.closeStream = function () {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.es) this.es.close();
    this.es = null;
    this.up = false;
  };

  Manager.prototype.hasTabs = function () {
    for (var id in this.tabs) return true;
    return false;
  };

  Manager.prototype.connect = function () {
    var self = this;
    if (this.es) this.es.close();
    var want = this.wanted();
    this.carried = want.join(" ");
    this.stale = false;
    // A conversation no tab shows any more is forgotten: the next tab to
    // show it brings its own resume point.
    for (var c in this.cursors) {
      if (want.indexOf(c) < 0) {
        delete this.cursors[c];
        delete this.newest[c];
      }
    }
    var q = ["b=" + this.browser];
    for (var i = 0; i < want.length; i++) {
      q.push("c=" + encodeURIComponent(want[i] + "@" + (this.cursors[want[i]] || "")));
    }
    var es = new EventSource("/events?" + q.join("&"));
    this.es = es;
    var opened = false;
    es.onopen = function () {
      if (self.es !== es) return;
      opened = true;
      self.refusals = 0;
      self.setUp(true);
    };
    es.onerror = function () {
      if (self.es !== es) return;
      // EventSource would reconnect by itself, but to the same URL: the
      // resume points in it are old. Reconnect with the current ones: at
      // once after a stream that was up, and after a refusal (429 over the
      // caps, 503 busy: EventSource does not say which, nor Retry-After)
      // after a delay that doubles from 1 s to 60 s, with some jitter.
      es.close();
      self.es = null;
      self.up = false;
      var delay = RETRY_MIN_MS;
      if (!opened) {
        delay = Math.min(RETRY_MIN_MS * 4 * Math.pow(2, self.refusals), RETRY_MAX_MS) * (0.85 + Math.random() * 0.3);
        self.refusals++;
      }
      self.status();
      setTimeout(function () { if (!self.es && self.hasTabs()) self.connect(); }, delay);
    };
    KINDS.forEach(function (kind) {
      es.addEventListener(kind, function (e) {
        if (self.es === es) self.event(kind, e);
      });
    });
  };

  // reconnectNow ends a wait before a reconnect (the network is back).
  Manager.prototype.reconnectNow = function () {
    if (!this.es && this.hasTabs()) {
      this.refusals = 0;
      this.connect();
    }
  };

  Manager.prototype.setUp = function (up) {
    this.up = up;
    this.status();
  };

  // status tells the tabs whether the stream is up, and what it carries.
  Manager.prototype.status = function () {
    this.send({ t: "status", up: this.up && !!this.es, refused: this.refusals > 0,
      carried: this.carried ? this.carried.split(" ") : [], tabs: Object.keys(this.tabs).length,
      browser: this.browser });
  };

  Manager.prototype.event = function (kind, e) {
    var data = String(e.data), nl = data.indexOf("\n");
    var conv = nl < 0 ? data : data.slice(0, nl);
    var payload = nl < 0 ? "" : data.slice(nl + 1);
    var id = "";
    if (kind === "message" && conv) {
      id = e.lastEventId || "";
      if (id) this.cursors[conv] = id;
      var s = stamp(messageID(payload));
      if (s !== null && (this.newest[conv] === undefined || s > this.newest[conv])) this.newest[conv] = s;
    } else if (kind === "stream-end" && !conv) {
      // Left a room, logged out, or lost the session: the stream ends.
      // Open it again: a conversation no longer allowed is refused on it.
      // An end that says where to go (the account was closed, its
      // sessions ended) is passed to the tabs, which go there; the
      // stream stays closed until a tab shows a page again.
      this.es.close();
      this.es = null;
      this.setUp(false);
      if (payload) {
        this.send({ t: "event", kind: kind, conv: "", id: "", data: payload, notifier: "" });
        return;
      }
      var self = this;
      setTimeout(function () { if (!self.es && self.hasTabs()) self.connect(); }, 1000);
      return;
    } else if (kind === "reload" && conv) {
      this.cursors[conv] = ""; // its pages load anew, with their own point
    } else if ((kind === "room-deleted" || kind === "stream-end") && conv) {
      this.refused[conv] = true;
      delete this.cursors[conv];
    }
    this.send({ t: "event", kind: kind, conv: conv, id: id, data: payload,
      notifier: kind === "unread" && payload ? this.notifier() : "" });
  };

  // notifier is the tab that may show a notification: none while a tab is
  // in view (someone is looking), else the first tab, so a message makes
  // one notification however many tabs hear it.
  Manager.prototype.notifier = function () {
    var first = "";
    for (var id in this.tabs) {
      if (this.tabs[id].visible) return "";
      if (!first) first = id;
    }
    return first;
  };

  Manager.prototype.close = function () {
    clearInterval(this.pinger);
    if (this.es) this.es.close();
    this.es = null;
  };

  var api = { Manager: Manager, stamp: stamp, earlier: earlier, messageID: messageID };

  // In a SharedWorker: one Manager for every tab that connects.
  if (typeof root.SharedWorkerGlobalScope === "function" && root instanceof root.SharedWorkerGlobalScope) {
    var ports = [];
    var manager = new Manager(function (msg) {
      for (var i = 0; i < ports.length; i++) ports[i].postMessage(msg);
    });
    root.addEventListener("connect", function (evt) {
      var port = evt.ports[0];
      ports.push(port);
      port.onmessage = function (m) {
        if (m.data && m.data.t === "bye") {
          var i = ports.indexOf(port);
          if (i >= 0) ports.splice(i, 1);
        }
        manager.receive(m.data);
      };
      port.start();
    });
    root.addEventListener("online", function () { manager.reconnectNow(); });
    return;
  }
  root.KillrLive = api;
})(self);

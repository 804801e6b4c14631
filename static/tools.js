// KillrChat's tools that a page needs only once someone asks for them
// (issue 39): editing a message in place, the quick switcher (Ctrl/Cmd+K)
// and the emoji picker. app.js loads this file, and tools.css, on first
// use, so a cold room page does not carry them; the picker loads its data
// (static/emoji.txt) when it first opens. Nothing here is fetched from
// outside the app.
//
// It defines window.KillrTools = {edit, switcher, picker}.
(function () {
  "use strict";

  var base = (function () {
    var s = document.currentScript;
    return s ? new URL(s.src, window.location.href).search : "";
  })();

  var styled = null; // a promise: tools.css is loaded

  function withStyles() {
    if (styled) return styled;
    styled = new Promise(function (resolve) {
      var link = document.createElement("link");
      link.rel = "stylesheet";
      link.href = "/static/tools.css" + base;
      link.addEventListener("load", resolve);
      link.addEventListener("error", resolve);
      document.head.appendChild(link);
    });
    return styled;
  }

  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") || "" : "";
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) {
      if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    }
    if (text) e.textContent = text;
    return e;
  }

  // errorOf is the sentence of an error page or fragment.
  function errorOf(html, fallback) {
    var tpl = document.createElement("template");
    tpl.innerHTML = html || "";
    var field = tpl.content.querySelector(".field-error, .error, p");
    var t = ((field || tpl.content).textContent || "").trim().replace(/\s+/g, " ");
    return t || fallback;
  }

  // ---------------------------------------------------------------------------
  // Edit in place: the message's text turns into a text box where it
  // stands, holding its stored Markdown. Enter or Save sends it (Shift+Enter
  // is a new line); Escape or Cancel puts the text back. The live stream
  // brings the edit to every page, this one included.
  // ---------------------------------------------------------------------------
  function edit(li, done) {
    var link = li && li.querySelector("a.edit-link");
    if (!link) return;
    var open = li.querySelector("form.edit-in-place");
    if (open) {
      open.querySelector("textarea").focus();
      return;
    }
    var url = link.getAttribute("href");
    var body = li.querySelector('[id^="body-"]');
    Promise.all([withStyles(), fetch(url + "/source", { credentials: "same-origin", headers: { "HX-Request": "true" } })])
      .then(function (r) {
        if (!r[1].ok) throw new Error("source: " + r[1].status);
        return r[1].text();
      })
      .then(function (source) {
        showEditor(li, body, url, source, done);
      }, function () {
        window.location.href = url; // the page that edits without scripts
      });
  }

  // The editor has no maxlength (issue 39: it cut a long paste silently):
  // the server refuses a text over the limit, which stays to be shortened.
  function showEditor(li, body, url, source, done) {
    var n = li.id.replace(/^msg-/, "");
    var form = el("form", { "class": "edit-in-place", method: "post", action: url + "/edit", "data-popup": "" });
    var label = el("label", { "for": "edit-" + n, "class": "sr-only" }, "Edit your message");
    var box = el("textarea", { id: "edit-" + n, name: "content", rows: "3", "aria-describedby": "edit-help-" + n });
    box.value = source;
    var help = el("p", { id: "edit-help-" + n, "class": "edit-help" }, "Enter to save, Shift+Enter for a new line, Escape to cancel");
    var err = el("p", { "class": "edit-error", role: "alert" });
    var save = el("button", { type: "submit", "class": "btn btn-primary" }, "Save");
    var cancel = el("button", { type: "button", "class": "btn edit-cancel" }, "Cancel");
    var row = el("div", { "class": "edit-actions" });
    row.append(save, cancel);
    form.append(label, box, err, row, help);
    if (body) {
      body.classList.add("editing");
      body.after(form);
    } else {
      li.append(form);
    }
    var closed = false;
    function close(saved) {
      if (closed) return;
      closed = true;
      form.remove();
      var current = li.querySelector('[id^="body-"]');
      if (current) current.classList.remove("editing");
      if (done) done(saved);
    }
    function send() {
      var text = box.value;
      if (text === source) {
        close(false);
        return;
      }
      save.disabled = true;
      fetch(url + "/edit", {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-CSRF-Token": csrf(), "HX-Request": "true" },
        body: new URLSearchParams({ content: text }),
      }).then(function (resp) {
        if (resp.ok) {
          close(true);
          return;
        }
        return resp.text().then(function (html) {
          err.textContent = errorOf(html, "Not saved (" + resp.status + ").");
          save.disabled = false;
          box.focus();
        });
      }, function () {
        err.textContent = "Not saved: the connection failed. Try again.";
        save.disabled = false;
      });
    }
    form.addEventListener("submit", function (evt) {
      evt.preventDefault();
      send();
    });
    cancel.addEventListener("click", function () {
      close(false);
    });
    box.addEventListener("keydown", function (evt) {
      if (evt.isComposing || evt.keyCode === 229) return;
      if (evt.key === "Escape") {
        evt.preventDefault();
        evt.stopPropagation();
        close(false);
      } else if (evt.key === "Enter" && !evt.shiftKey && !evt.altKey && !evt.ctrlKey && !evt.metaKey) {
        evt.preventDefault();
        evt.stopPropagation();
        send();
      }
    });
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
    box.style.height = "auto";
    box.style.height = Math.min(box.scrollHeight + 2, 320) + "px";
    form.scrollIntoView({ block: "nearest" });
  }

  // ---------------------------------------------------------------------------
  // The quick switcher: a dialog with a combobox; as one types, GET
  // /switch?q= (JSON) lists rooms, DMs and people; arrows move, Enter goes,
  // Escape closes and gives the focus back.
  // ---------------------------------------------------------------------------
  var sw = null;

  function buildSwitcher() {
    var d = el("dialog", { id: "switcher", "class": "tool-dialog switcher", "aria-labelledby": "switcher-title" });
    var title = el("h2", { id: "switcher-title", "class": "tool-title" }, "Go to");
    var label = el("label", { "for": "switcher-q", "class": "sr-only" }, "Room, conversation or person");
    var input = el("input", {
      id: "switcher-q", type: "text", role: "combobox", autocomplete: "off", spellcheck: "false",
      "aria-autocomplete": "list", "aria-expanded": "false", "aria-controls": "switcher-list",
      placeholder: "Room, conversation or person",
    });
    var list = el("ul", { id: "switcher-list", role: "listbox", "aria-label": "Places" });
    var status = el("p", { id: "switcher-status", "class": "tool-status", role: "status" });
    var hint = el("p", { "class": "tool-hint" }, "↑ ↓ to choose, Enter to go, Escape to close");
    d.append(title, label, input, list, status, hint);
    document.body.appendChild(d);
    var state = { dialog: d, input: input, list: list, status: status, items: [], active: -1, asked: 0, timer: null, back: null };

    function select(i) {
      var opts = list.querySelectorAll("[role=option]");
      if (!opts.length) {
        state.active = -1;
        input.removeAttribute("aria-activedescendant");
        return;
      }
      state.active = (i + opts.length) % opts.length;
      for (var k = 0; k < opts.length; k++) opts[k].setAttribute("aria-selected", k === state.active ? "true" : "false");
      input.setAttribute("aria-activedescendant", opts[state.active].id);
      opts[state.active].scrollIntoView({ block: "nearest" });
    }

    function show(items) {
      state.items = items;
      list.replaceChildren();
      var kinds = { room: "Room", dm: "Direct message", person: "Person" };
      items.forEach(function (it, i) {
        var li = el("li", { id: "switcher-opt-" + i, role: "option", "aria-selected": "false", "class": "switch-" + it.kind });
        li.append(el("span", { "class": "switch-label" }, it.label),
          el("span", { "class": "switch-kind" }, it.kind === "person" ? it.detail : kinds[it.kind] || ""));
        li.addEventListener("click", function () { go(i); });
        list.appendChild(li);
      });
      input.setAttribute("aria-expanded", items.length ? "true" : "false");
      status.textContent = items.length ? items.length + (items.length === 1 ? " place" : " places") : "Nothing found";
      select(0);
    }

    function ask() {
      var q = input.value.trim();
      var n = ++state.asked;
      fetch("/switch?q=" + encodeURIComponent(q), { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (resp) {
          if (!resp.ok) throw new Error("switch: " + resp.status);
          return resp.json();
        })
        .then(function (items) {
          if (n === state.asked) show(items);
        }, function () {
          if (n === state.asked) status.textContent = "Could not search. Try again.";
        });
    }

    function go(i) {
      var it = state.items[i];
      if (it) window.location.href = it.url;
    }

    input.addEventListener("input", function () {
      clearTimeout(state.timer);
      state.timer = setTimeout(ask, 80);
    });
    input.addEventListener("keydown", function (evt) {
      if (evt.key === "ArrowDown" || evt.key === "ArrowUp") {
        evt.preventDefault();
        select(state.active + (evt.key === "ArrowDown" ? 1 : -1));
      } else if (evt.key === "Enter" && !evt.isComposing) {
        evt.preventDefault();
        go(state.active);
      }
    });
    d.addEventListener("cancel", function (evt) {
      evt.preventDefault();
      closeSwitcher();
    });
    d.addEventListener("click", function (evt) {
      if (evt.target === d) closeSwitcher(); // the backdrop
    });
    return state;
  }

  function closeSwitcher() {
    if (!sw || !sw.dialog.open) return;
    sw.dialog.close();
    if (sw.back && document.contains(sw.back)) sw.back.focus();
  }

  function switcher() {
    withStyles().then(function () {
      if (!sw) sw = buildSwitcher();
      if (sw.dialog.open) {
        closeSwitcher();
        return;
      }
      sw.back = document.activeElement;
      sw.input.value = "";
      sw.dialog.showModal();
      sw.input.focus();
      sw.asked++;
      clearTimeout(sw.timer);
      sw.timer = setTimeout(function () { sw.input.dispatchEvent(new Event("input")); }, 0);
    });
  }

  // ---------------------------------------------------------------------------
  // The emoji picker: every emoji of static/emoji.txt by group, with a
  // search over their names. picker({title, onPick}) opens it; a choice
  // (click, Enter or Space) calls onPick(emoji) and closes it; Escape
  // closes it. The focus goes back to where it was.
  // ---------------------------------------------------------------------------
  var emojiData = null; // a promise of [{name, emojis: [{e, n}]}]

  function loadEmoji() {
    if (emojiData) return emojiData;
    emojiData = fetch("/static/emoji.txt" + base, { credentials: "same-origin" }).then(function (resp) {
      if (!resp.ok) throw new Error("emoji: " + resp.status);
      return resp.text();
    }).then(function (text) {
      var groups = [], g = null;
      text.split("\n").forEach(function (line) {
        if (!line || (!g && line.charAt(0) === "#")) return; // the header (the keycap #️⃣ is an emoji)
        if (line.charAt(0) === "=") {
          g = { name: line.slice(1), emojis: [] };
          groups.push(g);
          return;
        }
        var tab = line.indexOf("\t");
        if (g && tab > 0) g.emojis.push({ e: line.slice(0, tab), n: line.slice(tab + 1) });
      });
      return groups;
    });
    emojiData.catch(function () { emojiData = null; });
    return emojiData;
  }

  var pk = null;

  function buildPicker(groups) {
    var d = el("dialog", { id: "emoji-picker", "class": "tool-dialog emoji-picker", "aria-labelledby": "emoji-picker-title" });
    var title = el("h2", { id: "emoji-picker-title", "class": "tool-title" }, "Emoji");
    var label = el("label", { "for": "emoji-search", "class": "sr-only" }, "Search emoji by name");
    var input = el("input", { id: "emoji-search", type: "search", autocomplete: "off", placeholder: "Search emoji", "aria-describedby": "emoji-status" });
    var status = el("p", { id: "emoji-status", "class": "tool-status", role: "status" });
    var grid = el("div", { "class": "emoji-groups" });
    var sections = [];
    groups.forEach(function (g, gi) {
      var sec = el("section", { "class": "emoji-group", "aria-labelledby": "emoji-group-" + gi });
      sec.append(el("h3", { id: "emoji-group-" + gi }, g.name));
      var box = el("div", { "class": "emoji-grid" });
      g.emojis.forEach(function (x) {
        var b = el("button", { type: "button", "class": "emoji-choice", "aria-label": x.n, title: x.n, "data-emoji": x.e, "data-name": x.n }, x.e);
        box.appendChild(b);
      });
      sec.appendChild(box);
      grid.appendChild(sec);
      sections.push(sec);
    });
    d.append(title, label, input, status, grid);
    document.body.appendChild(d);
    var state = { dialog: d, input: input, grid: grid, onPick: null, back: null };

    function filter() {
      var words = input.value.toLowerCase().trim().split(/\s+/).filter(Boolean);
      var shown = 0;
      sections.forEach(function (sec) {
        var any = false;
        var buttons = sec.querySelectorAll("button.emoji-choice");
        for (var i = 0; i < buttons.length; i++) {
          var name = buttons[i].getAttribute("data-name");
          var ok = words.every(function (w) { return name.indexOf(w) >= 0; });
          buttons[i].hidden = !ok;
          if (ok) {
            any = true;
            shown++;
          }
        }
        sec.hidden = !any;
      });
      status.textContent = words.length ? (shown ? shown + " emoji" : "No emoji named like that") : "";
    }

    function visible() {
      return Array.prototype.filter.call(grid.querySelectorAll("button.emoji-choice"), function (b) {
        return !b.hidden && !b.closest("section").hidden;
      });
    }

    input.addEventListener("input", filter);
    input.addEventListener("keydown", function (evt) {
      if (evt.key === "ArrowDown" || (evt.key === "Enter" && !evt.isComposing)) {
        var first = visible()[0];
        if (!first) return;
        evt.preventDefault();
        if (evt.key === "Enter") pick(first.getAttribute("data-emoji"));
        else first.focus();
      }
    });
    grid.addEventListener("click", function (evt) {
      var b = evt.target.closest("button.emoji-choice");
      if (b) pick(b.getAttribute("data-emoji"));
    });
    // Arrows move among the emoji shown: left and right by one, up and
    // down by a row of the grid.
    grid.addEventListener("keydown", function (evt) {
      var b = evt.target.closest && evt.target.closest("button.emoji-choice");
      if (!b) return;
      var step = { ArrowLeft: -1, ArrowRight: 1 }[evt.key];
      var all = visible(), i = all.indexOf(b);
      if (evt.key === "ArrowUp" || evt.key === "ArrowDown") {
        var perRow = Math.max(1, Math.round(b.parentNode.clientWidth / b.offsetWidth));
        step = evt.key === "ArrowUp" ? -perRow : perRow;
      }
      if (!step) return;
      evt.preventDefault();
      var next = all[i + step];
      if (next) next.focus();
      else if (i + step < 0) input.focus();
    });
    d.addEventListener("cancel", function (evt) {
      evt.preventDefault();
      closePicker();
    });
    d.addEventListener("click", function (evt) {
      if (evt.target === d) closePicker();
    });

    function pick(emoji) {
      var fn = state.onPick;
      closePicker();
      if (fn) fn(emoji);
    }
    state.filter = filter;
    return state;
  }

  function closePicker() {
    if (!pk || !pk.dialog.open) return;
    pk.dialog.close();
    if (pk.back && document.contains(pk.back)) pk.back.focus();
  }

  function picker(opts) {
    var back = document.activeElement;
    Promise.all([withStyles(), loadEmoji()]).then(function (r) {
      if (!pk) pk = buildPicker(r[1]);
      pk.back = opts.back || back;
      pk.onPick = opts.onPick;
      document.getElementById("emoji-picker-title").textContent = opts.title || "Emoji";
      pk.input.value = "";
      pk.filter();
      pk.dialog.showModal();
      pk.input.focus();
      pk.grid.scrollTop = 0;
    }, function () {
      if (opts.failed) opts.failed();
    });
  }

  window.KillrTools = { edit: edit, switcher: switcher, picker: picker };
})();

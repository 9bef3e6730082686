/*
 * Fairway live updates: one websocket per page (/ws/events/), subscribed only to the groups
 * the page shows. What the page declares, in HTML:
 *
 *   data-live-groups="cluster pool-2"     groups an element needs (the page subscribes to all)
 *   data-live-src="/live/overview/"       a region re-fetched (debounced) when one of its groups
 *   data-live-types="allocated preempted" sends an event (optionally only of these types)
 *   data-live-rows                        a <tbody> of rows keyed by data-workload-id whose
 *   data-live-row-src="/workloads/rows/"  cells update in place; new workloads are fetched
 *   data-live-feed                        a <tbody> that gets new events prepended
 *   data-live-resync-only                 with data-live-src: re-fetched only after a drop
 *
 * The socket reconnects by itself with backoff; after a drop it resyncs by re-fetching every
 * live region (and the rows container), since events sent while away were missed.
 */
(function () {
  "use strict";

  var socket = null;
  var attempt = 0;
  var everConnected = false;
  var subscribed = new Set();
  var seenEvents = new Set();
  var timers = new WeakMap();
  var dot = null;

  function $all(selector, root) {
    return Array.prototype.slice.call((root || document).querySelectorAll(selector));
  }

  function splitList(value) {
    return (value || "").split(/[\s,]+/).filter(Boolean);
  }

  function wantedGroups() {
    var groups = new Set();
    $all("[data-live-groups]").forEach(function (el) {
      splitList(el.getAttribute("data-live-groups")).forEach(function (g) { groups.add(g); });
    });
    return groups;
  }

  function setState(state, text) {
    dot = dot || document.getElementById("live-status");
    if (!dot) return;
    dot.setAttribute("data-state", state);
    dot.textContent = text;
  }

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  }

  /* Subscribe to groups newly declared on the page, drop ones no longer shown. */
  function syncSubscriptions() {
    var wanted = wantedGroups();
    var add = [], remove = [];
    wanted.forEach(function (g) { if (!subscribed.has(g)) add.push(g); });
    subscribed.forEach(function (g) { if (!wanted.has(g)) remove.push(g); });
    if (!socket || socket.readyState !== WebSocket.OPEN) return;
    if (add.length) send({ action: "subscribe", groups: add });
    if (remove.length) send({ action: "unsubscribe", groups: remove });
    add.forEach(function (g) { subscribed.add(g); });
    remove.forEach(function (g) { subscribed.delete(g); });
  }

  function connect() {
    if (!wantedGroups().size) return;
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + "/ws/events/");
    socket.onopen = function () {
      var resync = everConnected;
      everConnected = true;
      attempt = 0;
      subscribed = new Set();
      setState("live", "Live");
      syncSubscriptions();
      if (resync) refreshAll();
    };
    socket.onmessage = function (message) {
      var data;
      try { data = JSON.parse(message.data); } catch (e) { return; }
      handle(data);
    };
    socket.onclose = function (event) {
      socket = null;
      if (event.code === 4401) {
        setState("off", "Signed out");
        return;
      }
      attempt += 1;
      var delay = Math.min(30000, 1000 * Math.pow(2, attempt - 1)) * (0.6 + Math.random() * 0.4);
      setState("reconnecting", "Reconnecting…");
      setTimeout(connect, delay);
    };
  }

  function handle(data) {
    if (data.type === "subscribed") {
      (data.denied || []).forEach(function (g) { subscribed.delete(g); });
      document.body.setAttribute("data-live-ready", "1");
      return;
    }
    var group = data.group;
    var event = data.event || null;
    if (event && event.id != null) {
      var key = event.id + ":" + group;
      if (seenEvents.has(key)) return;
      seenEvents.add(key);
    }
    var firstSight = true;
    if (event && event.id != null) {
      firstSight = !seenEvents.has("e" + event.id);
      seenEvents.add("e" + event.id);
    }
    $all("[data-live-src]").forEach(function (region) {
      if (region.hasAttribute("data-live-resync-only")) return;
      if (!splitList(region.getAttribute("data-live-groups")).includes(group)) return;
      var types = splitList(region.getAttribute("data-live-types"));
      if (event && types.length && !types.includes(event.type)) return;
      scheduleRefresh(region);
    });
    if (!event || !firstSight) return;
    $all("[data-live-rows]").forEach(function (tbody) { updateRow(tbody, event); });
    $all("[data-live-feed]").forEach(function (tbody) { prependEvent(tbody, event); });
    maybeToast(event);
  }

  /* ---- Regions ---------------------------------------------------------------------- */
  function scheduleRefresh(region) {
    if (timers.get(region)) return;
    timers.set(region, setTimeout(function () {
      timers.delete(region);
      refresh(region);
    }, parseInt(region.getAttribute("data-live-debounce") || "250", 10)));
  }

  function refresh(region) {
    var src = region.getAttribute("data-live-src");
    if (!src) return Promise.resolve();
    return fetch(src, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        if (response.status === 204) return null;
        if (!response.ok) throw new Error(response.status);
        return response.text();
      })
      .then(function (html) {
        if (html === null) return;
        region.innerHTML = html;
        if (window.htmx) window.htmx.process(region);
        region.dispatchEvent(new CustomEvent("live:refreshed", { bubbles: true }));
        syncSubscriptions();
      })
      .catch(function () { /* the next event or reconnect resyncs */ });
  }

  function refreshAll() {
    $all("[data-live-src]").forEach(refresh);
  }

  /* ---- Workload rows, keyed by id ------------------------------------------------------ */
  function statusBadge(status) {
    var span = document.createElement("span");
    span.className = "badge s-" + status;
    span.textContent = status.charAt(0).toUpperCase() + status.slice(1);
    return span;
  }

  function setCell(row, name, value) {
    var cell = row.querySelector('[data-cell="' + name + '"]');
    if (!cell) return;
    if (value instanceof Node) {
      cell.replaceChildren(value);
    } else {
      cell.textContent = value;
    }
  }

  function uniqueNodes(nodes) {
    var seen = [];
    (nodes || []).forEach(function (n) { if (!seen.includes(n)) seen.push(n); });
    return seen.join(", ");
  }

  function updateRow(tbody, event) {
    var state = event.workload;
    if (!state) return;
    var row = tbody.querySelector('tr[data-workload-id="' + state.id + '"]');
    if (!row) {
      if (event.type === "submitted" && tbody.hasAttribute("data-live-row-src")) insertRow(tbody, state.id);
      return;
    }
    row.setAttribute("data-status", state.status);
    setCell(row, "status", statusBadge(state.status));
    var waiting = state.status === "pending" || state.status === "suspended";
    setCell(row, "reason", waiting ? (state.reason || "") : "");
    setCell(row, "position", waiting && state.queue_position != null ? "#" + state.queue_position : "—");
    if (state.priority != null) setCell(row, "priority", String(state.priority));
    var placed = state.status === "running" || state.status === "starting";
    if (placed && state.nodes) {
      setCell(row, "nodes", uniqueNodes(state.nodes) || "—");
    } else if (!placed) {
      setCell(row, "nodes", "—");
    }
    row.classList.remove("flash");
    void row.offsetWidth;
    row.classList.add("flash");
  }

  function insertRow(tbody, id) {
    var src = tbody.getAttribute("data-live-row-src") + id + "/" + location.search;
    fetch(src, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) { return r.status === 200 ? r.text() : ""; })
      .then(function (html) {
        if (!html || tbody.querySelector('tr[data-workload-id="' + id + '"]')) return;
        var holder = document.createElement("tbody");
        holder.innerHTML = html.trim();
        var row = holder.firstElementChild;
        if (!row) return;
        var empty = tbody.querySelector("tr.empty-row");
        if (empty) empty.remove();
        tbody.insertBefore(row, tbody.firstChild);
        row.classList.add("flash");
        if (window.htmx) window.htmx.process(row);
      });
  }

  /* ---- Event feed ------------------------------------------------------------------------ */
  var names = null;
  function lookupNames() {
    if (names) return names;
    var el = document.getElementById("live-names");
    names = el ? JSON.parse(el.textContent) : { projects: {}, pools: {}, types: {} };
    return names;
  }

  function prependEvent(tbody, event) {
    var f = function (attr) { return tbody.getAttribute("data-filter-" + attr) || ""; };
    var types = splitList(f("types"));
    if (types.length && !types.includes(event.type)) return;
    if (f("project") && String(event.project_id) !== f("project")) return;
    if (f("pool") && String(event.pool_id) !== f("pool")) return;
    if (f("workload") && String(event.workload_id) !== f("workload")) return;
    var n = lookupNames();
    var row = document.createElement("tr");
    row.setAttribute("data-event-id", event.id);
    var cells = [];
    var when = document.createElement("td");
    when.className = "nowrap muted";
    when.textContent = new Date(event.at).toLocaleTimeString();
    cells.push(when);
    var type = document.createElement("td");
    var badge = document.createElement("span");
    badge.className = "badge e-" + event.type;
    badge.textContent = (n.types || {})[event.type] || event.type;
    type.appendChild(badge);
    cells.push(type);
    var wl = document.createElement("td");
    if (event.workload) {
      var a = document.createElement("a");
      a.href = "/workloads/" + event.workload.id + "/";
      a.textContent = event.workload.name;
      wl.appendChild(a);
    } else if (event.details && event.details.node) {
      wl.textContent = event.details.node;
    } else {
      wl.textContent = "—";
    }
    cells.push(wl);
    var project = document.createElement("td");
    project.textContent = (n.projects || {})[event.project_id] || "—";
    cells.push(project);
    var pool = document.createElement("td");
    pool.textContent = (n.pools || {})[event.pool_id] || "—";
    cells.push(pool);
    var reason = document.createElement("td");
    reason.className = "reason";
    reason.textContent = event.reason || "";
    cells.push(reason);
    cells.forEach(function (c) { row.appendChild(c); });
    var empty = tbody.querySelector("tr.empty-row");
    if (empty) empty.remove();
    tbody.insertBefore(row, tbody.firstChild);
    row.classList.add("flash");
    var max = parseInt(tbody.getAttribute("data-max") || "200", 10);
    while (tbody.rows.length > max) tbody.deleteRow(tbody.rows.length - 1);
  }

  /* ---- Toasts: preemptions of workloads shown on this page ---------------------------------- */
  function maybeToast(event) {
    if (event.type !== "preempted" || !event.workload) return;
    var shown = document.querySelector('[data-workload-id="' + event.workload.id + '"]');
    if (!shown) return;
    toast(event.workload.name + " was preempted", event.reason || "");
  }

  function toast(title, text) {
    var box = document.getElementById("toasts");
    if (!box) return;
    var el = document.createElement("div");
    el.className = "toast";
    el.setAttribute("role", "status");
    var strong = document.createElement("strong");
    strong.textContent = title;
    el.appendChild(strong);
    el.appendChild(document.createElement("br"));
    el.appendChild(document.createTextNode(text));
    box.appendChild(el);
    setTimeout(function () { el.remove(); }, 8000);
  }

  /* A refused or failed htmx request says so instead of doing nothing. */
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var text = xhr.status === 403 ? "You are not allowed to do that." :
      xhr.status === 404 ? "That no longer exists, or you cannot see it." :
      "The server could not do that (" + xhr.status + "). Try again.";
    toast("Not done", text);
  });
  document.addEventListener("htmx:sendError", function () {
    toast("Not done", "The server cannot be reached. Check your connection.");
  });

  /* Pages that add live regions later (htmx swaps) subscribe to their groups. */
  document.addEventListener("htmx:afterSettle", function () {
    if (socket) syncSubscriptions();
    else if (!everConnected && wantedGroups().size) connect();
  });
  document.addEventListener("DOMContentLoaded", function () {
    if (wantedGroups().size) {
      setState("connecting", "Connecting…");
      connect();
    }
  });
  window.fairwayLive = {
    refreshAll: refreshAll,
    syncSubscriptions: syncSubscriptions,
    connect: function () { if (!socket) connect(); },
    /* Close the socket as a network drop would (it reconnects and resyncs by itself). */
    drop: function () { if (socket) socket.close(4000, "dropped"); },
  };
})();

/*
 * Fairway live updates: one websocket per page (/ws/events/), subscribed only to the groups
 * the page shows. What the page declares, in HTML:
 *
 *   data-live-groups="cluster pool-2"     groups an element needs (the page subscribes to all)
 *   data-live-src="/live/overview/"       a region re-fetched (debounced) when one of its groups
 *   data-live-types="allocated preempted" sends an event (optionally only of these types)
 *   data-live-rows                        a <tbody> of rows keyed by data-workload-id whose
 *   data-live-row-src="/workloads/rows/"  cells update in place; rows of new workloads that
 *                                         pass the page's filters are counted, not inserted:
 *   data-live-new-for="workload-rows"     a (hidden) button that says "N new" and shows them
 *   data-live-feed                        a <tbody> that gets new events prepended
 *   data-live-resync-only                 with data-live-src: re-fetched only on (re)connect
 *   data-live-keep-ticks                  with data-live-src: its ticked checkboxes never hold
 *                                         a refresh and stay ticked (matched by name and value)
 *   data-live-by-id                       with data-live-src: the answer's elements replace the
 *                                         page's elements of the same id, wherever they are
 *                                         (figures inside a table of forms being edited)
 *
 * A pod's output (`log` frames) is handed on as a `live:log` event on document (logs.js).
 *
 * Rules the page can rely on:
 * - Resync on every connection, the first one included: once the server confirms a
 *   subscription, every region of those groups is fetched again, so nothing that happened
 *   between drawing the page and subscribing is missed (a workload that started meanwhile).
 *   A row list is merged by id (rows update in place, new ones are counted), never replaced.
 * - A region that holds focus in a field, or a changed field, is never replaced: its refresh
 *   waits until the user leaves it (or submits), and a note says newer data is waiting.
 * - Reconnect backs off to at most MAX_DELAY_MS; "Retry now" reconnects at once, and while
 *   disconnected the live regions are marked as possibly out of date.
 * - A ping every PING_MS; an unanswered one counts as a lost connection.
 */
(function () {
  "use strict";

  var MAX_DELAY_MS = 5000;
  var PING_MS = 25000;
  var PONG_WAIT_MS = 10000;
  var MAX_NEW = 99;

  var socket = null;
  var attempt = 0;
  var everConnected = false;
  var subscribed = new Set();
  var resyncPending = false; // this connection has not resynced yet
  var seenEvents = new Set();
  var timers = new WeakMap();
  var requestSeq = new WeakMap();
  var newRows = new WeakMap(); // tbody -> Set of workload ids waiting behind "N new"
  var retryTimer = null;
  var retryAt = 0;
  var countdown = null;
  var pingTimer = null;
  var pongTimer = null;
  var lostAt = null;
  var dot = null;

  function $all(selector, root) {
    return Array.prototype.slice.call((root || document).querySelectorAll(selector));
  }

  function splitList(value) {
    return (value || "").split(/[\s,]+/).filter(Boolean);
  }

  function groupsOf(el) {
    return splitList(el.getAttribute("data-live-groups"));
  }

  function wantedGroups() {
    var groups = new Set();
    $all("[data-live-groups]").forEach(function (el) {
      groupsOf(el).forEach(function (g) { groups.add(g); });
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
    if (add.length) {
      document.body.removeAttribute("data-live-ready");
      send({ action: "subscribe", groups: add });
    }
    if (remove.length) send({ action: "unsubscribe", groups: remove });
    add.forEach(function (g) { subscribed.add(g); });
    remove.forEach(function (g) { subscribed.delete(g); });
  }

  /* ---- Connection ------------------------------------------------------------------------ */
  function connect() {
    clearRetry();
    if (socket || !wantedGroups().size) return;
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var ws = new WebSocket(scheme + location.host + "/ws/events/");
    socket = ws;
    ws.onopen = function () {
      everConnected = true;
      attempt = 0;
      subscribed = new Set();
      resyncPending = true;
      setState("live", "Live");
      showStale(false);
      syncSubscriptions();
      startPings();
    };
    ws.onmessage = function (message) {
      clearTimeout(pongTimer);
      var data;
      try { data = JSON.parse(message.data); } catch (e) { return; }
      handle(data);
    };
    ws.onclose = function (event) { lost(ws, event.code); };
  }

  /* The connection `ws` is gone (closed, or silent past a ping): reconnect with backoff. */
  function lost(ws, code) {
    if (socket !== ws) return;
    socket = null;
    ws.onopen = ws.onmessage = ws.onclose = null;
    stopPings();
    if (code === 4401) {
      setState("off", "Signed out");
      showStale(true, "signed-out");
      return;
    }
    attempt += 1;
    var delay = Math.min(MAX_DELAY_MS, 500 * Math.pow(2, attempt - 1)) * (0.7 + Math.random() * 0.3);
    setState("reconnecting", "Reconnecting…");
    scheduleRetry(delay);
  }

  function scheduleRetry(delay) {
    clearRetry();
    retryAt = Date.now() + delay;
    retryTimer = setTimeout(connect, delay);
    showStale(true);
    countdown = setInterval(function () { showStale(true); }, 1000);
  }

  function clearRetry() {
    clearTimeout(retryTimer);
    clearInterval(countdown);
    retryTimer = countdown = null;
  }

  function retryNow() {
    if (socket) return;
    attempt = 0;
    connect();
  }

  function startPings() {
    stopPings();
    pingTimer = setInterval(function () {
      var ws = socket;
      send({ action: "ping" });
      clearTimeout(pongTimer);
      pongTimer = setTimeout(function () {
        if (ws) { try { ws.close(); } catch (e) { /* already closing */ } }
        lost(ws, 1006);
      }, PONG_WAIT_MS);
    }, PING_MS);
  }

  function stopPings() {
    clearInterval(pingTimer);
    clearTimeout(pongTimer);
    pingTimer = pongTimer = null;
  }

  /* While disconnected, say so plainly: a banner with "Retry now", and the live regions
     marked as possibly out of date (body[data-live-stale], styled in console.css). */
  function showStale(stale, why) {
    var banner = document.getElementById("live-banner");
    if (!stale) {
      lostAt = null;
      document.body.removeAttribute("data-live-stale");
      if (banner) banner.hidden = true;
      return;
    }
    if (!everConnected && why !== "signed-out") return; // first connect still under way
    lostAt = lostAt || new Date();
    document.body.setAttribute("data-live-stale", "");
    if (!banner) return;
    var text = banner.querySelector("[data-live-banner-text]");
    var retry = banner.querySelector("[data-live-retry]");
    var since = lostAt.toLocaleTimeString();
    if (why === "signed-out") {
      text.textContent = "You were signed out at " + since + ". What this page shows is no longer updated: sign in again.";
      if (retry) retry.hidden = true;
    } else {
      var seconds = Math.max(0, Math.ceil((retryAt - Date.now()) / 1000));
      text.textContent = "Not connected since " + since + ": what this page shows may be out of date. " +
        (retryTimer ? "Trying again in " + seconds + " s." : "Connecting…");
      if (retry) retry.hidden = false;
    }
    banner.hidden = false;
  }

  /* ---- Messages -------------------------------------------------------------------------- */
  function handle(data) {
    if (data.type === "pong") return;
    if (data.type === "subscribed") {
      (data.denied || []).forEach(function (g) { subscribed.delete(g); });
      var all = resyncPending;
      resyncPending = false;
      resync(all ? null : new Set(data.groups || [])).then(function () {
        document.body.setAttribute("data-live-ready", "1");
      });
      return;
    }
    if (data.type === "log") { // a pod's output: for logs.js, not a reason to refetch regions
      document.dispatchEvent(new CustomEvent("live:log", { detail: data.log }));
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
      if (!groupsOf(region).includes(group)) return;
      var types = splitList(region.getAttribute("data-live-types"));
      if (event && types.length && !types.includes(event.type)) return;
      scheduleRefresh(region);
    });
    if (!event || !firstSight) return;
    $all("[data-live-rows]").forEach(function (tbody) { updateRow(tbody, event); });
    $all("[data-live-feed]").forEach(function (tbody) { prependEvent(tbody, event); });
    maybeToast(event);
  }

  /* Fetch again every region of `groups` (all of them when null): what the server says now. */
  function resync(groups) {
    var jobs = [];
    $all("[data-live-src]").forEach(function (region) {
      if (groups && !groupsOf(region).some(function (g) { return groups.has(g); })) return;
      jobs.push(region.hasAttribute("data-live-rows") ? mergeRows(region) : refresh(region));
    });
    return Promise.all(jobs);
  }

  /* ---- Regions ---------------------------------------------------------------------- */
  function scheduleRefresh(region) {
    if (timers.get(region)) return;
    timers.set(region, setTimeout(function () {
      timers.delete(region);
      refresh(region);
    }, parseInt(region.getAttribute("data-live-debounce") || "250", 10)));
  }

  /* GET a region's source; resolves to its HTML, or null when there is nothing to apply (204,
     an error, or an answer overtaken by a later request for the same region). */
  function fetchRegion(region, src) {
    var seq = (requestSeq.get(region) || 0) + 1;
    requestSeq.set(region, seq);
    return fetch(src, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        if (response.status === 204) return null;
        if (!response.ok) throw new Error(response.status);
        return response.text();
      })
      .then(function (html) { return requestSeq.get(region) === seq ? html : null; })
      .catch(function () { return null; /* the next event or reconnect resyncs */ });
  }

  function refresh(region) {
    var src = region.getAttribute("data-live-src");
    if (!src) return Promise.resolve();
    if (isBusy(region)) {
      hold(region);
      return Promise.resolve();
    }
    return fetchRegion(region, src).then(function (html) {
      if (html === null) return;
      if (region.hasAttribute("data-live-by-id")) {
        replaceById(html);
        applied(region);
        return;
      }
      if (isBusy(region)) { // the user started typing while the answer was on its way
        hold(region);
        return;
      }
      var focusedId = region.contains(document.activeElement) ? document.activeElement.id : "";
      var ticked = tickedIn(region);
      region.innerHTML = html;
      $all("input[type=checkbox]", region).forEach(function (box) {
        if (ticked.has(box.name + "=" + box.value)) box.checked = true;
      });
      release(region);
      if (focusedId) {
        var again = document.getElementById(focusedId);
        if (again && region.contains(again)) again.focus();
      }
      applied(region);
    });
  }

  /* Each element of `html` with an id replaces the page's element of that id, flashed when
     its text changed. Nothing the user edits is inside such elements. */
  function replaceById(html) {
    var holder = document.createElement("template");
    holder.innerHTML = html.trim();
    Array.prototype.slice.call(holder.content.children).forEach(function (fresh) {
      var old = fresh.id ? document.getElementById(fresh.id) : null;
      if (!old) return;
      var changed = old.textContent.replace(/\s+/g, " ") !== fresh.textContent.replace(/\s+/g, " ");
      old.replaceWith(fresh);
      if (changed) flash(fresh);
    });
  }

  function applied(region) {
    if (window.htmx) window.htmx.process(region);
    region.dispatchEvent(new CustomEvent("live:refreshed", { bubbles: true }));
    syncSubscriptions();
  }

  /* ---- Never replace what the user is editing --------------------------------------------- */
  var TYPING = /^(INPUT|TEXTAREA|SELECT)$/;
  var NOT_TYPED = ["button", "submit", "reset", "image", "checkbox", "radio", "hidden"];

  function isTyping(el) {
    if (!el || el === document.body) return false;
    if (el.isContentEditable) return true;
    return TYPING.test(el.tagName) && !(el.tagName === "INPUT" && NOT_TYPED.includes(el.type));
  }

  function isDirty(el) {
    if (el.tagName === "SELECT") {
      return Array.prototype.some.call(el.options, function (o) { return o.selected !== o.defaultSelected; });
    }
    if (el.type === "checkbox" || el.type === "radio") return el.checked !== el.defaultChecked;
    if (el.type === "hidden" || NOT_TYPED.includes(el.type)) return false;
    return el.value !== el.defaultValue;
  }

  /* True while `region` holds focus in a field or a field the user changed. */
  function isBusy(region) {
    var active = document.activeElement;
    if (region.contains(active) && isTyping(active)) return true;
    var keepTicks = region.hasAttribute("data-live-keep-ticks");
    return $all("input, textarea, select", region).some(function (el) {
      return !(keepTicks && el.type === "checkbox") && isDirty(el);
    });
  }

  /* "name=value" of the checkboxes ticked in a data-live-keep-ticks region. */
  function tickedIn(region) {
    var ticked = new Set();
    if (!region.hasAttribute("data-live-keep-ticks")) return ticked;
    $all("input[type=checkbox]", region).forEach(function (box) {
      if (box.checked) ticked.add(box.name + "=" + box.value);
    });
    return ticked;
  }

  function hold(region) {
    region.setAttribute("data-live-waiting", "");
    var note = waitingNote(region);
    if (note) { note.hidden = false; return; }
    note = document.createElement("div");
    note.className = "live-waiting";
    note.setAttribute("role", "status");
    note.setAttribute("data-live-waiting-for", region.id || "");
    note.appendChild(document.createTextNode(
      "Newer data is waiting. It is shown when you leave or save the field you are editing. "));
    var show = document.createElement("button");
    show.type = "button";
    show.className = "btn small";
    show.textContent = "Show it now (drops your change)";
    show.addEventListener("click", function () {
      $all("form", region).forEach(function (f) { f.reset(); });
      if (region.contains(document.activeElement)) document.activeElement.blur();
      refresh(region);
    });
    note.appendChild(show);
    region.parentNode.insertBefore(note, region);
    note.__region = region;
  }

  function waitingNote(region) {
    var prev = region.previousElementSibling;
    return prev && prev.__region === region ? prev : null;
  }

  function release(region) {
    region.removeAttribute("data-live-waiting");
    var note = waitingNote(region);
    if (note) note.remove();
  }

  /* Regions held for the user get their refresh once focus has left them, untouched. */
  function releaseHeld() {
    $all("[data-live-waiting]").forEach(function (region) {
      if (!isBusy(region)) refresh(region);
    });
  }

  ["focusout", "reset", "htmx:afterRequest"].forEach(function (name) {
    document.addEventListener(name, function () { setTimeout(releaseHeld, 0); });
  });

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
      if (!tbody.hasAttribute("data-live-row-src")) return;
      if (event.type === "submitted") countIfShown(tbody, state.id);
      else if (pendingNew(tbody).has(state.id)) recount(tbody, state.id);
      return;
    }
    row.setAttribute("data-status", state.status);
    setCell(row, "status", statusBadge(state.status));
    var waiting = state.status === "pending" || state.status === "suspended";
    setCell(row, "reason", waiting ? (state.reason || "") : "");
    setCell(row, "position", waiting && state.queue_position != null ? "#" + state.queue_position : "—");
    if (state.priority != null) setCell(row, "priority", String(state.priority));
    if (state.preemptions != null) setCell(row, "preemptions", state.preemptions ? String(state.preemptions) : "—");
    var placed = state.status === "running" || state.status === "starting";
    if (placed && state.nodes) {
      setCell(row, "nodes", uniqueNodes(state.nodes) || "—");
    } else if (!placed) {
      setCell(row, "nodes", "—");
    }
    flash(row);
  }

  function flash(row) {
    row.classList.remove("flash");
    void row.offsetWidth;
    row.classList.add("flash");
  }

  /* A new workload: counted behind "N new" if the page's filters show it (the row source
     answers 204 when they hide it), so the rows the reader is looking at stay put. */
  function countIfShown(tbody, id) {
    var ids = pendingNew(tbody);
    if (ids.has(id)) return;
    if (ids.size >= MAX_NEW) { ids.add(id); showNew(tbody); return; }
    var src = tbody.getAttribute("data-live-row-src") + id + "/" + location.search;
    fetch(src, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) { return r.status === 200; })
      .then(function (shown) {
        if (!shown || tbody.querySelector('tr[data-workload-id="' + id + '"]')) return;
        ids.add(id);
        showNew(tbody);
      })
      .catch(function () { /* counted at the next resync */ });
  }

  /* A counted workload changed (it finished, or moved out of the page's filters): it stays
     counted only while the row source still shows it, so "N new" never counts rows that
     "show" would not add. */
  function recount(tbody, id) {
    var src = tbody.getAttribute("data-live-row-src") + id + "/" + location.search;
    fetch(src, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) {
        if (r.status !== 204) return;
        pendingNew(tbody).delete(id);
        showNew(tbody);
      })
      .catch(function () { /* counted again, or not, at the next resync */ });
  }

  function pendingNew(tbody) {
    var ids = newRows.get(tbody);
    if (!ids) { ids = new Set(); newRows.set(tbody, ids); }
    return ids;
  }

  function newButton(tbody) {
    return tbody.id ? document.querySelector('[data-live-new-for="' + tbody.id + '"]') : null;
  }

  function showNew(tbody) {
    var button = newButton(tbody);
    if (!button) return;
    var n = pendingNew(tbody).size;
    if (!n) { button.hidden = true; return; }
    var count = n > MAX_NEW ? MAX_NEW + "+" : String(n);
    var where = button.getAttribute("data-live-new-href") ? " on the first page" : "";
    button.textContent = count + " new " + (n === 1 ? "workload" : "workloads") + where + " · show";
    button.hidden = false;
  }

  /* Show the counted rows: what the server lists now for this page (or go to the first page,
     where newer workloads are listed, when reading a later one). */
  function showNewRows(tbody) {
    var button = newButton(tbody);
    var href = button && button.getAttribute("data-live-new-href");
    if (href) { location.href = href; return Promise.resolve(); }
    return fetchRegion(tbody, tbody.getAttribute("data-live-src")).then(function (html) {
      if (html === null) return;
      var ids = pendingNew(tbody);
      tbody.innerHTML = html;
      $all("tr[data-workload-id]", tbody).forEach(function (row) {
        if (ids.has(Number(row.getAttribute("data-workload-id")))) flash(row);
      });
      ids.clear();
      showNew(tbody);
      applied(tbody);
    });
  }

  /* Resync a row list without moving it: rows shown are replaced in place, rows the server
     lists that are not shown are counted behind "N new"; rows no longer listed stay until
     the reader asks for the new ones (they moved to another page or out of the filter). */
  function mergeRows(tbody) {
    return fetchRegion(tbody, tbody.getAttribute("data-live-src")).then(function (html) {
      if (html === null) return;
      var holder = document.createElement("tbody");
      holder.innerHTML = html.trim();
      var ids = pendingNew(tbody);
      $all("tr", holder).forEach(function (fresh) {
        var id = fresh.getAttribute("data-workload-id");
        if (!id) return;
        var row = tbody.querySelector('tr[data-workload-id="' + id + '"]');
        if (!row) {
          ids.add(Number(id));
        } else if (!row.contains(document.activeElement) && rowState(row) !== rowState(fresh)) {
          row.replaceWith(fresh);
          flash(fresh);
        }
      });
      showNew(tbody);
      applied(tbody);
    });
  }

  /* What a row says that live events change (not "5 s ago", which only ages). */
  function rowState(row) {
    return [row.getAttribute("data-status")].concat($all("[data-cell]", row).map(function (cell) {
      return cell.textContent.replace(/\s+/g, " ").trim();
    })).join("|");
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
    // Like the rows the page was drawn with: a relative time that reltime.js ticks.
    var time = document.createElement("time");
    time.setAttribute("datetime", event.at);
    time.setAttribute("data-reltime", "");
    time.textContent = new Date(event.at).toLocaleTimeString();
    when.appendChild(time);
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
    if (tbody.querySelector('tr[data-event-id="' + event.id + '"]')) return;
    var empty = tbody.querySelector("tr.empty-row");
    if (empty) empty.remove();
    tbody.insertBefore(row, tbody.firstChild);
    if (window.fairwayRelTime) window.fairwayRelTime.tick();
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

  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    if (target.closest("[data-live-retry]")) {
      retryNow();
      return;
    }
    var button = target.closest("[data-live-new-for]");
    if (button) {
      var tbody = document.getElementById(button.getAttribute("data-live-new-for"));
      if (tbody) showNewRows(tbody);
    }
  });
  /* Back online, or back to this tab: do not wait for the backoff. */
  window.addEventListener("online", retryNow);
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" && everConnected) retryNow();
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
    refreshAll: function () { return resync(null); },
    syncSubscriptions: syncSubscriptions,
    refresh: refresh,
    connect: retryNow,
    retryNow: retryNow,
    /* Close the socket as a network drop would (it reconnects and resyncs by itself). */
    drop: function () { if (socket) socket.close(4000, "dropped"); },
  };
})();

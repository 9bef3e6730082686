/*
 * The output panel of a workload page (section[data-output]): the newest run of one pod,
 * followed live. What it relies on:
 *
 * - The page draws the last lines of the selected pod's newest run in pre[data-output-log],
 *   with data-run (the run) and data-next-offset (the byte after what is shown).
 * - live.js hands each `log` frame of the page's websocket on as a `live:log` event:
 *   {workload, pod, run, offset, next_offset, text}. A chunk of this pod's run that starts at
 *   `next` is appended; one that ends at or before `next` is shown already and is ignored;
 *   one that starts after it means a gap: the rest is read through the logs endpoint
 *   (`since=next`) and chunks arriving meanwhile wait, so nothing is lost or shown twice.
 *   A chunk of a newer run loads that run afresh (its last lines).
 * - Whenever live.js refreshes #workload-live (every (re)connection, every event of the
 *   workload, and every POLL_MS while pods are placed), the pod's runs are re-read and the
 *   output is read on from `next`: whatever was missed while disconnected comes back.
 * - Output is added as text nodes only (never HTML). The view scrolls with new output only
 *   when Follow is on and the reader is at the bottom.
 */
(function () {
  "use strict";

  var TAIL = 500;
  var POLL_MS = 15000;
  var MAX_CHARS = 2000000; // older output beyond this is dropped from the page

  var panel, pre, select, follow, runsBox, live;
  var logsSrc, runsSrc, workloadId;
  var state = { pod: "", run: null, next: 0, busy: false, again: false, queue: [], gen: 0 };
  var shownChars = 0;

  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); });
  }

  function byteLength(text) { return new TextEncoder().encode(text).length; }

  function atBottom() { return pre.scrollHeight - pre.scrollTop - pre.clientHeight < 8; }

  function showEmpty() {
    var empty = runsBox.querySelector("[data-output-empty]");
    if (empty) empty.hidden = shownChars > 0;
    pre.hidden = shownChars === 0;
  }

  function clear() {
    pre.replaceChildren();
    shownChars = 0;
    showEmpty();
  }

  function append(text) {
    if (!text) return;
    var stick = follow.checked && (pre.hidden || atBottom());
    pre.appendChild(document.createTextNode(text));
    shownChars += text.length;
    while (shownChars > MAX_CHARS && pre.firstChild !== pre.lastChild) {
      shownChars -= pre.firstChild.textContent.length;
      pre.removeChild(pre.firstChild);
    }
    showEmpty();
    if (stick) pre.scrollTop = pre.scrollHeight;
  }

  function setRun(run, next) {
    state.run = run;
    state.next = next;
    pre.setAttribute("data-run", run == null ? "" : String(run));
    pre.setAttribute("data-next-offset", String(next));
  }

  function podQuery() { return "?pod=" + encodeURIComponent(state.pod); }

  /* Chunks held while a read was under way, then another read if one was asked for. */
  function finish() {
    state.busy = false;
    var held = state.queue;
    state.queue = [];
    held.forEach(onLog);
    if (state.again && !state.busy) {
      state.again = false;
      readOn();
    }
  }

  /* The selected pod's newest run afresh: its last TAIL lines. */
  function load() {
    if (!state.pod) return Promise.resolve();
    var gen = ++state.gen;
    state.busy = true;
    state.again = false;
    state.queue = [];
    return getJSON(logsSrc + podQuery() + "&tail=" + TAIL).then(function (data) {
      if (gen !== state.gen) return;
      var log = (data.pods || [])[0] || null;
      clear();
      var earlier = panel.querySelector("[data-output-earlier]");
      if (earlier) earlier.hidden = !(log && log.offset > 0);
      if (log) {
        setRun(log.run, log.next_offset);
        append(log.text);
        pre.scrollTop = pre.scrollHeight;
      } else {
        setRun(null, 0);
      }
      finish();
    }).catch(function () { if (gen === state.gen) finish(); });
  }

  /* Read the run on from `next` (after a gap, a reconnect, or to be sure). */
  function readOn() {
    if (!state.pod) return;
    if (state.busy) { state.again = true; return; }
    if (state.run == null) { load(); return; }
    var gen = state.gen;
    state.busy = true;
    getJSON(logsSrc + podQuery() + "&since=" + state.next).then(function (data) {
      if (gen !== state.gen) return;
      var log = (data.pods || [])[0] || null;
      if (log && log.run !== state.run) { // a newer run started meanwhile
        state.busy = false;
        load();
        return;
      }
      var more = false;
      if (log && log.offset === state.next && log.next_offset > state.next) {
        append(log.text);
        setRun(state.run, log.next_offset);
        more = true; // answers are capped: ask until nothing new comes
      }
      if (more) state.again = true;
      finish();
    }).catch(function () { if (gen === state.gen) finish(); });
  }

  function onLog(log) {
    if (String(log.workload) !== workloadId || log.pod !== state.pod) return;
    if (state.busy) { state.queue.push(log); return; }
    if (state.run != null && log.run < state.run) return; // output of an older run
    if (state.run == null || log.run !== state.run) {
      if (state.run == null && log.offset === 0) { // the pod's first run, from its start
        setRun(log.run, 0);
      } else {
        load();
        refreshRuns();
        return;
      }
      refreshRuns();
    }
    var end = log.next_offset != null ? log.next_offset : log.offset + byteLength(log.text);
    if (end <= state.next) return; // shown already
    if (log.offset === state.next) {
      append(log.text);
      setRun(state.run, end);
      return;
    }
    readOn(); // a gap, or a chunk overlapping what is shown: read on from what we have
  }

  /* ---- Runs of the pod, and the pods to choose from ---------------------------------------- */
  var runsSeq = 0;
  function refreshRuns() {
    var seq = ++runsSeq;
    var pod = state.pod;
    return fetch(runsSrc + (pod ? podQuery() : ""), { credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) {
        if (seq !== runsSeq || pod !== state.pod) return;
        var open = runsBox.querySelector("details[open]") !== null;
        var had = runsBox.querySelector("details") !== null;
        runsBox.innerHTML = html;
        var details = runsBox.querySelector("details");
        if (details && had) details.open = open;
        var box = runsBox.querySelector("[data-output-state]");
        if (box) syncPods(box);
        showEmpty();
      })
      .catch(function () { /* the next resync tries again */ });
  }

  function syncPods(box) {
    var pods = (box.getAttribute("data-pods") || "").split(" ").filter(Boolean);
    var current = Array.prototype.map.call(select.options, function (o) { return o.value; });
    if (pods.join(" ") !== current.join(" ")) {
      select.replaceChildren.apply(select, pods.map(function (p) {
        var option = document.createElement("option");
        option.value = option.textContent = p;
        return option;
      }));
      select.value = state.pod;
    }
    var label = panel.querySelector("[data-output-pod-label]");
    if (label) label.hidden = pods.length < 2;
    if (!state.pod && pods.length) { // the first pod was placed while the page was open
      choose(box.getAttribute("data-pod") || pods[0]);
      return;
    }
    var run = box.getAttribute("data-run");
    if (run && !state.busy && (state.run == null || Number(run) > state.run)) load();
  }

  function choose(pod) {
    state.pod = pod;
    select.value = pod;
    pre.setAttribute("data-pod", pod);
    pre.setAttribute("aria-label", "Output of " + pod);
    setRun(null, 0);
    clear();
    var url = new URL(location.href);
    url.searchParams.set("pod", pod);
    history.replaceState(history.state, "", url);
    refreshRuns();
    load();
  }

  function poll() {
    if (document.visibilityState !== "visible" || !window.fairwayLive) return;
    if (!live || !live.querySelector("tr[data-pod]")) return; // nothing placed: nothing to measure
    window.fairwayLive.refresh(live);
  }

  function start() {
    panel = document.querySelector("section[data-output]");
    if (!panel) return;
    pre = panel.querySelector("[data-output-log]");
    select = panel.querySelector("[data-output-pod]");
    follow = panel.querySelector("[data-output-follow]");
    runsBox = panel.querySelector("[data-output-runs]");
    live = document.getElementById("workload-live");
    logsSrc = panel.getAttribute("data-logs-src");
    runsSrc = panel.getAttribute("data-runs-src");
    workloadId = panel.getAttribute("data-workload-id");
    state.pod = pre.getAttribute("data-pod") || "";
    var run = pre.getAttribute("data-run");
    setRun(run ? Number(run) : null, Number(pre.getAttribute("data-next-offset") || 0));
    shownChars = pre.textContent.length;
    showEmpty();
    pre.scrollTop = pre.scrollHeight;

    document.addEventListener("live:log", function (event) { onLog(event.detail || {}); });
    document.addEventListener("live:refreshed", function (event) {
      if (event.target !== live) return;
      refreshRuns();
      readOn();
    });
    select.addEventListener("change", function () { choose(select.value); });
    follow.addEventListener("change", function () {
      if (follow.checked) pre.scrollTop = pre.scrollHeight;
    });
    setInterval(poll, POLL_MS);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

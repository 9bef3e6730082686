/*
 * The workloads list's bulk actions: tick rows (or all you may act on), then cancel them or
 * set their priority. Ticks survive live updates: live.js may replace a row whose status
 * changed, so the ticked ids are kept here and put back after every refresh.
 */
(function () {
  "use strict";

  var ticked = new Set();

  function boxes() {
    return Array.prototype.slice.call(document.querySelectorAll("input[data-bulk-row]"));
  }

  function render() {
    var count = document.querySelector("[data-bulk-count]");
    var submit = document.querySelector("[data-bulk-submit]");
    var all = document.querySelector("input[data-bulk-all]");
    var shown = boxes();
    shown.forEach(function (box) { box.checked = ticked.has(box.value); });
    if (count) count.textContent = ticked.size ? ticked.size + " ticked" : "None ticked";
    if (submit) submit.disabled = ticked.size === 0;
    if (all) {
      var n = shown.filter(function (b) { return b.checked; }).length;
      all.checked = shown.length > 0 && n === shown.length;
      all.indeterminate = n > 0 && n < shown.length;
    }
  }

  /* After the filters changed the rows, only rows still shown stay ticked. */
  function pruneToShown() {
    var shown = new Set(boxes().map(function (b) { return b.value; }));
    ticked.forEach(function (id) { if (!shown.has(id)) ticked.delete(id); });
  }

  document.addEventListener("change", function (event) {
    var el = event.target;
    if (el instanceof HTMLSelectElement && el.form && el.form.hasAttribute("data-bulk-bar")) {
      el.form.setAttribute("data-action", el.value); // the priority field only when it applies
      return;
    }
    if (!(el instanceof HTMLInputElement)) return;
    if (el.hasAttribute("data-bulk-row")) {
      if (el.checked) ticked.add(el.value); else ticked.delete(el.value);
      render();
    } else if (el.hasAttribute("data-bulk-all")) {
      boxes().forEach(function (box) {
        if (el.checked) ticked.add(box.value); else ticked.delete(box.value);
      });
      render();
    }
  });

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-bulk-bar")) return;
    var action = form.querySelector("select[name=action]").value;
    var n = ticked.size;
    var what = n + (n === 1 ? " workload" : " workloads");
    var question = action === "cancel" ? "Cancel " + what + "? They stop for good." :
      "Set the priority of " + what + " to " + form.querySelector("input[name=priority]").value + "?";
    if (!window.confirm(question)) event.preventDefault();
  });

  document.addEventListener("live:refreshed", render);
  document.addEventListener("htmx:afterSettle", function () { pruneToShown(); render(); });
  document.addEventListener("DOMContentLoaded", render);
})();

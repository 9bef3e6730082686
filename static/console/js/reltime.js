/*
 * Relative times that tick, on every page: every <time data-reltime datetime="..."> says how
 * long ago it was ("3m ago"; with data-reltime="duration" the duration alone, "3m"),
 * updated every second while one of them is under a minute old (its
 * seconds change) and every 30 s otherwise; its title keeps the absolute time. Rows added
 * later are picked up at once: live.js calls fairwayRelTime.tick() for a prepended event,
 * and htmx swaps announce "live:refreshed".
 */
(function () {
  "use strict";

  var FAST_MS = 1000;
  var SLOW_MS = 30000;
  var timer = null;

  function ago(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    if (seconds < 60) return seconds + "s ago";
    var minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + "m ago";
    var hours = Math.floor(minutes / 60);
    if (hours < 48) return hours + "h " + String(minutes % 60).padStart(2, "0") + "m ago";
    return Math.floor(hours / 24) + "d " + (hours % 24) + "h ago";
  }

  function tick() {
    var now = Date.now();
    var youngest = Infinity;
    document.querySelectorAll("time[data-reltime]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("datetime"));
      if (isNaN(at)) return;
      if (!el.title) el.title = new Date(at).toLocaleString();
      var seconds = (now - at) / 1000;
      youngest = Math.min(youngest, seconds);
      var text = ago(seconds);
      el.textContent = el.getAttribute("data-reltime") === "duration" ? text.replace(/ ago$/, "") : text;
    });
    clearTimeout(timer);
    timer = setTimeout(tick, youngest < 60 ? FAST_MS : SLOW_MS);
  }

  window.fairwayRelTime = { tick: tick, ago: ago };
  document.addEventListener("live:refreshed", tick);
  document.addEventListener("DOMContentLoaded", tick);
})();

/*
 * Relative times that tick: every <time data-reltime datetime="..."> says how long ago it
 * was ("3m ago"), updated every 30 s; its title keeps the absolute time. Rows added later
 * (live events, swaps) are picked up at the next tick, or at once on "live:refreshed".
 */
(function () {
  "use strict";

  var TICK_MS = 30000;

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
    document.querySelectorAll("time[data-reltime]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("datetime"));
      if (isNaN(at)) return;
      if (!el.title) el.title = new Date(at).toLocaleString();
      el.textContent = ago((now - at) / 1000);
    });
  }

  window.fairwayRelTime = { tick: tick, ago: ago };
  document.addEventListener("live:refreshed", tick);
  document.addEventListener("DOMContentLoaded", function () {
    tick();
    setInterval(tick, TICK_MS);
  });
})();

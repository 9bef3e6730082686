// Hover values of time charts (console/charts.py time_chart): each step of a chart is a
// transparent column carrying its values in data-hover; pointing at it shows them at once
// in a tip above the chart (the column's <title> is the native, slower fallback).
(function () {
  "use strict";

  function tipOf(chart) {
    var tip = chart.querySelector(".chart-tip");
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "chart-tip";
      tip.setAttribute("role", "status");
      tip.hidden = true;
      chart.appendChild(tip);
    }
    return tip;
  }

  function show(column, event) {
    var chart = column.closest(".chart");
    if (!chart) return;
    var previous = chart.querySelector("rect.on");
    if (previous && previous !== column) previous.classList.remove("on");
    column.classList.add("on");
    var tip = tipOf(chart);
    tip.textContent = column.getAttribute("data-hover");
    tip.hidden = false;
    var box = chart.getBoundingClientRect();
    var x = event.clientX - box.left;
    tip.style.left = Math.max(0, Math.min(x + 12, box.width - tip.offsetWidth)) + "px";
    tip.style.top = "0px";
  }

  function hide(chart) {
    var tip = chart.querySelector(".chart-tip");
    if (tip) tip.hidden = true;
    var on = chart.querySelector("rect.on");
    if (on) on.classList.remove("on");
  }

  function onPointer(event) {
    var column = event.target.closest && event.target.closest("svg[data-hover-chart] [data-hover]");
    if (column) {
      show(column, event);
      return;
    }
    document.querySelectorAll(".chart .chart-tip:not([hidden])").forEach(function (tip) {
      hide(tip.parentElement);
    });
  }

  // pointermove for a mouse or pen, pointerdown for a tap on a touch screen
  document.addEventListener("pointermove", onPointer);
  document.addEventListener("pointerdown", onPointer);
})();

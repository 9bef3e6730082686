/*
 * Filters applied as they are chosen: a form marked data-auto-filter is submitted when a
 * select or date changes, and 500 ms after typing stops in a search field (the page reloads
 * with the filters in its address, so it can be shared and the back button works).
 */
(function () {
  "use strict";

  var timer = null;

  function submit(form) {
    clearTimeout(timer);
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  }

  document.addEventListener("change", function (event) {
    var el = event.target;
    var form = el instanceof Element ? el.closest("form[data-auto-filter]") : null;
    if (!form || el.type === "search") return;
    submit(form);
  });

  document.addEventListener("input", function (event) {
    var el = event.target;
    var form = el instanceof Element ? el.closest("form[data-auto-filter]") : null;
    if (!form || el.type !== "search") return;
    clearTimeout(timer);
    timer = setTimeout(function () {
      sessionStorage.setItem("fairway-refocus", el.id);
      submit(form);
    }, 500);
  });

  /* Typing goes on in the search field after the page came back with its results. */
  document.addEventListener("DOMContentLoaded", function () {
    var id = sessionStorage.getItem("fairway-refocus");
    sessionStorage.removeItem("fairway-refocus");
    var el = id && document.getElementById(id);
    if (el) {
      el.focus();
      el.setSelectionRange(el.value.length, el.value.length);
    }
  });
})();

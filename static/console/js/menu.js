/*
 * The menu button of narrow screens (a phone): it shows and hides the navigation links and
 * the account links (.topbar[data-menu-open], styled in console.css). Wider screens show
 * them all and hide the button.
 */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    var button = target && target.closest("[data-menu-toggle]");
    if (!button) return;
    var bar = button.closest(".topbar");
    var open = !bar.hasAttribute("data-menu-open");
    bar.toggleAttribute("data-menu-open", open);
    button.setAttribute("aria-expanded", String(open));
  });
})();

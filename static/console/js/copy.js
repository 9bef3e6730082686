/* Copy buttons: <button data-copy="#element-id"> copies that element's text and says so. */
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.textContent.trim();
    var label = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", label);
    function said(word) {
      button.textContent = word;
      setTimeout(function () { button.textContent = label; }, 2000);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { said("Copied"); }, function () { select(source); said("Press Ctrl+C"); });
    } else {
      select(source);
      said(document.execCommand && document.execCommand("copy") ? "Copied" : "Press Ctrl+C");
    }
  });
  function select(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
})();

/*
 * The Simulations page's change rows, enhanced. Without this script the form works as is:
 * every field of a row shows, "Add a change" asks the server for one more row and a row is
 * removed by ticking "Remove this change". With it:
 *   - a row shows only the fields its kind of change uses (data-kinds on each field),
 *   - "Add a change" copies the empty row from <template data-change-template> at once,
 *   - "Remove" hides the row and ticks its DELETE box (the server then leaves it out),
 *   - the form shows only the fields of the chosen source ([data-source-fields] lists
 *     the sources a part is for).
 */
(function () {
  "use strict";

  var PREFIX = "changes";

  function kindOf(row) {
    var select = row.querySelector('select[name$="-kind"]');
    return select ? select.value : "";
  }

  function showKind(row) {
    var kind = kindOf(row);
    row.querySelectorAll("[data-kinds]").forEach(function (field) {
      var kinds = field.getAttribute("data-kinds").split(/\s+/).filter(Boolean);
      field.hidden = !kind || kinds.indexOf(kind) < 0;
    });
  }

  function renumber(list) {
    var n = 0;
    list.querySelectorAll("[data-change-row]").forEach(function (row) {
      if (row.hidden) return;
      n += 1;
      var legend = row.querySelector("legend");
      if (legend) legend.textContent = "Change " + n;
    });
  }

  function enhance(row, list) {
    if (row.hasAttribute("data-enhanced")) return;
    row.setAttribute("data-enhanced", "");
    showKind(row);
    var remove = row.querySelector("[data-remove]");
    var box = remove && remove.querySelector('input[type="checkbox"]');
    if (!box) return;
    remove.hidden = true;
    if (box.checked) row.hidden = true;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "btn small";
    button.textContent = "Remove";
    button.setAttribute("data-remove-change", "");
    button.addEventListener("click", function () {
      box.checked = true;
      row.hidden = true;
      renumber(list);
    });
    remove.parentNode.appendChild(button);
  }

  function addRow(form, list) {
    var template = form.querySelector("template[data-change-template]");
    var total = form.querySelector('input[name="' + PREFIX + '-TOTAL_FORMS"]');
    if (!template || !total) return;
    var index = parseInt(total.value || "0", 10);
    var holder = document.createElement("div");
    holder.innerHTML = template.innerHTML.replace(/__prefix__/g, String(index));
    var row = holder.querySelector("[data-change-row]");
    if (!row) return;
    total.value = String(index + 1);
    list.appendChild(row);
    enhance(row, list);
    renumber(list);
    var kind = row.querySelector('select[name$="-kind"]');
    if (kind) kind.focus();
  }

  function showSource(form) {
    var chosen = form.querySelector('input[name="source"]:checked');
    var source = chosen ? chosen.value : "";
    form.querySelectorAll("[data-source-fields]").forEach(function (part) {
      var sources = part.getAttribute("data-source-fields").split(/\s+/);
      part.hidden = Boolean(source) && sources.indexOf(source) < 0;
    });
  }

  function init() {
    var list = document.querySelector("[data-change-rows]");
    if (!list) return;
    var form = list.closest("form");
    showSource(form);
    form.addEventListener("change", function (event) {
      if (event.target && event.target.name === "source") showSource(form);
    });
    list.querySelectorAll("[data-change-row]").forEach(function (row) { enhance(row, list); });
    renumber(list);
    list.addEventListener("change", function (event) {
      var target = event.target;
      if (target && target.name && /-kind$/.test(target.name)) {
        showKind(target.closest("[data-change-row]"));
      }
    });
    var add = form.querySelector("[data-add-change]");
    if (add) {
      add.addEventListener("click", function (event) {
        event.preventDefault();
        addRow(form, list);
      });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();

(function () {
  "use strict";
  function key(row, col, numeric) {
    var cell = row.children[col];
    var v = cell ? cell.getAttribute("data-value") : null;
    if (v === null) { v = cell ? cell.textContent.trim() : ""; }
    if (!numeric) { return v.toLowerCase(); }
    var n = parseFloat(v);
    return isNaN(n) ? -Infinity : n;
  }
  function sortBy(table, th) {
    var heads = Array.prototype.slice.call(th.parentNode.children);
    var col = heads.indexOf(th);
    var numeric = th.getAttribute("data-sort") === "num";
    var now = th.getAttribute("aria-sort");
    var asc = now ? now === "descending" : !numeric;
    heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (r, i) {
      return { row: r, key: key(r, col, numeric), i: i };
    });
    rows.sort(function (a, b) {
      if (a.key < b.key) { return asc ? -1 : 1; }
      if (a.key > b.key) { return asc ? 1 : -1; }
      return a.i - b.i;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th[data-sort] button").forEach(function (button) {
      button.addEventListener("click", function () { sortBy(table, button.parentNode); });
    });
  });
})();

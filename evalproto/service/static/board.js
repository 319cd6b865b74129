/* evalproto's leaderboard pages: a heading's button sorts its table in place, and a
   task's page brings itself up to date when its jobs change, polling the JSON API (the
   page's HTML is fetched again only then, or while new scores are being ranked, and
   swapped in without a reload). Without this script the pages work as well: the
   headings then sort through the server. */
(function () {
  "use strict";

  var chosen = {};  // table id -> its sort, kept when the board is swapped

  function parse(sort) {
    return {key: sort.replace(/^-/, ""), reverse: sort.charAt(0) === "-"};
  }

  function valueOf(row, key) {
    var cell = row.querySelector('[data-key="' + key + '"]');
    var value = cell ? cell.getAttribute("data-value") : null;
    if (value === null || value === "") { return null; }
    return key === "model" || key === "team" ? value : Number(value);
  }

  function index(row) { return Number(row.getAttribute("data-index")); }

  /* As the server sorts: a metric best first, names A to Z, ranks in order, or the
     reverse ("-key"); rows without a value last, ties in ranking order. */
  function apply(table, sort) {
    var state = parse(sort);
    var button = table.querySelector('thead button[data-key="' + state.key + '"]');
    if (!button) { return; }
    var descending = (button.getAttribute("data-better") === "higher") !== state.reverse;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var present = rows.filter(function (row) { return valueOf(row, state.key) !== null; });
    var missing = rows.filter(function (row) { return valueOf(row, state.key) === null; });
    present.sort(function (a, b) {
      var x = valueOf(a, state.key), y = valueOf(b, state.key);
      if (x === y) { return index(a) - index(b); }
      return (x < y) !== descending ? -1 : 1;
    });
    missing.sort(function (a, b) { return index(a) - index(b); });
    present.concat(missing).forEach(function (row) { body.appendChild(row); });
    table.setAttribute("data-sort", sort);
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (head) {
      var own = head.querySelector("button[data-key]");
      var key = own ? own.getAttribute("data-key") : "";
      if (key === state.key) {
        head.setAttribute("aria-sort", descending ? "descending" : "ascending");
      } else {
        head.removeAttribute("aria-sort");
      }
      if (own) { own.value = key === state.key && !state.reverse ? "-" + key : key; }
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("thead button[data-key]") : null;
    var table = button ? button.closest("table.board") : null;
    if (!table) { return; }
    event.preventDefault();  // sorted here, not by the server
    var current = parse(table.getAttribute("data-sort") || "rank");
    var key = button.getAttribute("data-key");
    var sort = key === current.key && !current.reverse ? "-" + key : key;
    apply(table, sort);
    chosen[table.id] = sort;
  });

  var board = document.getElementById("board");
  if (!board || !board.getAttribute("data-poll") || !window.fetch) { return; }

  function ranking() { return (board.getAttribute("data-ranking") || "0") !== "0"; }

  function busy() {
    var counts = (board.getAttribute("data-jobs") || "").split(",");
    return counts[0] !== "0" || counts[1] !== "0" || ranking();
  }

  function swap(text) {
    var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("board");
    if (!fresh) { return; }
    var open = Array.prototype.map.call(board.querySelectorAll("details[open]"),
                                        function (details) { return details.id; });
    var nodes = Array.prototype.slice.call(fresh.childNodes);
    board.replaceChildren.apply(board, nodes.map(function (node) {
      return document.adoptNode(node);
    }));
    board.setAttribute("data-jobs", fresh.getAttribute("data-jobs"));
    board.setAttribute("data-ranking", fresh.getAttribute("data-ranking"));
    open.forEach(function (id) {
      var details = document.getElementById(id);
      if (details) { details.open = true; }
    });
    Object.keys(chosen).forEach(function (id) {
      var table = document.getElementById(id);
      if (table) { apply(table, chosen[id]); }
    });
  }

  function poll() {
    if (document.hidden) { later(); return; }
    fetch(board.getAttribute("data-poll"), {cache: "no-store"})
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (jobs) {
        if (!jobs) { return null; }
        var counts = [jobs.queued, jobs.running, jobs.done, jobs.failed].join(",");
        if (counts === board.getAttribute("data-jobs") && !ranking()) { return null; }
        return fetch(window.location.href, {cache: "no-store"}).then(function (response) {
          return response.ok ? response.text().then(swap) : null;
        });
      })
      .catch(function () { return null; })  // the server is away a moment: later
      .then(later);
  }

  function later() { window.setTimeout(poll, busy() ? 1000 : 5000); }

  later();
}());

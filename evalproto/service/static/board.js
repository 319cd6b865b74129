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

  function each(list, action) { Array.prototype.forEach.call(list, action); }

  var board = document.getElementById("board");

  /* The board's new HTML (the page fetched again) in place of the old, keeping what
     the reader chose: open disclosures, sorts, the filter. */
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
    applyFilter();
  }

  /* The filter box: shows the rows (and chart marks) of the models whose name or team
     holds what is typed. */
  var filter = document.getElementById("filter");

  function applyFilter() {
    if (!filter) { return; }
    var words = filter.value.trim().toLowerCase();
    each(document.querySelectorAll("#board [data-team]"), function (node) {
      var model = node.getAttribute("data-model") || node.getAttribute("data-dynascore-model");
      var text = (model + " " + node.getAttribute("data-team")).toLowerCase();
      node.classList.toggle("filtered", words !== "" && text.indexOf(words) < 0);
    });
  }

  if (filter) {
    document.getElementById("filter-box").hidden = false;
    filter.addEventListener("input", applyFilter);
  }

  /* The Dynaboards' sliders: a model's Dynascore is its metrics' shares (data-share,
     the server's, before any weight) weighed by the sliders, so moving one re-ranks the
     Dynaboards here at once; their intervals, which need the resamples, come with the
     page made again under the new weights, which the page's address keeps. */
  var sliders = document.querySelectorAll('#weights input[type="range"][data-metric]');
  var asked = 0;  // the last request for intervals: older answers are dropped
  var timer = null;

  function chosenWeights() {
    var weights = {};
    each(sliders, function (slider) {
      weights[slider.getAttribute("data-metric")] = Number(slider.value);
    });
    return weights;
  }

  function metricsOf(table) {
    return Array.prototype.map.call(table.querySelectorAll("thead th[data-metric]"),
                                    function (head) { return head.getAttribute("data-metric"); });
  }

  function weightsText(metrics, weights, separator) {
    return metrics.map(function (metric) {
      return metric + separator + String(weights[metric] || 0);
    }).join(separator === "=" ? "," : ", ");
  }

  function rerank(table, scoreOf) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.forEach(function (row) {
      var score = scoreOf(row);
      var cell = row.querySelector('td[data-key="dynascore"]');
      cell.setAttribute("data-value", score === null ? "" : String(score));
      cell.textContent = score === null ? "\u2013" : score.toFixed(2);
    });
    rows.sort(function (a, b) {
      var x = a.querySelector('td[data-key="dynascore"]').getAttribute("data-value");
      var y = b.querySelector('td[data-key="dynascore"]').getAttribute("data-value");
      if (x !== y && x !== "" && y !== "") { return Number(y) - Number(x); }
      return Number(a.getAttribute("data-index")) - Number(b.getAttribute("data-index"));
    });
    rows.forEach(function (row, number) {
      body.appendChild(row);
      row.querySelector('td[data-key="rank"]').textContent = String(number + 1);
    });
  }

  function weigh(table, weights) {
    var metrics = metricsOf(table);
    var total = metrics.reduce(function (sum, metric) { return sum + (weights[metric] || 0); }, 0);
    rerank(table, function (row) {
      if (total <= 0) { return null; }
      var score = 0;
      each(row.querySelectorAll("td[data-metric]"), function (cell) {
        score += (weights[cell.getAttribute("data-metric")] || 0) *
          Number(cell.getAttribute("data-share"));
      });
      return score / total;
    });
    each(table.querySelectorAll("thead th[data-metric]"), function (head) {
      head.setAttribute("data-weight", String(weights[head.getAttribute("data-metric")] || 0));
    });
    var caption = table.querySelector(".weights-text");
    if (caption) { caption.textContent = weightsText(metrics, weights, " "); }
    each(table.querySelectorAll('td[data-key="interval"]'), function (cell) {
      cell.textContent = total > 0 ? "\u2026" : "\u2013";
    });
    table.classList.toggle("weighing", total > 0);
    return total > 0;
  }

  function moved() {
    var weights = chosenWeights();
    each(sliders, function (slider) {
      var shown = slider.parentNode.querySelector("output");
      if (shown) { shown.textContent = slider.value; }
    });
    var tables = Array.prototype.filter.call(document.querySelectorAll("table.dynaboard"),
                                             function (table) { return weigh(table, weights); });
    if (window.history && window.URL) {
      var address = new URL(window.location.href);
      Array.from(address.searchParams.keys()).forEach(function (key) {
        if (key.indexOf("weight.") === 0) { address.searchParams.delete(key); }
      });
      address.searchParams.delete("weights");
      var query = address.searchParams.toString();
      var chosen = encodeURIComponent(weightsText(Object.keys(weights), weights, "="))
        .replace(/%3D/g, "=").replace(/%2C/g, ",");  // readable: metric=weight,...
      address.search = (query ? query + "&" : "") + "weights=" + chosen;
      window.history.replaceState(null, "", address.toString());
    }
    if (timer !== null) { window.clearTimeout(timer); }
    asked += 1;
    var number = asked;
    timer = window.setTimeout(function () {
      timer = null;
      if (!window.fetch || !board || tables.length === 0) { return; }
      fetch(window.location.href, {cache: "no-store"})
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (text) { if (text !== null && number === asked) { swap(text); } })
        .catch(function () { return null; });  // the server is away: the next move asks again
    }, 250);
  }

  each(sliders, function (slider) { slider.addEventListener("input", moved); });

  if (!board || !board.getAttribute("data-poll") || !window.fetch) { return; }

  function ranking() { return (board.getAttribute("data-ranking") || "0") !== "0"; }

  function busy() {
    var counts = (board.getAttribute("data-jobs") || "").split(",");
    return counts[0] !== "0" || counts[1] !== "0" || ranking();
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

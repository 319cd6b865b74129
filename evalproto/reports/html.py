"""A report as one self-contained HTML page: tables, inline SVG plots, inline CSS and a
small inline script that sorts tables. Nothing is fetched: the page's Content Security
Policy allows no request at all, and no script but its own (by hash).

Every text from the input (system and group names, metric specs, segments) goes
through `escape`, so a hypothesis holding `<script>` is shown as text. Every number
shown in a table cell also sits, at full precision, in the cell's `data-value`, which
the sorting script and tests read.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import html
import math
import re
from typing import Callable, Dict, List, Optional, Sequence, Set

import numpy as np

from evalproto.base.progress import QUIET, Progress
from evalproto.base.version import __version__
from evalproto.reports import plots
from evalproto.reports.report import (
    TESTS,
    UNTAGGED,
    MetricFigures,
    Report,
    decimals,
    display_names,
    fixed,
)
from evalproto.stats import comparemt
from evalproto.stats.reductions import Result
from evalproto.stats.significance import SIGNIFICANCE_LEVEL

SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (head, column) {
    var button = head.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      var ascending = head.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (other) {
        other.removeAttribute("aria-sort");
      });
      head.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var cell = row.cells[column];
        var value = cell.getAttribute("data-value");
        if (value !== null && value !== "" && !isNaN(Number(value))) {
          return Number(value);
        }
        return cell.textContent;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), order;
        if (typeof x === "number" && typeof y === "number") { order = x - y; }
        else { order = String(x).localeCompare(String(y)); }
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1400px;
       padding: 0 1.2em 3em; color: #1b1b1b; background: #fff; }
h1 { margin-top: 1em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.8em 0; font-variant-numeric: tabular-nums; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #e3e3e3; text-align: right;
         vertical-align: top; }
th:first-child, td:first-child, td.text { text-align: left; }
th button { font: inherit; font-weight: bold; background: none; border: 0; padding: 0;
            cursor: pointer; color: inherit; }
th[aria-sort=ascending] button::after { content: " \\25B2"; }
th[aria-sort=descending] button::after { content: " \\25BC"; }
td.best { font-weight: bold; background: #eef6ee; }
td.sig { font-weight: bold; }
td.diagonal { color: #999; }
.ci { color: #666; font-size: 90%; }
.note { color: #555; font-size: 92%; max-width: 60em; }
.signature { font-family: ui-monospace, monospace; font-size: 85%; color: #444;
             overflow-wrap: anywhere; }
figure.plot { margin: 0.8em 0; }
figure.plot svg { max-width: 100%; height: auto; display: block; }
.segment { border: 1px solid #ddd; border-radius: 4px; padding: 0.5em 0.8em;
           margin: 0.6em 0; }
.segment dl { display: grid; grid-template-columns: 9em 1fr; margin: 0; gap: 0.15em 1em; }
.segment dt { color: #555; overflow-wrap: anywhere; }
.segment dd { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
mark { background: #ffe08a; }
.ngrams, .row { display: flex; gap: 2em; flex-wrap: wrap; align-items: flex-start; }
details { margin: 0.6em 0; }
"""


def escape(text: object) -> str:
    """Any text from the input, or a number, as HTML text (quotes too, for attributes)."""
    return html.escape(str(text), quote=True)


def number(value: Optional[float], places: int) -> str:
    return fixed(value, places, "n/a")


def interval(result: Result, places: int) -> str:
    """A result's bootstrap interval as sacrebleu writes it, "(μ = mean ± ci)"."""
    if result.ci is None:
        return ""
    return (f' <span class="ci">(μ = {number(result.mean, places)} ± '
            f'{number(result.ci, places)})</span>')


def cell(value: Optional[float], text: str, classes: str = "") -> str:
    """A table cell showing `text` for `value`, kept whole in data-value."""
    shown = "" if value is None else repr(float(value))
    attribute = f' class="{classes}"' if classes else ""
    return f'<td{attribute} data-value="{escape(shown)}">{text}</td>'


def head(labels: Sequence[str], sortable: bool = True) -> str:
    cells = "".join(f'<th scope="col"><button type="button">{escape(label)}</button></th>'
                    if sortable else f'<th scope="col">{escape(label)}</th>'
                    for label in labels)
    return f"<thead><tr>{cells}</tr></thead>"


class Page:
    """The page being written: its parts, and its plots (numbered, with progress)."""

    def __init__(self, report: Report, width: int, progress: Progress) -> None:
        self.report = report
        self.width = width
        self.names = display_names(report.metrics)
        self.seed = escape(str(report.options.seed).lower())  # as signatures write it
        self.parts: List[str] = []
        self.plotted = 0
        self.phase = progress.start("drawing plots", plot_count(report))

    def plot(self, draw: Callable[..., str], *args: object, caption: str = "") -> None:
        self.plotted += 1
        svg = draw(f"plot-{self.plotted}", *args)
        self.phase.advance(1)
        text = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
        self.parts.append(f'<figure class="plot">{svg}{text}</figure>')

    def add(self, text: str) -> None:
        self.parts.append(text)

    def places(self, metric: MetricFigures) -> int:
        return decimals([result.score for result in metric.results], self.width)


def plot_count(report: Report) -> int:
    """How many plots `format_html` draws (for its progress bar)."""
    count = 2 * len(report.metrics)  # intervals, and bootstrap distributions
    if report.groups:
        count += len(report.metrics)
    if report.comparemt is not None:
        count += 4
    if report.pairs is not None:
        count += 2 * len(report.pairs.scores)
    return count


# -- sections ----------------------------------------------------------------------------

def _scores(page: Page) -> None:
    report = page.report
    page.add('<section id="scores"><h2>Scores</h2>')
    page.add(f'<p class="note">Corpus scores with 95% bootstrap confidence intervals '
             f'({report.options.samples} resamples, seed {page.seed}), '
             f'written as sacrebleu writes them: the mean μ of the resampled scores ± half '
             f'the width of the interval. <code>evalproto corpus-score '
             f'{"--paired-bs" if len(report.systems) > 1 else "--confidence"}</code> gives '
             f'the same figures. The best score of each metric is marked. Click a heading to '
             f'sort.</p>')
    labels = ["System"] + [f"{page.names[metric.label]} (95% CI)" for metric in report.metrics]
    rows = []
    for index, system in enumerate(report.systems):
        cells = [f'<td class="text" data-value="{escape(system)}">{escape(system)}'
                 f'{" (baseline)" if index == 0 and len(report.systems) > 1 else ""}</td>']
        for metric in report.metrics:
            result = metric.results[index]
            places = page.places(metric)
            text = number(result.score, places) + interval(result, places)
            cells.append(cell(result.score, text, "best" if system in metric.best else ""))
        rows.append(f"<tr>{''.join(cells)}</tr>")
    page.add(f'<table class="sortable" id="score-table">{head(labels)}'
             f'<tbody>{"".join(rows)}</tbody></table><div class="row">')
    for metric in report.metrics:
        page.plot(plots.intervals, report.systems, [r.score for r in metric.results],
                  [(r.mean, r.ci) for r in metric.results],
                  f"{page.names[metric.label]}, 95% CI")
    page.add("</div>")
    page.add('<p>Signatures:</p><ul>' + "".join(
        f'<li>{escape(page.names[metric.label])}: <span class="signature">'
        f'{escape(metric.signature)}</span></li>' for metric in report.metrics) + "</ul>")
    page.add("</section>")


def _significance(page: Page) -> None:
    report = page.report
    if len(report.systems) < 2:
        return
    page.add('<section id="significance"><h2>All-pairs significance</h2>')
    page.add(f'<p class="note">p-values of every pair of systems. Each pair is tested on '
             f'the same draws as sacrebleu\'s test of that pair (seed {page.seed}), so the '
             f'row of the first system equals '
             f'<code>corpus-score --paired-bs</code> (and <code>--paired-ar</code>). '
             f'Bold: p &le; {SIGNIFICANCE_LEVEL}. {escape(report.cluster_rule)}</p>')
    page.add('<div class="row">')
    for metric in report.metrics:
        name = page.names[metric.label]
        page.add(f"<div><h3>{escape(name)}</h3>")
        for test, matrix in metric.tests.items():
            samples = metric.test_samples.get(test)
            detail = f", {samples} {'resamples' if test == 'bs' else 'trials'}" if samples else ""
            page.add(f"<h4>{escape(TESTS[test])}{detail}</h4>")
            page.add(_matrix_table(report.systems, matrix, f"{test}-{metric.label}"))
        for test, reason in metric.refused.items():
            page.add(f'<p class="note">No {escape(TESTS[test])}: {escape(reason)}</p>')
        page.add("<p>Clusters:</p><ol>")
        rank = 1
        for cluster in metric.clusters:
            ranks = f"{rank}" if len(cluster) == 1 else f"{rank}–{rank + len(cluster) - 1}"
            page.add(f'<li>rank {ranks}: {", ".join(escape(s) for s in cluster)}</li>')
            rank += len(cluster)
        page.add("</ol></div>")
    page.add("</div></section>")


def _matrix_table(systems: Sequence[str], matrix: np.ndarray, table_id: str) -> str:
    rows = []
    for i, system in enumerate(systems):
        cells = [f'<th scope="row" class="text">{escape(system)}</th>']
        for j in range(len(systems)):
            if i == j:
                cells.append('<td class="diagonal" data-value="">—</td>')
                continue
            value = float(matrix[i, j])
            significant = math.isfinite(value) and value <= SIGNIFICANCE_LEVEL
            cells.append(cell(value, number(value, 4), "sig" if significant else ""))
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (f'<table class="pvalues" data-test="{escape(table_id)}">'
            f'{head(["", *systems], sortable=False)}<tbody>{"".join(rows)}</tbody></table>')


def _groups(page: Page) -> None:
    report = page.report
    if not report.groups:
        return
    page.add('<section id="groups"><h2>Groups</h2>')
    page.add(f'<p class="note">Each group\'s scores with 95% bootstrap intervals over its own '
             f'segments ({report.options.samples} resamples), as <code>corpus-score --groups '
             f'FILE --confidence</code> gives them; a segment with several tags counts in '
             f'each, and segments without a tag form the group {escape(UNTAGGED)}.</p>')
    for metric in report.metrics:
        results = [result for result in report.groups if result.metric == metric.label]
        groups = list(dict.fromkeys(result.group for result in results))
        by_key: Dict[tuple, Result] = {(r.group, r.system): r for r in results}
        places = page.places(metric)
        page.add(f"<h3>{escape(page.names[metric.label])}</h3>")
        rows = []
        for group in groups:
            segments = by_key[group, report.systems[0]].n
            cells = [f'<td class="text" data-value="{escape(group)}">{escape(group)}</td>',
                     cell(segments, str(segments))]
            for system in report.systems:
                result = by_key[group, system]
                cells.append(cell(result.score, number(result.score, places)
                                  + interval(result, places)))
            rows.append(f"<tr>{''.join(cells)}</tr>")
        page.add('<div class="row">')
        page.add(f'<table class="sortable groups" data-metric="{escape(metric.label)}">'
                 f'{head(["Group", "Segments", *report.systems])}<tbody>{"".join(rows)}'
                 f'</tbody></table>')
        page.plot(plots.bars, groups,
                  {system: [by_key[group, system].score for group in groups]
                   for system in report.systems},
                  f"{page.names[metric.label]} by group", page.names[metric.label],
                  {system: [(by_key[group, system].mean, by_key[group, system].ci)
                            for group in groups] for system in report.systems},
                  caption="Error bars: 95% bootstrap confidence intervals.")
        page.add("</div>")
    page.add("</section>")


def _bucket_section(page: Page, table: comparemt.BucketTable, title: str, ylabel: str,
                    places: int) -> None:
    systems = list(table.values)
    rows = []
    for b, label in enumerate(table.labels):
        cells = [f'<td class="text">{escape(label)}</td>']
        cells += [cell(table.values[s][b], number(table.values[s][b], places)) for s in systems]
        if table.statistic == "bleu":
            cells.append(cell(table.segments[systems[0]][b], str(table.segments[systems[0]][b])))
        rows.append(f"<tr>{''.join(cells)}</tr>")
    columns = ["Bucket", *systems] + (["Segments"] if table.statistic == "bleu" else [])
    page.add(f'<h3>{escape(title)}</h3><div class="row">')
    page.add(f'<table class="comparemt" data-analysis="{escape(table.title)}">'
             f'{head(columns, sortable=False)}<tbody>{"".join(rows)}</tbody></table>')
    page.plot(plots.bars, list(table.labels), {s: list(table.values[s]) for s in systems},
              title, ylabel)
    page.add("</div>")


def _comparemt(page: Page) -> None:
    analysis = page.report.comparemt
    if analysis is None:
        return
    page.add('<section id="comparemt"><h2>compare-mt\'s analyses</h2>')
    page.add('<p class="note">These figures follow compare-mt 0.2.10\'s definitions and '
             'equal its default run on the same files: its BLEU splits text on the space '
             'character only (a non-breaking space or a tab stays inside a word), counts '
             'at least one n-gram per order and segment, and leaves out an order without '
             'matches, so it is <em>not</em> sacrebleu\'s BLEU of the score table. '
             'Word frequencies come from ' + ("the frequency corpus given"
                                              if page.report.texts and
                                              page.report.texts.freq_corpus is not None
                                              else "the reference") + '.</p>')
    for note in page.report.notes:
        page.add(f'<p class="note">{escape(note)}</p>')
    systems = list(analysis.systems)
    rows = "".join(
        f'<tr><td class="text">{escape(s)}</td>'
        f'{cell(analysis.bleu[s], number(analysis.bleu[s], 2))}'
        f'{cell(analysis.length_ratio[s], number(analysis.length_ratio[s], 4))}</tr>'
        for s in systems)
    page.add(f'<table class="comparemt" data-analysis="aggregate">'
             f'{head(["System", "BLEU (compare-mt)", "length ratio"], sortable=False)}'
             f'<tbody>{rows}</tbody></table>')
    words = analysis.word_accuracy
    rows = "".join(
        f'<tr><td class="text">{escape(label)}</td>' + "".join(
            cell(words.systems[s].fmeasure[b], number(words.systems[s].fmeasure[b], 4))
            for s in systems) + "</tr>" for b, label in enumerate(words.labels))
    page.add('<h3>Word F-measure by reference frequency</h3><div class="row">')
    page.add(f'<table class="comparemt" data-analysis="word fmeasure">'
             f'{head(["Frequency", *systems], sortable=False)}<tbody>{rows}</tbody></table>')
    page.plot(plots.bars, list(words.labels),
              {s: words.systems[s].fmeasure.tolist() for s in systems},
              "Word F-measure by frequency bucket", "F-measure")
    page.add("</div>")
    _bucket_section(page, analysis.bleu_by_length, "BLEU by reference length (tokens)",
                    "BLEU (compare-mt)", 2)
    _bucket_section(page, analysis.length_diff,
                    "Segments by hypothesis length − reference length", "segments", 0)
    _bucket_section(page, analysis.sentence_bleu, "Segments by sentence BLEU", "segments", 0)
    if analysis.ngrams is not None:
        ngrams = analysis.ngrams
        first, second = ngrams.systems
        page.add(f"<h3>N-gram difference: {escape(first)} and {escape(second)}</h3>")
        page.add(f'<p class="note">N-grams (1 to 4 words) matched in the reference more '
                 f'often by one system: score (m1 + {ngrams.alpha:g}) / (m1 + m2 + '
                 f'{2 * ngrams.alpha:g}), with m1 and m2 the matches of each; the '
                 f'{len(ngrams.first_better)} highest and lowest. Ties are ordered by '
                 f'matches, then alphabetically (compare-mt orders them at random).</p>')
        page.add('<div class="ngrams">')
        for title, entries in ((f"{first} better", ngrams.first_better),
                               (f"{second} better", ngrams.second_better)):
            rows = "".join(
                f'<tr><td class="text">{escape(" ".join(entry.ngram))}</td>'
                f'{cell(entry.score, number(entry.score, 4))}'
                f'{cell(entry.first, str(entry.first))}{cell(entry.second, str(entry.second))}</tr>'
                for entry in entries)
            page.add(f'<div><h4>{escape(title)}</h4><table class="ngram-list">'
                     f'{head(["N-gram", "score", first, second], sortable=False)}'
                     f'<tbody>{rows}</tbody></table></div>')
        page.add("</div>")
    page.add("</section>")


def marked(text: str, other: str) -> str:
    """`text` as HTML with the words that `other` lacks (by a word diff) marked; the
    text's own spacing is kept."""
    parts = re.findall(r"\s+|\S+", text)
    words = [part for part in parts if not part.isspace()]
    changed: Set[int] = set()
    matcher = difflib.SequenceMatcher(None, words, other.split(), autojunk=False)
    for tag, start, end, _, _ in matcher.get_opcodes():
        if tag != "equal":
            changed.update(range(start, end))
    out, word = [], 0
    for part in parts:
        if part.isspace():
            out.append(escape(part))
            continue
        out.append(f"<mark>{escape(part)}</mark>" if word in changed else escape(part))
        word += 1
    return "".join(out)


def _segments(page: Page) -> None:
    report, pairs = page.report, page.report.pairs
    if pairs is None:
        return
    first, second = pairs.systems
    page.add('<section id="segments"><h2>Segments</h2>')
    page.add(f'<p class="note">{escape(first)} and {escape(second)} segment by segment: '
             f'each segment\'s own score (as <code>corpus-score --sentence-level</code>; '
             f'BLEU with effective order, as sacrebleu), the differences, and the segments '
             f'where {escape(second)} wins and loses most by '
             f'{escape(page.names[pairs.ranked_by])}.'
             + (" Marked: words the other system's hypothesis lacks." if report.texts else "")
             + '</p>')
    for metric in report.metrics:
        name = page.names[metric.label]
        x, y = pairs.scores[metric.label]
        page.add('<div class="row">')
        page.plot(plots.scatter, x, y, f"{first}: {name}", f"{second}: {name}",
                  f"Segment {name}")
        difference = pairs.difference(metric.label, metric.higher_is_better)
        page.plot(plots.histogram, difference,
                  f"{second} − {first}" if metric.higher_is_better else f"{first} − {second}",
                  f"Differences in segment {name} (positive: {second} better)")
        page.add("</div>")
    metric = report.metric(pairs.ranked_by)
    x, y = pairs.scores[pairs.ranked_by]
    places = page.places(metric)
    texts = report.texts
    for title, chosen in ((f"Largest wins of {second}", pairs.wins),
                          (f"Largest losses of {second}", pairs.losses)):
        page.add(f"<h3>{escape(title)}</h3>")
        if not chosen:
            page.add("<p>None.</p>")
        for index in chosen:
            items = [("segment", escape(pairs.ids[index])),
                     (f"{page.names[metric.label]}",
                      f"{escape(first)}: {number(float(x[index]), places)}, {escape(second)}: "
                      f"{number(float(y[index]), places)}")]
            if texts is not None:
                if texts.sources is not None:
                    items.append(("source", escape(texts.sources[index])))
                for k, ref in enumerate(texts.refs[index], 1):
                    items.append((f"reference {k}" if len(texts.refs[index]) > 1
                                  else "reference", escape(ref)))
                a, b = texts.hyps[first][index], texts.hyps[second][index]
                items += [(first, marked(a, b)), (second, marked(b, a))]
            rows = "".join(f"<dt>{escape(key)}</dt><dd>{value}</dd>" for key, value in items)
            page.add(f'<div class="segment" data-segment="{escape(pairs.ids[index])}">'
                     f'<dl>{rows}</dl></div>')
    page.add("</section>")


def _bootstrap(page: Page) -> None:
    report = page.report
    page.add('<section id="bootstrap"><h2>Bootstrap distributions</h2>')
    page.add(f'<p class="note">Each system\'s score on each of the '
             f'{report.options.samples} bootstrap resamples behind its interval.</p>')
    for metric in report.metrics:
        values = {result.system: result.resampled for result in metric.results
                  if result.resampled is not None}
        name = page.names[metric.label]
        page.plot(plots.distributions, values, name, f"{name}: bootstrap resamples")
    page.add("</section>")


def content_security_policy() -> str:
    """The page's Content Security Policy: no request at all, no script but its own (by
    its hash). A server that serves the page sends it as a header too."""
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode()
    return (f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
            f"script-src 'sha256-{digest}'")


def format_html(report: Report, width: int = 1, progress: Progress = QUIET) -> str:
    """The report as one self-contained HTML page."""
    page = Page(report, width, progress)
    _scores(page)
    _significance(page)
    _groups(page)
    _comparemt(page)
    _segments(page)
    _bootstrap(page)
    page.phase.close()
    policy = content_security_policy()
    sections = [("scores", "Scores"), ("significance", "Significance"), ("groups", "Groups"),
                ("comparemt", "compare-mt"), ("segments", "Segments"),
                ("bootstrap", "Bootstrap")]
    body = "\n".join(page.parts)
    links = " ".join(f'<a href="#{key}">{title}</a>' for key, title in sections
                     if f'<section id="{key}">' in body)
    metrics = ", ".join(escape(page.names[metric.label]) for metric in report.metrics)
    title = f"evalproto report: {len(report.systems)} systems, {report.segments} segments"
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"<h1>{escape(title)}</h1>\n"
            f'<p class="note">Metrics: {metrics}. Made by evalproto {escape(__version__)}.</p>\n'
            f"<nav>{links}</nav>\n{body}\n<script>{SCRIPT}</script>\n</body>\n</html>\n")

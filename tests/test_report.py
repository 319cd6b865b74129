"""evalproto report: every figure of the page and of its JSON is the figure that
corpus-score, reduce or compare-mt give for the same input; every input text is
escaped; the LaTeX tables are escaped; the output is deterministic and atomic.

(tests/test_report_browser.py opens the page in a real browser.)"""

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest
from conftest import DATA, DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS, json_rows, read_lines, run_cli
from scipy import stats as scipy_stats
from test_comparemt import NBSP, TRICKY, by_kind, compare_mt_reports, write_corpus

HOSTILE = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> '
           '&amp; </td></table> {{x}}')
EVIL_NAME = "<i>evil</i> & co"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two references, three systems (the second: Lan-Bridge with a hostile line, which
    loses to the first there), a groups file with HTML in a tag and untagged lines, and
    the sources."""
    work = tmp_path_factory.mktemp("report")
    hostile = read_lines(DE_EN_HYP2)
    hostile[4] = HOSTILE
    (work / "hostile.txt").write_text("\n".join(hostile) + "\n")
    tags = ["news" if i % 3 else "<b>web</b>" for i in range(150)]
    for i in range(0, 150, 7):
        tags[i] = ""  # untagged
    tags[3] = "news,<b>web</b>"
    (work / "groups").write_text("\n".join(tags) + "\n")
    (work / "source").write_text("".join(f"Quelle {i} <s>\n" for i in range(150)))
    return {"dir": work, "systems": [DE_EN_HYP, str(work / "hostile.txt"), DE_EN_HYP2],
            "names": ["LT22", EVIL_NAME, "Lan-Bridge"], "groups": str(work / "groups"),
            "tags": tags, "source": str(work / "source")}


def run_report(work: Path, *args: str, name: str = "report") -> Dict[str, object]:
    html, js, tex = (work / f"{name}.html", work / f"{name}.json", work / f"{name}.tex")
    result = run_cli("report", *args, "-o", str(html), "--json", str(js), "--latex", str(tex))
    assert result.exit_code == 0, result.output
    return {"html": html.read_text(), "json": json.loads(js.read_text()),
            "latex": tex.read_text(), "output": result.output}


@pytest.fixture(scope="module")
def full(corpus):
    systems = [f"{name}={path}" for name, path in zip(corpus["names"], corpus["systems"])]
    return run_report(corpus["dir"], *DE_EN_REFS, "-i", *systems, "--groups", corpus["groups"],
                      "--source", corpus["source"], "--paired-ar", "--paired-ar-n", "500")


def corpus_score(*args):
    result = run_cli("corpus-score", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json_rows(result.output)


def metric(report, label):
    return next(m for m in report["json"]["metrics"] if m["metric"] == label)


# -- the figures are corpus-score's -------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("label", ["bleu", "chrf"])
def test_scores_intervals_and_first_row_equal_corpus_score(corpus, full, label):
    names = corpus["names"]
    expected = corpus_score(*DE_EN_REFS, "-i", *corpus["systems"], "-m", label, "--paired-bs")
    figures = metric(full, label)
    assert [s["system"] for s in figures["scores"]] == names
    for ours, theirs in zip(figures["scores"], expected):
        assert (ours["score"], ours["mean"], ours["ci"], ours["n"]) == (
            theirs["score"], theirs["mean"], theirs["ci"], theirs["n"])
    p = figures["tests"]["bs"]["p_values"]
    assert [p[0][1], p[0][2]] == [expected[1]["p_value"], expected[2]["p_value"]]
    assert p[0][0] is None and p[1][2] == p[2][1]
    assert figures["signature"] == expected[0]["signature"]
    ar = corpus_score(*DE_EN_REFS, "-i", *corpus["systems"], "-m", label, "--paired-ar",
                      "--paired-ar-n", "500")
    assert [figures["tests"]["ar"]["p_values"][0][j] for j in (1, 2)] == [
        ar[1]["p_value"], ar[2]["p_value"]]


def test_every_pair_equals_corpus_score_with_that_pair(corpus, full):
    """The p-value of systems 2 and 3 is corpus-score's with system 2 as the baseline."""
    (_, second, third) = corpus["systems"]
    expected = corpus_score(*DE_EN_REFS, "-i", second, third, "-m", "bleu", "--paired-bs")
    assert metric(full, "bleu")["tests"]["bs"]["p_values"][1][2] == expected[1]["p_value"]


def test_groups_equal_corpus_score_groups_with_intervals(corpus, full):
    """Tagged groups are corpus-score --groups --confidence's; the untagged segments are
    scored as a group of their own (here compared with a groups file that tags them)."""
    tagged = Path(corpus["dir"]) / "tagged"
    tagged.write_text("\n".join(tag or "zzz" for tag in corpus["tags"]) + "\n")
    for label in ("bleu", "chrf"):
        expected = corpus_score(*DE_EN_REFS, "-i", *corpus["systems"], "-m", label,
                                "--groups", str(tagged), "--confidence")
        theirs = {(row["group"], row["system"]): row for row in expected if "group" in row}
        ours = [row for row in full["json"]["groups"] if row["metric"] == label]
        assert {row["group"] for row in ours} == {"news", "<b>web</b>", "(untagged)"}
        for row in ours:
            group = "zzz" if row["untagged"] else row["group"]
            system = corpus["systems"][corpus["names"].index(row["system"])]
            other = theirs[group, system]
            assert (row["score"], row["mean"], row["ci"], row["n"]) == (
                other["score"], other["mean"], other["ci"], other["n"])
        assert sum(row["n"] for row in ours if row["untagged"]) == 3 * corpus["tags"].count("")


def test_segment_scores_equal_sentence_level_scores(corpus, full):
    segments = full["json"]["segment_scores"]
    assert segments["systems"] == corpus["names"][:2]
    for label in ("bleu", "chrf"):
        rows = corpus_score(*DE_EN_REFS, "-i", *corpus["systems"][:2], "-m", label, "-sl")
        by_system = [[row["score"] for row in rows if row["system"] == system]
                     for system in corpus["systems"][:2]]
        assert segments["scores"][label] == by_system
    first, second = (np.array(x) for x in segments["scores"]["bleu"])
    difference = second - first
    assert [int(i) for i in segments["wins"]] == [
        i + 1 for i in np.argsort(-difference, kind="stable")[:10]]
    assert [int(i) for i in segments["losses"]] == [
        i + 1 for i in np.argsort(difference, kind="stable")[:10]]


def test_clusters_follow_the_p_values(full):
    for figures in full["json"]["metrics"]:
        p = figures["tests"]["bs"]["p_values"]
        names = [s["system"] for s in figures["scores"]]
        clusters = figures["clusters"]
        assert sorted(sum(clusters, [])) == sorted(names)
        for upper, lower in zip(clusters, clusters[1:]):
            # a line between clusters: everything above differs from everything below
            assert all(p[names.index(a)][names.index(b)] <= 0.05 for a in upper for b in lower)


def test_bootstrap_distributions_are_the_intervals_resamples(full):
    for figures in full["json"]["metrics"]:
        for row in figures["scores"]:
            values = np.sort(figures["bootstrap"][row["system"]])
            assert len(values) == 1000
            assert row["ci"] == pytest.approx(0.5 * (values[974] - values[25]), rel=1e-6)


# -- the page shows the JSON's figures ---------------------------------------------------

class Cells(HTMLParser):
    """The data-value of every cell of every table, by the table's attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: List[Dict[str, object]] = []
        self.scripts: List[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.tables.append({"attrs": attrs, "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th") and self.tables and "data-value" in attrs:
            self.tables[-1]["rows"][-1].append(attrs["data-value"])
        elif tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def parsed(page: str) -> Cells:
    cells = Cells()
    cells.feed(page)
    return cells


def number(text):
    return None if text == "" else float(text)


def test_the_pages_tables_hold_the_jsons_figures(full):
    cells = parsed(full["html"])
    report = full["json"]
    (scores,) = [t for t in cells.tables if t["attrs"].get("id") == "score-table"]
    rows = [row for row in scores["rows"] if row]
    assert [row[0] for row in rows] == report["systems"]
    for i, row in enumerate(rows):
        assert [float(value) for value in row[1:]] == [
            m["scores"][i]["score"] for m in report["metrics"]]
    for figures in report["metrics"]:
        for test, matrix in figures["tests"].items():
            (table,) = [t for t in cells.tables
                        if t["attrs"].get("data-test") == f"{test}-{figures['metric']}"]
            shown = [[number(value) for value in row] for row in table["rows"] if row]
            assert shown == matrix["p_values"]
        (groups,) = [t for t in cells.tables if t["attrs"].get("data-metric") == figures["metric"]]
        for row in (row for row in groups["rows"] if row):
            group, segments, *values = row
            expected = [g for g in report["groups"]
                        if g["metric"] == figures["metric"] and g["group"] == group]
            assert [float(v) for v in values] == [g["score"] for g in expected]
            assert float(segments) == expected[0]["n"]


def test_the_page_is_self_contained_and_runs_only_its_own_script(full):
    page = full["html"]
    cells = parsed(page)
    assert len(cells.scripts) == 1 and page.count("<script") == 1
    assert "__pwned" not in cells.scripts[0]
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(http" not in page
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)[1]
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy.split(
        "script-src")[1]
    assert page.count("<svg") == page.count("</svg>") >= 10


def test_every_input_text_is_escaped(full):
    page = full["html"]
    assert "5" in full["json"]["segment_scores"]["losses"]  # the hostile line is shown
    assert "<img src=x" not in page and "<b>web</b>" not in page and "<i>evil" not in page
    block = page[page.index('data-segment="5"'):]
    block = block[:block.index("</div>")]
    shown = [html.unescape(re.sub(r"<[^>]*>", "", text))
             for text in re.findall(r"<dd>(.*?)</dd>", block)]
    assert HOSTILE in shown  # as text, word for word
    assert "&lt;script&gt;window.__pwned" in block and "onerror=&quot;window" in block
    assert "&lt;b&gt;web&lt;/b&gt;" in page and "&lt;i&gt;evil&lt;/i&gt; &amp; co" in page
    assert "Quelle 4 &lt;s&gt;" in page
    assert "&amp;amp;" in page  # "&amp;" in a hypothesis is shown as typed


def test_wins_and_losses_show_the_texts_with_differences_marked(corpus, full):
    page = full["html"]
    segment = full["json"]["segment_scores"]["wins"][0]
    i = int(segment) - 1
    block = page[page.index(f'data-segment="{segment}"'):]
    block = block[:block.index("</div>")]
    assert f"Quelle {i} &lt;s&gt;" in block
    for path in DE_EN_REFS:
        assert read_lines(path)[i].replace("&", "&amp;").replace('"', "&quot;")[:20] in block
    assert "<mark>" in block


@pytest.mark.slow
def test_the_page_and_json_are_the_same_on_every_run(corpus, full):
    systems = [f"{name}={path}" for name, path in zip(corpus["names"], corpus["systems"])]
    again = run_report(corpus["dir"], *DE_EN_REFS, "-i", *systems, "--groups", corpus["groups"],
                       "--source", corpus["source"], "--paired-ar", "--paired-ar-n", "500",
                       name="again")
    assert again["html"] == full["html"] and again["json"] == full["json"]
    assert again["latex"] == full["latex"]


# -- compare-mt's analyses are compare-mt's ---------------------------------------------

def assert_comparemt_figures(report: dict, ref: str, outs: List[str], *options: str) -> None:
    """The report's compare-mt section equals compare-mt 0.2.10's default run."""
    theirs = by_kind(compare_mt_reports(ref, outs, *options))
    ours = report["comparemt"]
    names = report["systems"]
    assert [ours["bleu"][n] for n in names] == list(theirs["bleu"].scores)
    assert [ours["length_ratio"][n] for n in names] == list(theirs["lengthrat"].scores)
    words = theirs["words"]
    assert ours["word_accuracy"]["labels"] == list(words.bucketer.bucket_strs)
    for name, statistics in zip(names, words.statistics):
        mine = ours["word_accuracy"]["systems"][name]
        assert list(zip(mine["matches"], mine["ref_words"], mine["hyp_words"], mine["recall"],
                        mine["precision"], mine["fmeasure"])) == [tuple(s) for s in statistics]
    for key, kind in (("bleu_by_length", "sentence-length"),
                      ("length_diff", "sentence-lengthdiff"),
                      ("sentence_bleu", "sentence-sentbleu")):
        assert ours[key]["labels"] == list(theirs[kind].bucketer.bucket_strs)
        assert [ours[key]["values"][n] for n in names] == [list(v) for v in theirs[kind].sys_stats]
    (scorelist,) = theirs["ngrams"].scorelist
    scores = dict(scorelist)
    for entry in ours["ngrams"]["first_better"] + ours["ngrams"]["second_better"]:
        assert scores[tuple(entry["ngram"])] == entry["score"]
    assert [e["score"] for e in ours["ngrams"]["first_better"]] == [
        s for _, s in scorelist[:len(ours["ngrams"]["first_better"])]]


@pytest.mark.slow
def test_comparemt_analyses_equal_compare_mt_on_real_text(tmp_path):
    ref = str(DATA / "en-de.ref.A.de")
    outs = [str(DATA / "en-de.hyp.Online-A.de"), str(DATA / "en-de.hyp.JDExploreAcademy.de")]
    report = run_report(tmp_path, ref, "-i", *outs, "--names", "sys1,sys2")
    assert_comparemt_figures(report["json"], ref, outs)
    freq = str(DATA / "en-de.ref.B.de")  # it has non-breaking spaces
    report = run_report(tmp_path, ref, "-i", *outs, "--names", "sys1,sys2", "--freq-corpus", freq)
    assert_comparemt_figures(report["json"], ref, outs, "--compare_word_accuracies",
                             f"bucket_type=freq,freq_corpus_file={freq}")


@pytest.mark.slow
def test_comparemt_analyses_equal_compare_mt_with_nbsp_and_tabs(tmp_path):
    rows = [row for row in TRICKY if "\r" not in "".join(row)]
    assert any(NBSP in "".join(row) for row in rows) and any("\t" in "".join(row) for row in rows)
    paths = write_corpus(tmp_path, [[row[i] for row in rows] for i in range(4)])
    report = run_report(tmp_path, paths[0], "-i", *paths[1:], "--names", "sys1,sys2,sys3")
    assert_comparemt_figures(report["json"], paths[0], paths[1:])
    assert report["json"]["notes"] == []


def test_a_carriage_return_inside_a_segment_is_noted(tmp_path):
    ref, hyp = tmp_path / "ref", tmp_path / "hyp"
    ref.write_bytes(b"a b\rc d\ne f\n")
    hyp.write_bytes(b"a b c d\ne f\n")
    report = run_report(tmp_path, str(ref), str(hyp))
    assert "would take for a line break" in report["json"]["notes"][0]
    assert "would take for a line break" in report["html"]


def test_several_references_are_noted_for_comparemt(full):
    assert any("first reference" in note for note in full["json"]["notes"])


# -- LaTeX -------------------------------------------------------------------------------

def test_latex_tables_are_escaped_booktabs(full):
    tex = full["latex"]
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") == 1 + 2 * 2
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert r"\textless{}i\textgreater{}evil\textless{}/i\textgreater{} \& co" in tex
    assert "<i>" not in tex
    lines = [line for line in tex.splitlines() if line.startswith("Lan-Bridge &")]
    bleu = metric(full, "bleu")["scores"][2]
    assert f"{bleu['score']:.1f}" in lines[0]


@pytest.mark.parametrize("text, expected", [
    ("a_b & c%d $e #f", r"a\_b \& c\%d \$e \#f"),
    ("{x}~^\\", r"\{x\}\textasciitilde{}\textasciicircum{}\textbackslash{}"),
    ("line\nbreak\ttab", "line break tab"),
    ("Übersetzung 翻訳", "Übersetzung 翻訳"),
    ("chrf --word-order 2 ---", r"chrf -{}-word-order 2 -{}-{}-"),
])
def test_latex_escape(text, expected):
    from evalproto.reports.latex import latex_escape
    assert latex_escape(text) == expected


# -- from stats files --------------------------------------------------------------------

def test_a_report_from_stats_files_mixes_metrics_and_runs_the_ttest(corpus, tmp_path):
    stats = []
    rng = np.random.default_rng(3)
    comet = {}
    for name, path in zip(("A", "B", "C"), corpus["systems"]):
        stats.append(str(tmp_path / f"{name}.bleu.stats"))
        assert run_cli("stats", *DE_EN_REFS, path, "-m", "bleu", "--system", name,
                       "-o", stats[-1]).exit_code == 0
        comet[name] = rng.uniform(0.5, 0.9, 150).round(4)
        scores = tmp_path / f"{name}.comet"
        scores.write_text("".join(f"{float(x)!r}\n" for x in comet[name]))
        stats.append(str(tmp_path / f"{name}.comet.stats"))
        result = run_cli("import-scores", str(scores), "--metric", "COMET", "--system", name,
                         "-o", stats[-1])
        assert result.exit_code == 0, result.output
    report = run_report(tmp_path, "--stats", *stats, "--paired-ttest")
    figures = {m["name"]: m for m in report["json"]["metrics"]}
    assert set(figures) == {"BLEU", "COMET"} and report["json"]["comparemt"] is None
    expected = json_rows(run_cli("reduce", *stats[1::2], "--paired-bs", "-f", "json").output)
    assert [(s["score"], s["ci"]) for s in figures["COMET"]["scores"]] == [
        (row["score"], row["ci"]) for row in expected]
    ttest = figures["COMET"]["tests"]["ttest"]["p_values"]
    assert ttest[0][1] == pytest.approx(scipy_stats.ttest_rel(comet["A"], comet["B"]).pvalue,
                                        rel=1e-12)
    assert "not the mean of its segment scores" in figures["BLEU"]["refused"]["ttest"]
    assert "No paired t-test" in report["html"] and "compare-mt" not in report["html"].split(
        "<nav>")[1].split("</nav>")[0]
    assert report["json"]["segment_scores"]["wins"]  # sentence scores need no text


# -- usage and errors --------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--stats", "x.stats", "-i", "y"], "-i does not apply"),
    (["--stats", "x.stats", "-m", "bleu"], "-m does not apply"),
    ([*DE_EN_REFS, DE_EN_HYP, "--paired-ar"], "paired tests compare systems"),
    ([*DE_EN_REFS, "-i", DE_EN_HYP, DE_EN_HYP2, "--paired-ttest"],
     "is not the mean of its segment scores"),
])
def test_usage_errors(tmp_path, args, message):
    result = run_cli("report", *args, "-o", str(tmp_path / "r.html"))
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("make, message", [
    (lambda d: ["--source", str(d / "short")], "short has 2 lines but there are 150 segments"),
    (lambda d: ["--freq-corpus", str(d / "latin1")], "latin1: line 2: invalid UTF-8"),
    (lambda d: ["--groups", str(d / "bad-groups")], "line 2: the tag '(untagged)' is the "
                                                    "report's name"),
    (lambda d: ["--latex", str(d / "no" / "dir" / "r.tex")], "cannot write"),
])
def test_bad_inputs_are_errors_and_leave_no_file(tmp_path, make, message):
    (tmp_path / "short").write_text("a\nb\n")
    (tmp_path / "latin1").write_bytes(b"ok\ncaf\xe9\n")
    (tmp_path / "bad-groups").write_text("a\n(untagged)\n" + "a\n" * 148)
    result = run_cli("report", *DE_EN_REFS, DE_EN_HYP, *make(tmp_path), "-o",
                     str(tmp_path / "out.html"))
    assert result.exit_code == 1 and message in result.output, result.output
    if "--latex" not in make(tmp_path):
        assert not (tmp_path / "out.html").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_one_system_gets_scores_with_confidence_intervals(tmp_path):
    report = run_report(tmp_path, *DE_EN_REFS, DE_EN_HYP, "-m", "bleu")
    (expected,) = corpus_score(*DE_EN_REFS, DE_EN_HYP, "--confidence")
    (figures,) = report["json"]["metrics"]
    assert (figures["scores"][0]["score"], figures["scores"][0]["ci"]) == (
        expected["score"], expected["ci"])
    assert figures["tests"] == {} and report["json"]["segment_scores"] is None
    assert 'id="significance"' not in report["html"]


@pytest.mark.slow
def test_progress_reaches_every_phase():
    import evalproto
    from evalproto.reports.html import plot_count

    phases = []

    class Recorder:
        def start(self, label, total):
            phase = {"label": label, "total": total, "done": 0}
            phases.append(phase)
            return self._Phase(phase)

        class _Phase:
            def __init__(self, phase):
                self.phase = phase

            def advance(self, count=1):
                self.phase["done"] += count

            def close(self):
                self.phase["closed"] = True

    corpus = evalproto.read_corpus(DE_EN_REFS, [DE_EN_HYP, DE_EN_HYP2])
    report = evalproto.report_corpus(corpus, progress=Recorder())
    page = evalproto.format_report(report, "html", progress=Recorder())
    labels = [phase["label"] for phase in phases]
    assert "scoring bleu" in labels and "compare-mt analyses" in labels
    assert any(label.startswith("resampling: bleu") for label in labels)
    plots = next(phase for phase in phases if phase["label"] == "drawing plots")
    assert plots["total"] == plot_count(report) == page.count("<figure") == plots["done"]
    assert all(phase.get("closed") for phase in phases)


def test_a_datasets_tags_are_the_groups(tmp_path):
    refs, hyps = read_lines(DE_EN_REFS[0])[:30], read_lines(DE_EN_HYP)[:30]
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text("".join(json.dumps({"id": f"x{i}", "answer": ref,
                                           "tags": ["odd"] if i % 2 else []}) + "\n"
                               for i, ref in enumerate(refs)))
    predictions = []
    for name, lines in (("a", hyps), ("b", hyps[::-1])):
        predictions.append(tmp_path / f"{name}.jsonl")
        predictions[-1].write_text("".join(json.dumps({"id": f"x{i}", "pred": hyp}) + "\n"
                                           for i, hyp in enumerate(lines)))
    report = run_report(tmp_path, "--data-format", "dynabench", str(dataset), "-i",
                        *(f"{p.stem}={p}" for p in predictions), "-m", "bleu")
    groups = {(g["group"], g["system"]): g["n"] for g in report["json"]["groups"]}
    assert groups == {("odd", "a"): 15, ("odd", "b"): 15, ("(untagged)", "a"): 15,
                      ("(untagged)", "b"): 15}


def test_a_file_name_that_is_not_utf8_names_a_system(tmp_path):
    """Its undecodable bytes are shown escaped in the page and its plots; the JSON holds
    the name as JSON escapes (which read back to the same string)."""
    name = b"sys\xff.txt".decode("utf-8", "surrogateescape")
    (tmp_path / name).write_text(open(DE_EN_HYP2).read())
    report = run_report(tmp_path, *DE_EN_REFS, "-i", DE_EN_HYP, str(tmp_path / name),
                        "-m", "bleu")
    assert "sys\\udcff.txt" in report["html"] and "<svg" in report["html"]
    assert report["json"]["systems"][1] == str(tmp_path / name)


@pytest.mark.slow
def test_systems_named_by_long_paths_keep_distinct_labels_in_plots(tmp_path):
    """Files in one long directory differ at the end of their paths: a plot's label
    keeps both ends."""
    folder = tmp_path / ("a-long-directory-name-" * 3)
    folder.mkdir()
    systems = []
    for name, path in (("JDExploreAcademy", DE_EN_HYP), ("Online-A", DE_EN_HYP2)):
        systems.append(str(folder / f"de-en.hyp.{name}.en"))
        Path(systems[-1]).write_text(Path(path).read_text())
    page = run_report(tmp_path, *DE_EN_REFS, "-i", *systems)["html"]
    names = {label for label in re.findall(r"<text [^>]*>([^<]*…[^<]*)</text>", page)
             if " " not in label}  # the systems' own labels (in legends and axes)
    assert {label[-10:] for label in names} == {"Academy.en", "nline-A.en"}, names


def test_the_help_gives_the_reports_own_default_metrics():
    result = run_cli("report", "--help")
    assert "The default is bleu and chrf." in " ".join(result.output.split())

"""import-scores: segment scores computed elsewhere become stats files of the `mean`
metric, which reduce like any other: mean, intervals, paired tests, groups. Every
format's bad lines are errors that name the file and the line."""

import json
import math

import numpy as np
import pytest
from conftest import json_rows, run_cli, script, serve

rng = np.random.default_rng(11)
A = rng.uniform(0.2, 0.98, 120).round(4)
B = (A + rng.normal(0.01, 0.04, 120)).round(4)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return str(path)


def import_scores(tmp_path, source, *options, system="A", out="out.stats"):
    result = run_cli("import-scores", source, "--metric", "COMET", "--system", system,
                     "-o", str(tmp_path / out), *options)
    return result, str(tmp_path / out)


def comet_output(files, scores, saved=False, variance=False):
    """comet-score's printout (COMET 2.x, score.py): segment lines across the files,
    segment by segment, then one system score line per file."""
    lines = []
    for i in range(len(scores[0])):
        for name, values in zip(files, scores):
            extra = "\tvariance: 0.0012" if variance else ""
            lines.append(f"{name}\tSegment {i}\tscore: {values[i]:.4f}{extra}")
    lines += [f"{name}\tscore: {sum(values) / len(values):.4f}"
              for name, values in zip(files, scores)]
    if saved:
        lines.append("Predictions saved in: out.json.")
    return "\n".join(lines) + "\n"


def test_plain_scores_reduce_to_their_mean_with_an_interval(tmp_path):
    source = write(tmp_path, "a.txt", "".join(f"{x!r}\n" for x in A.tolist()))
    result, stats = import_scores(tmp_path, source, "--signature", "wmt22-comet-da|v2.2")
    assert result.exit_code == 0, result.output
    header = json.loads(open(stats).readline().split(" ", 1)[1])
    assert header["system"] == "A" and header["segments"] == 120
    (metric,) = header["metrics"]
    assert metric["stat_names"] == ["sum", "sumsq", "count"] and metric["higher_is_better"]
    assert metric["spec"] == "mean COMET --signature 'wmt22-comet-da|v2.2'"
    (row,) = json_rows(run_cli("reduce", stats, "--confidence", "-f", "json").output)
    assert row["score"] == pytest.approx(A.mean(), rel=1e-13)
    assert row["stats"][2] == 120 and row["n"] == 120
    assert 0 < row["ci"] < 0.1 and row["mean"] == pytest.approx(A.mean(), abs=0.01)
    # a "|" inside a value is escaped, so that it stays one field of the signature
    assert "mean:COMET|of:wmt22-comet-da\\|v2.2|version:" in row["signature"]


def test_imported_means_show_the_decimals_that_tell_them_apart(tmp_path):
    """COMET's means printed 0.5 and 0.6 at the default width (-w 1): they get two
    more decimals, as WER does; --extra-decimals says otherwise."""
    paths = []
    for name, values in (("A", A), ("B", B)):
        source = write(tmp_path, f"{name}.txt", "".join(f"{x!r}\n" for x in values.tolist()))
        result, path = import_scores(tmp_path, source, system=name, out=f"{name}.stats")
        assert result.exit_code == 0, result.output
        paths.append(path)
    lines = run_cli("reduce", *paths).output.splitlines()
    assert [line.split()[-1] for line in lines[1:3]] == [f"{A.mean():.3f}", f"{B.mean():.3f}"]
    import evalproto
    assert evalproto.info("mean COMET")["extra_decimals"] == 2
    assert evalproto.info("mean DA --extra-decimals 0")["extra_decimals"] == 0


def test_imported_systems_get_paired_tests_and_groups(tmp_path):
    stats = []
    for name, values in (("A", A), ("B", B)):
        source = write(tmp_path, f"{name}.txt", "".join(f"{x!r}\n" for x in values.tolist()))
        result, path = import_scores(tmp_path, source, system=name, out=f"{name}.stats")
        assert result.exit_code == 0, result.output
        stats.append(path)
    groups = write(tmp_path, "groups", "".join("x\n" if i < 50 else "y\n" for i in range(120)))
    for test in ("--paired-bs", "--paired-ar"):
        rows = json_rows(run_cli("reduce", *stats, test, "--groups", groups, "-f",
                                 "json").output)
        assert [(r["system"], r.get("group")) for r in rows] == [
            ("A", None), ("B", None), ("A", "x"), ("B", "x"), ("A", "y"), ("B", "y")]
        assert 0 < rows[1]["p_value"] <= 1
        assert rows[3]["score"] == pytest.approx(B[:50].mean(), rel=1e-13)


def test_jsonl_scores_are_read_from_a_field(tmp_path):
    source = write(tmp_path, "a.jsonl", "".join(
        json.dumps({"id": i, "metricx": x, "text": "<x>"}) + "\n" for i, x in enumerate(A)))
    result, stats = import_scores(tmp_path, source, "--field", "metricx", "--lower-is-better")
    assert result.exit_code == 0, result.output
    (row,) = json_rows(run_cli("reduce", stats, "-f", "json").output)
    assert row["score"] == pytest.approx(A.mean(), rel=1e-13)
    assert row["higher_is_better"] is False and "|lower:yes|" in row["signature"]


@pytest.mark.parametrize("options", [(), ("--field", "hyp.de")])
def test_comet_score_output_is_read(tmp_path, options):
    text = comet_output(["hyp.de"], [A.tolist()], saved=True)
    result, stats = import_scores(tmp_path, write(tmp_path, "comet.txt", text), *options)
    assert result.exit_code == 0, result.output
    (row,) = json_rows(run_cli("reduce", stats, "-f", "json").output)
    assert row["score"] == pytest.approx(np.round(A, 4).mean(), rel=1e-13)


def test_comet_score_output_of_several_files_is_read_file_by_file(tmp_path):
    text = comet_output(["a.de", "b.de"], [A.tolist(), B.tolist()], variance=True)
    source = write(tmp_path, "comet.txt", text)
    result, _ = import_scores(tmp_path, source)
    assert result.exit_code == 1 and "holds the scores of 2 files ('a.de', 'b.de')" in result.output
    assert "--field" in result.output
    result, stats = import_scores(tmp_path, source, "--field", "b.de")
    assert result.exit_code == 0, result.output
    (row,) = json_rows(run_cli("reduce", stats, "-f", "json").output)
    assert row["score"] == pytest.approx(B.mean(), rel=1e-13)


def test_mean_metric_scores_numbers_as_hypotheses(tmp_path):
    """The same metric in process (-m mean) and as a console script over the protocol."""
    ref = write(tmp_path, "ref", "x\n" * 5)
    hyp = write(tmp_path, "hyp", "0.5\n1\n-2.25\n3e-1\n0\n")
    (row,) = json_rows(run_cli("corpus-score", ref, hyp, "-m", "mean COMET", "-f", "json").output)
    assert row["score"] == pytest.approx((0.5 + 1 - 2.25 + 0.3) / 5, rel=1e-15)
    served = serve([script("mean-evaluator"), "COMET"],
                   "SCORE ||| x ||| 0.5\nSCORE ||| x ||| -2\nEVAL ||| -1.5 4.25 2\nINFO\n")
    lines = served.stdout.decode().splitlines()
    assert lines[:3] == ["0.5 0.25 1", "-2 4 1", "-0.75"]
    assert json.loads(lines[3])["signature"].startswith("mean:COMET|version:")
    bad = run_cli("corpus-score", ref, write(tmp_path, "words", "a\n" * 5), "-m", "mean")
    assert bad.exit_code == 1 and "is not a number" in bad.output


@pytest.mark.parametrize("text, options, message", [
    ("0.5\n0.25\nabc\n", (), "line 3: expected one number (a segment score) per line, "
                            "found a line that is not a finite number: 'abc'"),
    ("0.5\n\n0.25\n", (), "line 2: expected one number (a segment score) per line, found "
                         "an empty line"),
    ("0.5\nnan\n", (), "line 2: expected one number"),
    ("1e999\n", (), "line 1: expected one number (a segment score) per line, found a line "
                   "that overflows a double"),
    ("١٢\n", (), "line 1: expected one number"),
    ('{"score": 0.5}\n', (), "(a JSON Lines file needs --field)"),
    ("", (), "file is empty; expected one segment score per line"),
    (b"0.5\n\xff\n", (), "line 2: invalid UTF-8"),
    ("1e200\n", (), "line 1: the score 1e+200 cannot be averaged: its square overflows"),
    ('{"s": 0.5}\n{"s": true}\n', ("--field", "s"), "line 2: the field 's' holds true; "
                                                   "expected a finite number"),
    ('{"s": 0.5}\n{"s": NaN}\n', ("--field", "s"), "line 2: the field 's' holds"),
    ('{"s": 0.5}\n{"t": 1}\n', ("--field", "s"), "line 2: no field 's' (the object's "
                                                "fields: 't')"),
    ('{"s": 0.5}\n[1]\n', ("--field", "s"), "line 2: expected a JSON object"),
    ('{"s": 0.5}\n{"s": \n', ("--field", "s"), "line 2: not JSON"),
    ('{"s": "0.5"}\n', ("--field", "s"), "line 1: the field 's' holds \"0.5\""),
])
def test_bad_scores_are_errors_naming_file_and_line(tmp_path, text, options, message):
    source = write(tmp_path, "scores", text)
    result, stats = import_scores(tmp_path, source, *options)
    assert result.exit_code == 1 and f"Error: {source}: " in result.output
    assert message in result.output
    assert not (tmp_path / "out.stats").exists()


@pytest.mark.parametrize("edit, message", [
    (lambda lines: lines[:-1], "no system score line for h.de; was it cut short?"),
    (lambda lines: lines[:3] + lines[4:], "line 4: segment 4 of h.de, but segment 3 comes next"),
    (lambda lines: [lines[0].replace("score: ", "score: 9")] + lines[1:],
     "segment scores of h.de average"),
    (lambda lines: lines[:2] + ["Lightning automatically upgraded"] + lines[2:],
     "line 3: not a line of comet-score's output"),
    (lambda lines: [lines[0].replace("0.", "x.", 1)] + lines[1:],
     "line 1: the score is not a finite number"),
])
def test_broken_comet_output_is_refused(tmp_path, edit, message):
    lines = comet_output(["h.de"], [A[:10].tolist()]).splitlines()
    source = write(tmp_path, "comet.txt", "\n".join(edit(lines)) + "\n")
    result, _ = import_scores(tmp_path, source)
    assert result.exit_code == 1 and message in result.output, result.output


def test_comet_output_of_an_unknown_file_is_refused(tmp_path):
    source = write(tmp_path, "comet.txt", comet_output(["h.de"], [A[:3].tolist()]))
    result, _ = import_scores(tmp_path, source, "--field", "other.de")
    assert result.exit_code == 1 and "has no scores of 'other.de'; it has 'h.de'" in result.output


def test_scores_of_other_signatures_are_not_reduced_together(tmp_path):
    source = write(tmp_path, "a.txt", "0.5\n0.75\n")
    _, first = import_scores(tmp_path, source, "--signature", "model-1", out="1.stats")
    _, second = import_scores(tmp_path, source, "--signature", "model-2", system="B",
                              out="2.stats")
    result = run_cli("reduce", first, second)
    assert result.exit_code == 1 and "stats files disagree on metrics" in result.output


def test_impossible_rows_in_an_edited_stats_file_are_refused(tmp_path):
    _, stats = import_scores(tmp_path, write(tmp_path, "a.txt", "0.5\n0.75\n"))
    text = open(stats).read().replace("\t0.75\t0.5625\t1\n", "\t0.75\t0.5625\t2\n")
    edited = write(tmp_path, "edited.stats", text)
    result = run_cli("reduce", edited)
    assert result.exit_code == 1 and "line 4" in result.output and "count == 1" in result.output


@pytest.mark.parametrize("metric", ["", "a\tb"])
def test_a_metric_needs_a_name(tmp_path, metric):
    result = run_cli("import-scores", write(tmp_path, "a.txt", "0.5\n"), "--metric", metric,
                     "--system", "A", "-o", str(tmp_path / "x.stats"))
    assert result.exit_code == 2 and "--metric must name the metric" in result.output


def test_std_of_imported_scores_is_in_the_details():
    from evalproto.evaluators.mean import Mean
    details = Mean().details(np.array([A.sum(), (A * A).sum(), len(A)]))
    assert details["n"] == 120 and math.isclose(details["std"], A.std(ddof=1), rel_tol=1e-9)

"""Stats files and reduce: shards add up to exactly the whole corpus, and nothing that
would not add up is merged."""

import csv
import json
import re
from pathlib import Path

import pytest
from conftest import DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS, json_rows, read_lines, run_cli, script
from sacrebleu.metrics import BLEU as SacreBLEU

from evalproto.readers.statsfiles import read_stats

BOUNDS = [(0, 50), (50, 100), (100, 150)]


def shard(tmp_path, hyp, spec="bleu", kind="-m", name="system"):
    """Stats files of three shards of `hyp` against the de-en references."""
    paths = []
    for number, (start, end) in enumerate(BOUNDS, 1):
        files = []
        for path in [*DE_EN_REFS, hyp]:
            part = tmp_path / f"{path.rsplit('/', 1)[-1]}.{number}"
            part.write_text("".join(line + "\n" for line in read_lines(path)[start:end]))
            files.append(str(part))
        output = tmp_path / f"{name}.{re.sub(r'[^a-z]+', '_', spec)}.{number}.stats"
        result = run_cli("stats", *files, kind, spec, "-o", str(output), "--system", name,
                         "--first-id", str(start + 1))
        assert result.exit_code == 0, result.output
        paths.append(str(output))
    return paths


def whole(*args):
    result = run_cli("corpus-score", *DE_EN_REFS, *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json_rows(result.output)


@pytest.mark.parametrize("spec", ["bleu", "chrf -cw 2", "ter"])
def test_three_shards_reduce_to_the_whole_corpus(tmp_path, spec):
    result = run_cli("reduce", *shard(tmp_path, DE_EN_HYP, spec), "-f", "json")
    assert result.exit_code == 0, result.output
    (reduced,) = json_rows(result.output)
    (expected,) = whole(DE_EN_HYP, "-m", spec)
    assert reduced["stats"] == expected["stats"]
    assert reduced["score"] == expected["score"]
    assert reduced["signature"] == expected["signature"] and reduced["n"] == 150


def test_reduce_runs_paired_tests_and_groups_as_corpus_score_does(tmp_path):
    files = shard(tmp_path, DE_EN_HYP, name="LT22") + shard(tmp_path, DE_EN_HYP2,
                                                               name="Lan-Bridge")
    groups = tmp_path / "groups"
    groups.write_text("".join("odd\n" if i % 2 else "even\n" for i in range(150)))
    options = ["--paired-bs", "--paired-bs-n", "300", "--groups", str(groups)]
    reduced = json_rows(run_cli("reduce", *files, *options, "-f", "json").output)
    expected = whole("-i", DE_EN_HYP, "-i", DE_EN_HYP2, *options)
    assert len(reduced) == len(expected) == 6
    for ours, theirs in zip(reduced, expected):
        for key in ("score", "mean", "ci", "p_value", "stats", "n", "group", "signature"):
            assert ours.get(key) == theirs.get(key), key


@pytest.mark.slow
def test_shards_of_an_external_evaluator_reduce_with_the_command_the_user_names(tmp_path):
    files = shard(tmp_path, DE_EN_HYP, spec=script("bleu-evaluator"), kind="-e")
    refused = run_cli("reduce", *files)
    assert refused.exit_code == 2
    assert "evalproto runs no command named in data" in refused.output
    assert f"name the command yourself in --evaluator: {script('bleu-evaluator')}" in refused.output
    (reduced,) = json_rows(run_cli("reduce", *files, "-e", script("bleu-evaluator"),
                                   "-f", "json").output)
    (expected,) = whole(DE_EN_HYP)
    assert reduced["score"] == expected["score"] and reduced["stats"] == expected["stats"]


def test_files_of_different_signatures_are_refused(tmp_path):
    plain = shard(tmp_path, DE_EN_HYP, "bleu")
    lowercased = shard(tmp_path, DE_EN_HYP, "bleu --lowercase")
    result = run_cli("reduce", plain[0], plain[1], lowercased[2])
    assert result.exit_code == 1
    assert "stats files disagree on metrics" in result.output
    assert "only shards of the same metrics with the same signatures" in result.output


@pytest.mark.parametrize("command", ["reduce", "report"])
def test_a_paired_test_of_one_system_is_the_one_rule_everywhere(tmp_path, command):
    """Four checks said it four ways; Analysis and the report say it once."""
    files = shard(tmp_path, DE_EN_HYP)
    args = [*files, "--paired-ar"] if command == "reduce" else [
        "--stats", *files, "--paired-ar", "-o", str(tmp_path / "page.html")]
    result = run_cli(command, *args)
    assert result.exit_code == 2
    assert ("paired tests compare systems: give two or more (the first is the baseline), "
            "not 1") in result.output


def test_files_that_differ_in_one_field_say_which(tmp_path):
    """Only higher_is_better differs: the message showed the same signature twice."""
    first, second, _ = shard(tmp_path, DE_EN_HYP)
    text = Path(second).read_text().replace('"higher_is_better": true',
                                            '"higher_is_better": false')
    Path(second).write_text(text)
    result = run_cli("reduce", first, second)
    assert result.exit_code == 1
    assert (f"stats files disagree on metrics: {first} has 'bleu' with higher_is_better true "
            f"but {second} has 'bleu' with higher_is_better false") in result.output


def test_a_sum_beyond_a_double_names_the_files(tmp_path):
    files = shard(tmp_path, DE_EN_HYP)
    for path in files:
        lines = Path(path).read_text().splitlines(True)
        Path(path).write_text("".join(lines[:2] + [
            line.split("\t", 1)[0] + "\t1e308" * 10 + "\n" for line in lines[2:]]))
    result = run_cli("reduce", *files)
    assert result.exit_code == 1
    assert (f"Error: {', '.join(files)}: system 'system', bleu: the statistic hyp_len adds up "
            f"beyond the largest number a double holds") in result.output


def test_overlapping_shards_are_refused(tmp_path):
    files = shard(tmp_path, DE_EN_HYP)
    result = run_cli("reduce", files[0], files[0], files[1])
    assert result.exit_code == 1
    assert (f"segment id '1' of system 'system' is in {files[0]} and in {files[0]}"
            in result.output)


def test_systems_with_different_segments_are_refused(tmp_path):
    first = shard(tmp_path, DE_EN_HYP, name="a")
    second = shard(tmp_path, DE_EN_HYP2, name="b")
    result = run_cli("reduce", *first, *second[:2])
    assert result.exit_code == 1 and "systems 'a' and 'b' cover different segments" in result.output


def test_the_format_is_plain_tab_separated_text(tmp_path):
    (path, *_) = shard(tmp_path, DE_EN_HYP)
    with open(path, newline="") as stream:
        header_line = stream.readline()
        rows = list(csv.reader(stream, delimiter="\t"))
    assert header_line.startswith("#evalproto-stats {")
    assert rows[0][:3] == ["id", "hyp_len", "ref_len"] and len(rows) == 51
    assert rows[1][0] == "1" and all(value.isdigit() for value in rows[1])
    stats_file = read_stats(path)
    assert [metric.spec for metric in stats_file.metrics] == ["bleu"]
    assert stats_file.nrefs == 2 and stats_file.ids[0] == "1" and stats_file.ids[-1] == "50"


@pytest.mark.parametrize("damage, message", [
    (lambda text: text.replace("#evalproto-stats", "#something"), "line 1: not an evalproto stats"),
    (lambda text: text[:text.rindex("\n", 0, -1) + 1],
     "the file is incomplete: its header announces 50 segments (ids 1 to 50), but it holds "
     "49 (ids 1 to 49); was it cut short?"),
    # the last digit and the line end lost: the row still parses, with another number
    (lambda text: text[:-2], "the file is incomplete: its last line has no line end"),
    (lambda text: text.replace("\n1\t", "\n1\tx"), "line 3: number 1 is not a finite number"),
    (lambda text: text.replace("\tcorrect_1", "\tcorrect_one"),
     "line 2: expected the column names"),
    # its rows reversed: not cut short (it was called so), but out of order
    (lambda text: "".join(text.splitlines(True)[:2] + text.splitlines(True)[2:][::-1]),
     "its header announces 50 segments (ids 1 to 50), but its lines run from id 50 to 1: "
     "they are not in the order the file was written in"),
    (lambda text: text + text.splitlines(True)[-1].replace("50\t", "51\t", 1),
     "its header announces 50 segments (ids 1 to 50), but it holds 51 (ids 1 to 51): lines "
     "were added after it was written"),
])
def test_damaged_stats_files_are_named(tmp_path, damage, message):
    (path, *_) = shard(tmp_path, DE_EN_HYP)
    with open(path) as stream:
        text = stream.read()
    with open(path, "w") as stream:
        stream.write(damage(text))
    result = run_cli("reduce", path)
    assert result.exit_code == 1
    assert f"{path}: {message}" in result.output


def test_a_failed_stats_run_leaves_no_file(tmp_path):
    output = tmp_path / "out.stats"
    result = run_cli("stats", *DE_EN_REFS, DE_EN_HYP, "-e", "no-such-evaluator", "-o", str(output))
    assert result.exit_code == 1 and not output.exists()
    assert list(tmp_path.iterdir()) == []


def test_several_metrics_in_one_stats_file_and_one_reduce(tmp_path):
    specs = ["bleu", "chrf -cw 2", "ter"]
    files = []
    for number, (start, end) in enumerate(BOUNDS, 1):
        paths = []
        for path in [*DE_EN_REFS, DE_EN_HYP]:
            part = tmp_path / f"{path.rsplit('/', 1)[-1]}.{number}"
            part.write_text("".join(line + "\n" for line in read_lines(path)[start:end]))
            paths.append(str(part))
        args = [arg for spec in specs for arg in ("-m", spec)]
        result = run_cli("stats", *paths, *args, "-o", "-", "--first-id", str(start + 1),
                         "--system", "mt")
        assert result.exit_code == 0, result.output
        files.append(tmp_path / f"{number}.stats")
        files[-1].write_text(result.output)  # -o - is standard output
    header = files[0].read_text().splitlines()[1].split("\t")
    assert header[:3] == ["id", "bleu.hyp_len", "bleu.ref_len"] and "ter.edits" in header
    reduced = json_rows(run_cli("reduce", *map(str, files), "-f", "json").output)
    expected = whole(DE_EN_HYP, *[arg for spec in specs for arg in ("-m", spec)])
    assert [(row["metric"], row["score"], row["stats"]) for row in reduced] == [
        (row["metric"], row["score"], row["stats"]) for row in expected]


def test_a_file_from_another_evalproto_version_is_refused(tmp_path):
    (path, *_) = shard(tmp_path, DE_EN_HYP)
    with open(path) as stream:
        text = stream.read()
    with open(path, "w") as stream:
        stream.write(text.replace("version:evalproto-", "version:evalproto-0.0.0-old-", 1))
    result = run_cli("reduce", path)
    assert result.exit_code == 1
    assert "their scores would not be comparable" in result.output


def test_a_command_in_a_stats_file_is_never_run(tmp_path):
    """A stats file may come from anyone: its header names a command, but reduce runs
    only what the user names on the command line."""
    (path, *_) = shard(tmp_path, DE_EN_HYP, spec=script("bleu-evaluator"), kind="-e")
    planted = tmp_path / "planted"
    text = Path(path).read_text()
    Path(path).write_text(text.replace(json.dumps(script("bleu-evaluator")),
                                       json.dumps(f"touch {planted}"), 1))
    result = run_cli("reduce", path, "--partial")
    assert result.exit_code == 2 and f"yourself in --evaluator: 'touch {planted}'" in result.output
    assert not planted.exists()


def test_shards_in_another_order_get_their_own_groups(tmp_path):
    files = shard(tmp_path, DE_EN_HYP)
    groups = tmp_path / "groups"
    groups.write_text("".join("first\n" if i < 50 else "rest\n" for i in range(150)))
    in_order = run_cli("reduce", *files, "--groups", str(groups), "-f", "json")
    shuffled = run_cli("reduce", files[2], files[0], files[1], "--groups", str(groups),
                       "-f", "json")
    assert shuffled.exit_code == 0, shuffled.output
    assert json_rows(shuffled.output) == json_rows(in_order.output)
    expected = whole(DE_EN_HYP, "--groups", str(groups))
    assert [(row.get("group"), row["stats"]) for row in json_rows(shuffled.output)] == [
        (row.get("group"), row["stats"]) for row in expected]


@pytest.mark.parametrize("kept, missing", [((0, 2), "51-100"), ((1, 2), "1-50")])
def test_a_missing_shard_is_an_error_unless_partial(tmp_path, kept, missing):
    files = shard(tmp_path, DE_EN_HYP)
    given = [files[i] for i in kept]
    result = run_cli("reduce", *given)
    assert result.exit_code == 1
    assert f"segments {missing} of system 'system' are in no stats file given" in result.output
    partial = run_cli("reduce", *given, "--partial", "-f", "json")
    (row,) = json_rows(partial.output)
    lines = [line for i in kept for line in range(*BOUNDS[i])]
    refs = [read_lines(path) for path in DE_EN_REFS]
    hyps = read_lines(DE_EN_HYP)
    expected = SacreBLEU().corpus_score([hyps[i] for i in lines],
                                        [[ref[i] for i in lines] for ref in refs])
    assert row["n"] == 100 and row["score"] == expected.score


@pytest.mark.slow
@pytest.mark.parametrize("flag, spec, kind", [("-m", "chrf", "metric"),
                                              ("-e", "bleu-evaluator", "evaluator")])
def test_format_1_files_are_still_read(tmp_path, flag, spec, kind):
    """Format 1 held one metric, its fields at the top of the header, with the kinds
    then named "metric" (in process) and "evaluator" (a command)."""
    command = script(spec) if flag == "-e" else spec
    files = shard(tmp_path, DE_EN_HYP, spec=command, kind=flag)
    for path in files:
        first, rest = Path(path).read_text().split("\n", 1)
        header = json.loads(first.split(" ", 1)[1])
        (metric,) = header.pop("metrics")
        header.update(format=1, metric=metric["spec"], kind=kind, name=spec,
                      signature=metric["signature"], stat_names=metric["stat_names"],
                      higher_is_better=metric["higher_is_better"])
        Path(path).write_text(f"#evalproto-stats {json.dumps(header)}\n{rest}")
    named = ["-e", command] if flag == "-e" else []
    result = run_cli("reduce", *named, *files, "-f", "json")
    assert result.exit_code == 0, result.output
    assert json_rows(result.output)[0]["score"] == whole(DE_EN_HYP, flag, command)[0]["score"]
    if flag == "-e":
        assert run_cli("reduce", *files).exit_code == 2  # no command named in data is run


@pytest.mark.parametrize("edit, message", [
    (lambda h: h.pop("system"), "the header's 'system' must be the system's name, found nothing"),
    (lambda h: h.update(segments="50"), "the header's 'segments' must be a number of segments, "
                                        "found \"50\""),
    (lambda h: h.update(nrefs=None), "the header's 'nrefs' must be a number of references"),
    (lambda h: h["metrics"][0].update(stat_names=None), "'stat_names' must be a non-empty list"),
    (lambda h: h["metrics"][0].pop("signature"), "'signature' must be a signature, found nothing"),
    (lambda h: h["metrics"][0].update(kind="shell"), "'kind' must be 'in-process' or 'command'"),
    (lambda h: h.update(metrics=[]), "'metrics' must be a non-empty list of metrics"),
    (lambda h: h.update(ids=["1"]), "'ids' must be the first and last segment ids"),
    (lambda h: h["metrics"].__setitem__(0, "bleu"), "each of the header's 'metrics' must be"),
])
def test_a_hand_edited_header_is_an_error_that_names_the_key(tmp_path, edit, message):
    (path, *_) = shard(tmp_path, DE_EN_HYP)
    first, rest = Path(path).read_text().split("\n", 1)
    header = json.loads(first.split(" ", 1)[1])
    edit(header)
    Path(path).write_text(f"#evalproto-stats {json.dumps(header)}\n{rest}")
    result = run_cli("reduce", path, "--partial")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{path}: line 1: " in result.output and message in result.output


@pytest.mark.parametrize("row, rule", [
    ("5\t5\t9\t2\t1\t0\t5\t4\t3\t2", "correct_1 <= total_1"),  # more matches than n-grams
    ("5\t-3\t4\t2\t1\t0\t5\t4\t3\t2", "every statistic is a count"),  # a negative length
    ("5\t5\t4\t2\t1\t0\t5\t4\t3\t9", "total_4 <= total_3"),
    ("5\t5\t4\t2\t1\t0\t5\t4\t3\t1", "total_4 == max(hyp_len - 3, 0)"),
])
def test_impossible_rows_are_refused(tmp_path, row, rule):
    (path, *_) = shard(tmp_path, DE_EN_HYP)
    lines = Path(path).read_text().split("\n")
    lines[3] = lines[3].split("\t", 1)[0] + "\t" + row
    Path(path).write_text("\n".join(lines))
    result = run_cli("reduce", path, "--partial")
    assert result.exit_code == 1
    assert (f"{path}: line 4: these bleu statistics are impossible: they break {rule}"
            in result.output)

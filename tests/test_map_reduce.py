"""Stats files and reduce: shards add up to exactly the whole corpus, and nothing that
would not add up is merged."""

import csv
import re

import pytest

from conftest import DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS, json_rows, read_lines, run_cli, script
from evalproto.statsfile import read_stats

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


def test_shards_of_an_external_evaluator_reduce_too(tmp_path):
    files = shard(tmp_path, DE_EN_HYP, spec=script("bleu-evaluator"), kind="-e")
    (reduced,) = json_rows(run_cli("reduce", *files, "-f", "json").output)
    (expected,) = whole(DE_EN_HYP)
    assert reduced["score"] == expected["score"] and reduced["stats"] == expected["stats"]


def test_files_of_different_signatures_are_refused(tmp_path):
    plain = shard(tmp_path, DE_EN_HYP, "bleu")
    lowercased = shard(tmp_path, DE_EN_HYP, "bleu --lowercase")
    result = run_cli("reduce", plain[0], plain[1], lowercased[2])
    assert result.exit_code == 1
    assert "stats files disagree on metric" in result.output
    assert "only shards of one metric with one signature can be reduced together" in result.output


def test_overlapping_shards_are_refused(tmp_path):
    files = shard(tmp_path, DE_EN_HYP)
    result = run_cli("reduce", files[0], files[0], files[1])
    assert result.exit_code == 1
    assert "segment id '1' of system 'system' appears in more than one shard" in result.output


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
    header = read_stats(path).header
    assert header["metric"] == "bleu" and header["nrefs"] == 2 and header["ids"] == ["1", "50"]


@pytest.mark.parametrize("damage, message", [
    (lambda text: text.replace("#evalproto-stats", "#something"), "line 1: not an evalproto stats"),
    (lambda text: text[:text.rindex("\n", 0, -1) + 1], "has 49 segments but its header says 50"),
    (lambda text: text.replace("\n1\t", "\n1\tx"), "line 3: number 1 is not a finite number"),
    (lambda text: text.replace("\tcorrect_1", "\tcorrect_one"), "line 2: expected the column names"),
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


def test_stats_takes_exactly_one_metric(tmp_path):
    result = run_cli("stats", *DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "-m", "chrf",
                     "-o", str(tmp_path / "x"))
    assert result.exit_code == 2 and "a stats file holds one metric" in result.output


def test_a_file_from_another_evalproto_version_is_refused(tmp_path):
    (path, *_) = shard(tmp_path, DE_EN_HYP)
    with open(path) as stream:
        text = stream.read()
    with open(path, "w") as stream:
        stream.write(text.replace("version:evalproto-", "version:evalproto-0.0.0-old-", 1))
    result = run_cli("reduce", path)
    assert result.exit_code == 1
    assert "their scores would not be comparable" in result.output

"""Scoring on a real Dask LocalCluster of two worker processes gives the local numbers."""

import gzip
import os
import re

import dask.bag
import numpy as np
import pytest
from conftest import (
    DE_EN_HYP,
    DE_EN_HYP2,
    DE_EN_REFS,
    fake,
    json_rows,
    read_lines,
    refusing,
    run_cli,
    script,
    threads_evaluator,
    with_bad_line,
)
from dask.distributed import Client

import evalproto
from evalproto import bag_score, bag_stats
from evalproto.base.compiled import THREADS_VARIABLE
from evalproto.base.errors import InputError
from evalproto.base.processes import KEEP_GROUPS
from evalproto.evaluators.bleu import BLEU
from evalproto.evaluators.ter import TER
from evalproto.readers import text as readers
from evalproto.readers.statsfiles import read_stats
from evalproto.sources.dask import describe, local_cluster, plan_partitions
from evalproto.sources.specs import MetricSpec


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(2) as local, Client(local) as client:
        yield client


def test_workers_keep_glibcs_default_memory_trimming(cluster):
    """Dask's default MALLOC_TRIM_THRESHOLD_ slows numpy-heavy scoring by a third or more."""
    environments = cluster.run(lambda: dict(os.environ))
    assert len(environments) == 2
    for environment in environments.values():
        assert "MALLOC_TRIM_THRESHOLD_" not in environment
        assert environment["OMP_NUM_THREADS"] == "1"  # Dask's other settings stay
    assert "MALLOC_TRIM_THRESHOLD_" not in os.environ  # nor does it leak into the client


def test_workers_keep_their_evaluators_groups_and_the_client_does_not(cluster):
    """A local worker's evaluators end with it (KEEP_GROUPS), but the process that made
    the cluster is not made a keeper of groups: it would start a keeper process of its
    own, left running until it exits."""
    kept = cluster.run(lambda: os.environ.get(KEEP_GROUPS))
    assert list(kept.values()) == ["1", "1"]
    assert KEEP_GROUPS not in os.environ


def rows(*args):
    result = run_cli(*args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json_rows(result.output)


def test_corpus_score_on_the_cluster_equals_the_local_run(cluster, tmp_path):
    groups = tmp_path / "groups"
    groups.write_text("".join("a\n" if i % 3 else "b\n" for i in range(150)))
    args = ["corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, "-i", DE_EN_HYP2, "-m", "bleu",
            "-m", "ter", "-e", script("bleu-evaluator"), "--paired-bs", "--paired-bs-n", "200",
            "--groups", str(groups)]
    local = rows(*args)
    remote = rows(*args, "--scheduler", cluster.scheduler.address)
    assert len(local) == len(remote) == 18
    for ours, theirs in zip(remote, local):
        assert ours["stats"] == theirs["stats"]
        for key in ("score", "mean", "ci"):
            assert ours[key] == theirs[key]
        assert ours.get("p_value") == theirs.get("p_value")
        assert ours["signature"] == theirs["signature"]
        assert ours["name"] == theirs["name"]  # BLEU's details come from a worker
        assert ours.get("verbose_score") == theirs.get("verbose_score")
    assert [row["name"] for row in remote[:3]] == ["BLEU", "TER", "BLEU"]
    assert "verbose_score" in remote[0] and "verbose_score" not in remote[2]


def test_scores_on_the_cluster_keep_whitespace_and_say_what_the_protocol_dropped(
        cluster, tmp_path):
    """In process a segment keeps its leading whitespace on the workers too (sacrebleu's
    72.597953 for intl); an evaluator command's stripped segments are counted over
    every partition, in one warning."""
    ref, hyp = tmp_path / "ref", tmp_path / "hyp"
    ref.write_text("(1) the cat sat on the mat\n" * 40)
    hyp.write_text("".join(" (1) the cat sat on the mat\n" if i % 4 == 1 else
                           "(1) the cat sat on the mat\n" for i in range(40)))
    assert [row["score"] for row in rows("corpus-score", str(ref), str(hyp), "-m",
                                         "bleu -tok intl", "--scheduler",
                                         cluster.scheduler.address)] == [
        rows("corpus-score", str(ref), str(hyp), "-m", "bleu -tok intl")[0]["score"]]
    with pytest.warns(evalproto.EvaluatorWarning) as said:
        rows("corpus-score", str(ref), str(hyp), "-e", f"{script('bleu-evaluator')} -tok intl",
             "--scheduler", cluster.scheduler.address)
    (message,) = [str(warning.message) for warning in said if "protocol" in str(warning.message)]
    assert f"10 segments (the first: segment 2 of {hyp})" in message


def test_an_external_evaluator_starts_once_per_worker(cluster, tmp_path):
    pids = tmp_path / "pids"
    description = ('{"name": "fake", "stats": ["a", "b", "c"], "higher_is_better": true, '
                   '"signature": "fake"}')
    command = fake(tmp_path, startup=f'open({str(pids)!r}, "a").write(f"{{os.getpid()}}\\n")',
                   on_unknown=f"reply = {description!r}")
    remote = rows("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command,
                  "--scheduler", cluster.scheduler.address)
    local = rows("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command)
    assert remote[0]["stats"] == local[0]["stats"]
    *started_on_workers, started_locally = pids.read_text().split()
    # 8 partitions and the scoring ran on 2 workers, each starting the command once
    assert 1 <= len(started_on_workers) <= 2


def test_a_workers_kernels_run_on_one_thread(cluster, tmp_path):
    """A worker with one thread (local_cluster's threads_per_worker=1, as `dask worker
    --nthreads 1`) runs each kernel call on one thread, in process and in the evaluator
    commands it starts: the workers are the parallelism."""
    command = threads_evaluator(tmp_path)
    scored = rows("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command, "-m", "bleu",
                  "--scheduler", cluster.scheduler.address)
    assert [row["score"] for row in scored[:1]] == [1.0]  # the mean over every segment
    for address in cluster.scheduler_info()["workers"]:  # each worker has built a metric
        cluster.submit(describe, MetricSpec("in-process", "bleu"), None, workers=[address],
                       pure=False).result()

    def limits():
        from evalproto.base.compiled import kernel_threads
        from evalproto.evaluators.native import kernels

        module = kernels()
        return kernel_threads(), module.set_threads(module.MAX_THREADS)

    assert list(cluster.run(limits).values()) == [(1, 1), (1, 1)]
    assert THREADS_VARIABLE not in os.environ  # the client keeps its share


def test_a_failing_evaluator_on_a_worker_is_a_clear_error(cluster, tmp_path):
    command = fake(tmp_path, 'sys.stderr.write("worker-side crash\\n"); sys.exit(7)')
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command,
                     "--scheduler", cluster.scheduler.address)
    assert result.exit_code == 1
    assert f"evaluator {command!r} failed" in result.output
    assert "exit status 7" in result.output and "worker-side crash" in result.output
    assert "Traceback" not in result.output


def test_a_refused_segment_on_a_worker_is_named_as_in_a_local_run(cluster, tmp_path):
    args = ["corpus-score", *DE_EN_REFS, with_bad_line(tmp_path, 120), "-e", refusing(tmp_path),
            "--timeout", "10"]
    local = run_cli(*args)
    remote = run_cli(*args, "--scheduler", cluster.scheduler.address)
    assert local.exit_code == remote.exit_code == 1
    assert "Error: segment 120 of " in local.output
    # the same but for the request number, which counts that evaluator's own requests
    assert re.sub(r"request \d+", "", remote.output) == re.sub(r"request \d+", "", local.output)


def test_invalid_utf8_found_by_a_partition_is_the_local_error(cluster, tmp_path):
    hyp = tmp_path / "hyp.txt"
    lines = read_lines(DE_EN_HYP)
    hyp.write_bytes("\n".join(lines[:99]).encode() + b"\nbad \xff byte\n"
                    + "\n".join(lines[100:]).encode() + b"\n")
    local = run_cli("corpus-score", *DE_EN_REFS, str(hyp))
    remote = run_cli("corpus-score", *DE_EN_REFS, str(hyp), "--scheduler",
                     cluster.scheduler.address)
    assert local.exit_code == remote.exit_code == 1
    assert remote.output == local.output
    assert f"{hyp}: line 100: invalid UTF-8 (byte 0xff)" in remote.output


def test_lm_score_on_the_cluster_equals_the_local_run(cluster, tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(
        f'{{"user": "u{i // 40}", "message": {i // 8}, "token": {i % 8}, "character": 0, '
        f'"target": "w{i % 13}", "logp": {-1.0 - (i % 7) / 3}, '
        f'"completions": [["w{i % 5}", "w{i % 13}"]]}}\n' for i in range(200)))
    args = ["lm-score", str(log), "--by", "user", "--confidence", "--confidence-n", "100"]
    assert rows(*args, "--scheduler", cluster.scheduler.address) == rows(*args)


def test_the_paired_t_test_on_the_cluster_equals_the_local_run(cluster):
    """A metric that declares its corpus score the mean of its rows says so from the
    workers too (it was refused as if it were an external evaluator)."""
    args = ["corpus-score", DE_EN_REFS[0], "-i", DE_EN_HYP, DE_EN_REFS[1], "-m", "exact-match",
            "--paired-ttest"]
    remote = rows(*args, "--scheduler", cluster.scheduler.address)
    assert remote == rows(*args) and remote[1]["p_value"] is not None


def test_stats_on_the_cluster_writes_the_local_file(cluster, tmp_path):
    for name, extra in (("local", []), ("remote", ["--scheduler", cluster.scheduler.address])):
        result = run_cli("stats", *DE_EN_REFS, DE_EN_HYP, "-m", "ter", "-o",
                         str(tmp_path / name), *extra)
        assert result.exit_code == 0, result.output
    local, remote = read_stats(str(tmp_path / "local")), read_stats(str(tmp_path / "remote"))
    assert np.array_equal(local.rows[0], remote.rows[0]) and local.ids == remote.ids


def test_the_python_api_scores_a_bag(cluster):
    refs = [list(pair) for pair in zip(*(read_lines(p) for p in DE_EN_REFS))]
    items = list(zip(refs, read_lines(DE_EN_HYP)))
    bag = dask.bag.from_sequence(items, npartitions=5)
    for spec, evaluator in (("bleu", BLEU()), ("ter", TER())):
        expected = evaluator.stats_many(items)
        assert np.array_equal(bag_stats(bag, spec), expected)
        assert bag_score(bag, spec) == evalproto.load(spec).score_stats(expected).score
    over_pipe = bag_score(bag, script("bleu-evaluator"), kind="command")
    assert over_pipe == evalproto.load("bleu").score_stats(BLEU().stats_many(items)).score


def test_a_local_cluster_from_the_command_line():
    remote = rows("corpus-score", *DE_EN_REFS, DE_EN_HYP, "--scheduler", "local:2")
    assert remote[0]["score"] == rows("corpus-score", *DE_EN_REFS, DE_EN_HYP)[0]["score"]


@pytest.mark.parametrize("scheduler, message", [
    ("local:zero", "needs a number of workers"),
    ("tcp://127.0.0.1:9", "cannot reach the Dask scheduler")])
def test_bad_schedulers_are_explained(scheduler, message):
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "--scheduler", scheduler)
    assert result.exit_code == 1 and message in result.output


@pytest.mark.parametrize("content", [b"a\nb \n\nc\xc3\xa9\r\nd\n", b"a\nb\nc", b"only\n", b"x\n\n"],
                         ids=["trailing newline", "no trailing newline", "one line", "empty last"])
def test_a_worker_reads_exactly_its_line_range(tmp_path, content):
    """From a compressed file (decompressed whole) and from a plain one (only the bytes
    of the range, at the offsets that line_starts gives)."""
    assert readers.count_lines(content) == len(readers.split_lines("x", content))
    for name, data in (("plain.txt", content), ("packed.gz", gzip.compress(content))):
        path = tmp_path / name
        path.write_bytes(data)
        lines = readers.read_lines(str(path))
        for start in range(len(lines)):
            for stop in range(start + 1, len(lines) + 1):
                assert readers.read_line_range(str(path), start, stop) == lines[start:stop]
                span = tuple(readers.line_starts(content, [start, stop]))
                assert readers.read_line_range(str(tmp_path / "plain.txt"), start, stop,
                                               span) == lines[start:stop]


def test_a_partition_names_the_line_of_invalid_utf8(tmp_path):
    path = tmp_path / "hyp.txt"
    content = b"one\ntwo\nthree\nfo\xe9ur\nfive\n"
    path.write_bytes(content)
    span = tuple(readers.line_starts(content, [2, 5]))
    with pytest.raises(InputError, match=r"hyp.txt: line 4: invalid UTF-8 \(byte 0xe9\)"):
        readers.read_line_range(str(path), 2, 5, span)


def test_partitions_cover_every_segment_with_the_spans_of_plain_files(tmp_path):
    plain, packed = tmp_path / "ref.txt", tmp_path / "hyp.gz"
    plain.write_text("".join(f"line {i}\n" for i in range(10)))
    packed.write_bytes(gzip.compress(b"".join(b"h%d\n" % i for i in range(10))))
    segments, partitions = plan_partitions([str(plain)], [str(packed)], 3)
    assert segments == 10
    assert [(part.start, part.stop) for part in partitions] == [(0, 4), (4, 8), (8, 10)]
    assert [part.spans[str(plain)] for part in partitions] == [(0, 28), (28, 56), (56, 70)]
    assert all(part.spans[str(packed)] is None for part in partitions)


@pytest.mark.parametrize("files", [
    lambda d: ([d / "a"], [d / "missing"]),
    lambda d: ([d / "a"], [d / "empty"]),
    lambda d: ([d / "a", d / "short"], [d / "a"]),
    lambda d: ([d / "a"], [d / "b", d / "b"]),
], ids=["missing", "empty", "line counts differ", "system twice"])
def test_a_plan_refuses_what_a_local_run_refuses_in_the_same_words(tmp_path, files):
    for name, text in (("a", "x\ny\n"), ("b", "p\nq\n"), ("short", "x\n"), ("empty", "")):
        (tmp_path / name).write_text(text)
    refs, hyps = ([str(path) for path in group] for group in files(tmp_path))
    with pytest.raises(InputError) as local:
        readers.read_corpus(refs, hyps)
    with pytest.raises(InputError) as planned:
        plan_partitions(refs, hyps, 2)
    assert str(planned.value) == str(local.value)

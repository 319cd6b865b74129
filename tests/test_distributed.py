"""Scoring on a real Dask LocalCluster of two worker processes gives the local numbers."""

import gzip

import dask.bag
import numpy as np
import pytest
from dask.distributed import Client, LocalCluster

from conftest import DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS, fake, json_rows, read_lines, run_cli, script
from evalproto import readers
from evalproto.distributed import bag_score, bag_stats
from evalproto.statsfile import read_stats
from evaluators.bleu import BLEU
from evaluators.ter import TER


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as local, Client(local) as client:
        yield client


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
            assert ours[key] == pytest.approx(theirs[key], abs=1e-12)
        assert ours.get("p_value") == theirs.get("p_value")
        assert ours["signature"] == theirs["signature"]


def test_an_external_evaluator_starts_once_per_worker(cluster, tmp_path):
    pids = tmp_path / "pids"
    command = fake(tmp_path, startup=f'open({str(pids)!r}, "a").write(f"{{os.getpid()}}\\n")')
    remote = rows("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command,
                  "--scheduler", cluster.scheduler.address)
    local = rows("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command)
    assert remote[0]["stats"] == local[0]["stats"]
    *started_on_workers, started_locally = pids.read_text().split()
    # 8 partitions and the scoring ran on 2 workers, each starting the command once
    assert 1 <= len(started_on_workers) <= 2


def test_a_failing_evaluator_on_a_worker_is_a_clear_error(cluster, tmp_path):
    command = fake(tmp_path, 'sys.stderr.write("worker-side crash\\n"); sys.exit(7)')
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command,
                     "--scheduler", cluster.scheduler.address)
    assert result.exit_code == 1
    assert f"evaluator {command!r} failed" in result.output
    assert "exit status 7" in result.output and "worker-side crash" in result.output
    assert "Traceback" not in result.output


def test_lm_score_on_the_cluster_equals_the_local_run(cluster, tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(
        f'{{"user": "u{i // 40}", "message": {i // 8}, "token": {i % 8}, "character": 0, '
        f'"target": "w{i % 13}", "logp": {-1.0 - (i % 7) / 3}, '
        f'"completions": [["w{i % 5}", "w{i % 13}"]]}}\n' for i in range(200)))
    args = ["lm-score", str(log), "--by", "user", "--confidence", "--confidence-n", "100"]
    assert rows(*args, "--scheduler", cluster.scheduler.address) == rows(*args)


def test_stats_on_the_cluster_writes_the_local_file(cluster, tmp_path):
    for name, extra in (("local", []), ("remote", ["--scheduler", cluster.scheduler.address])):
        result = run_cli("stats", *DE_EN_REFS, DE_EN_HYP, "-m", "ter", "-o",
                         str(tmp_path / name), *extra)
        assert result.exit_code == 0, result.output
    local, remote = read_stats(str(tmp_path / "local")), read_stats(str(tmp_path / "remote"))
    assert np.array_equal(local.rows, remote.rows) and local.ids == remote.ids


def test_the_python_api_scores_a_bag(cluster):
    refs = [list(pair) for pair in zip(*(read_lines(p) for p in DE_EN_REFS))]
    items = list(zip(refs, read_lines(DE_EN_HYP)))
    bag = dask.bag.from_sequence(items, npartitions=5)
    for spec, evaluator in (("bleu", BLEU()), ("ter", TER())):
        expected = evaluator.stats_many(items)
        assert np.array_equal(bag_stats(bag, spec), expected)
        assert bag_score(bag, spec) == pytest.approx(
            evaluator.checked_score(expected.sum(axis=0)), abs=1e-12)
    over_pipe = bag_score(bag, script("bleu-evaluator"), kind="evaluator")
    assert over_pipe == pytest.approx(BLEU().checked_score(BLEU().stats_many(items).sum(axis=0)),
                                      abs=1e-12)


def test_a_local_cluster_from_the_command_line():
    remote = rows("corpus-score", *DE_EN_REFS, DE_EN_HYP, "--scheduler", "local:2")
    assert remote[0]["score"] == rows("corpus-score", *DE_EN_REFS, DE_EN_HYP)[0]["score"]


@pytest.mark.parametrize("scheduler, message", [("local:zero", "needs a number of workers"),
                                                ("tcp://127.0.0.1:9", "cannot reach the Dask scheduler")])
def test_bad_schedulers_are_explained(scheduler, message):
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "--scheduler", scheduler)
    assert result.exit_code == 1 and message in result.output


@pytest.mark.parametrize("content", [b"a\nb \n\nc\xc3\xa9\r\nd\n", b"a\nb\nc", b"only\n", b"x\n\n"],
                         ids=["trailing newline", "no trailing newline", "one line", "empty last"])
def test_a_worker_reads_exactly_its_line_range(tmp_path, content):
    for name, data in (("plain.txt", content), ("packed.gz", gzip.compress(content))):
        path = tmp_path / name
        path.write_bytes(data)
        lines = readers.read_lines(str(path))
        for start in range(len(lines)):
            for stop in range(start + 1, len(lines) + 1):
                assert readers.read_line_range(str(path), start, stop) == lines[start:stop]

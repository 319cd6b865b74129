"""-j/--jobs: N copies of a metric give exactly the numbers of one."""

import pytest
from conftest import (
    DE_EN_HYP,
    DE_EN_HYP2,
    DE_EN_REFS,
    fake,
    json_rows,
    refusing,
    run_cli,
    script,
    with_bad_line,
)

from evalproto.sources.pool import chunks


def rows(*args):
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, "-i", DE_EN_HYP2, *args,
                     "-f", "json")
    assert result.exit_code == 0, result.output
    return json_rows(result.output)


@pytest.mark.slow
@pytest.mark.parametrize("metric", [["-m", "bleu"], ["-m", "ter"], ["-m", "chrf -cw 2"],
                                    ["-e", "bleu-evaluator"]])
def test_parallel_copies_give_the_numbers_of_one(metric):
    metric = [metric[0], script(metric[1]) if metric[0] == "-e" else metric[1]]
    one = rows(*metric, "--confidence", "--confidence-n", "100")
    for jobs in ("2", "3"):
        assert rows(*metric, "--confidence", "--confidence-n", "100", "-j", jobs) == one


def test_chunks_keep_the_order_and_cover_everything():
    items = list(range(10))
    for parts in (1, 2, 3, 4, 10, 12):
        pieces = chunks(items, parts)
        assert [item for _, piece in pieces for item in piece] == items
        assert [start for start, _ in pieces] == [items.index(piece[0]) for _, piece in pieces]
        assert len(pieces) <= parts and all(piece for _, piece in pieces)
    assert chunks([], 3) == []


def test_a_failing_copy_is_the_same_clear_error(tmp_path):
    command = fake(tmp_path, 'sys.stderr.write("copy crashed\\n"); sys.exit(9)')
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command, "-j", "2",
                     "--timeout", "10")
    assert result.exit_code == 1
    assert f"evaluator {command!r} failed" in result.output and "exit status 9" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("jobs", ["1", "3"])
def test_a_refused_segment_is_named_whatever_the_jobs(tmp_path, jobs):
    """Each copy numbers its own requests; the message names the segment and file."""
    bad = with_bad_line(tmp_path, 100)
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, "-i", bad,
                     "-e", refusing(tmp_path), "-j", jobs, "--timeout", "10")
    assert result.exit_code == 1
    assert f"Error: segment 100 of {bad}: evaluator " in result.output
    assert "was answered 'ERROR cannot score BAD'" in result.output


def test_stats_files_are_the_same_with_jobs(tmp_path):
    for name, jobs in (("one", "1"), ("two", "2")):
        result = run_cli("stats", *DE_EN_REFS, DE_EN_HYP, "-m", "ter", "-j", jobs,
                         "-o", str(tmp_path / name))
        assert result.exit_code == 0, result.output
    one, two = ((tmp_path / name).read_text() for name in ("one", "two"))
    assert one == two


def test_a_pool_worker_runs_its_kernels_on_one_thread(monkeypatch):
    """-j N copies are N processes already: each copy's kernel calls take one thread."""
    from evalproto.evaluators import _native
    from evalproto.sources import pool
    from evalproto.sources.specs import MetricSpec

    monkeypatch.setattr(pool, "ignore_interrupts", lambda: None)  # this is no worker
    previous = _native.set_threads(8)
    try:
        pool._start_worker(MetricSpec("in-process", "bleu"))
        assert _native.set_threads(8) == 1
    finally:
        _native.set_threads(previous)
        monkeypatch.setattr(pool, "_WORKER_SOURCE", None)

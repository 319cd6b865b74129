"""Dynabench's Dynascore (api/models/score.py) and the Dynaboard's interval, which
Dynabench never computed: its example, its rules (directions, offsets, normalised
weights, the AMRS from adjacent models, close pairs left out), a constant metric, and
the interval's coverage where the answer is known."""

import re

import numpy as np
import pytest

import evalproto
from evalproto.api.dynaboard import BoardInputs, default_weights, dynaboard_of
from evalproto.sources.specs import MetricSpec
from evalproto.stats.dynascore import dynascores, percentile_interval

DYNABENCH = {"A": {"perf": 80, "throughput": 10, "memory": 4, "fairness": 90, "robustness": 85},
             "B": {"perf": 85, "throughput": 5, "memory": 8, "fairness": 88, "robustness": 80},
             "C": {"perf": 90, "throughput": 2, "memory": 12, "fairness": 92, "robustness": 82}}


def test_dynabenchs_own_example():
    weights = default_weights("perf", list(DYNABENCH["A"]))
    assert weights == {"perf": 4, "throughput": 1, "memory": 1, "fairness": 1, "robustness": 1}
    found = evalproto.dynascore(DYNABENCH, weights, perf="perf", directions={"memory": -1},
                                offsets={"memory": 16})
    assert {model: round(value, 4) for model, value in found.items()} == {
        "A": 77.3661, "B": 77.1503, "C": 79.7470}


def by_hand(scores, weights, perf, directions, offsets, cutoff=0.0001):
    """Dynabench's steps, one by one, with Python's own numbers."""
    models = sorted(scores, key=lambda model: scores[model][perf])
    converted = {model: {metric: directions.get(metric, 1) * value + offsets.get(metric, 0)
                         for metric, value in scores[model].items()} for model in models}
    total = sum(weights.values())
    pairs = [(low, high) for low, high in zip(models, models[1:])
             if abs(converted[high][perf] - converted[low][perf])
             > max(converted[m][perf] for m in models) * cutoff]
    result = {model: 0.0 for model in models}
    for metric in scores[models[0]]:
        rates = [abs(converted[high][metric] - converted[low][metric])
                 / (converted[high][perf] - converted[low][perf]) for low, high in pairs]
        amrs = sum(rates) / len(rates) if rates else 0.0
        for model in models:
            if amrs:
                result[model] += (converted[model][metric] / abs(amrs)
                                  * weights.get(metric, 0) / total)
    return result


@pytest.mark.parametrize("seed", range(5))
def test_the_vectorised_dynascore_is_dynabenchs_steps(seed):
    """Random boards: close pairs (left out of the AMRS), ties in perf, a metric that
    is constant (its share is 0, where Dynabench's sum was NaN), weights that are not
    normalised, a metric without weight."""
    rng = np.random.default_rng(seed)
    models = [f"m{number}" for number in range(7)]
    perf = rng.uniform(40, 90, len(models)).round(1)
    perf[3] = perf[1] + 0.001  # closer than 0.0001 of the largest
    perf[5] = perf[2]  # a tie
    scores = {model: {"perf": float(perf[number]), "speed": float(rng.uniform(1, 50)),
                      "memory": float(rng.uniform(1, 15)), "flat": 7.0,
                      "unweighted": float(rng.uniform(0, 1))}
              for number, model in enumerate(models)}
    weights = {"perf": 3, "speed": 2, "memory": 0.5, "flat": 1}
    directions, offsets = {"memory": -1}, {"memory": 16}
    found = evalproto.dynascore(scores, weights, "perf", directions, offsets)
    expected = by_hand(scores, weights, "perf", directions, offsets)
    assert found == pytest.approx(expected, rel=1e-12)


def test_a_metric_where_lower_is_better_can_order_the_models():
    scores = {"a": {"ter": 60.0, "speed": 10.0}, "b": {"ter": 50.0, "speed": 5.0},
              "c": {"ter": 40.0, "speed": 2.0}}
    found = evalproto.dynascore(scores, {"ter": 1, "speed": 1}, "ter", {"ter": -1},
                                {"ter": 100})
    assert found == pytest.approx(by_hand(scores, {"ter": 1, "speed": 1}, "ter",
                                          {"ter": -1}, {"ter": 100}))
    alone = evalproto.dynascore(scores, {"ter": 1}, "ter", {"ter": -1}, {"ter": 100})
    assert alone == pytest.approx({"a": 40.0, "b": 50.0, "c": 60.0})  # the least TER best


def test_resamples_are_scored_as_boards_of_their_own():
    values = np.array([[[80, 10, 4], [85, 5, 8], [90, 2, 12]],
                       [[70, 10, 4], [95, 5, 8], [90, 3, 12]]], float)
    arguments = (0, [4, 1, 1], [1, 1, -1], [0, 0, 16])
    stacked = dynascores(values, *arguments)
    assert stacked.shape == (2, 3)
    for board, row in zip(values, stacked):
        assert row.tolist() == dynascores(board, *arguments).tolist()


def test_a_board_of_one_model_or_equal_perfs_keeps_the_perf_metric_not_nan():
    """Without a pair of models far enough apart, no other metric can be converted (it
    adds 0, where Dynabench's became NaN), and the perf metric counts as itself."""
    assert evalproto.dynascore({"only": {"acc": 80.0, "memory": 3.0}},
                               {"acc": 4, "memory": 1}, "acc") == {"only": 0.8 * 80.0}
    assert evalproto.dynascore({"a": {"acc": 80.0, "f": 1.0}, "b": {"acc": 80.0, "f": 9.0}},
                               {"acc": 1, "f": 1}, "acc") == {"a": 40.0, "b": 40.0}


@pytest.mark.parametrize("call, message", [
    (lambda: evalproto.dynascore({}, {}, "acc"), "scores must map each model"),
    (lambda: evalproto.dynascore({"a": {"acc": 1}}, {"acc": 1}, "f1"),
     "the perf metric 'f1' is not among the scores' metrics (acc)"),
    (lambda: evalproto.dynascore({"a": {"acc": 1}, "b": {"f1": 2}}, {"acc": 1}, "acc"),
     "model 'b' has the metrics"),
    (lambda: evalproto.dynascore({"a": {"acc": 1}}, {"acc": 1, "x": 1}, "acc"),
     "a weight for 'x'"),
    (lambda: evalproto.dynascore({"a": {"acc": 1}}, {"acc": 0}, "acc"),
     "the weights must sum to more than 0"),
])
def test_what_cannot_be_scored_is_said(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_the_interval_covers_a_known_answer_95_times_in_100():
    """With the perf metric alone weighed, the Dynascore is the perf metric (exact match,
    the share of right answers): its interval over 200 draws of 400 examples from models
    right with known chances holds the chance about 95 times in 100."""
    rng = np.random.default_rng(7)
    chances = [0.55, 0.7, 0.85]
    held = 0
    trials = 200
    for _ in range(trials):
        rows = [np.column_stack([(rng.random(400) < chance).astype(float), np.ones(400)])
                for chance in chances]
        inputs = BoardInputs(MetricSpec("in-process", "exact-match"), "exact-match",
                             ["a", "b", "c"], rows,
                             [100 * row[:, 0].mean() for row in rows])
        lines = {line.model: line for line in dynaboard_of(
            inputs, {"exact-match": 1}, {}, {}, samples=400, seed=int(rng.integers(1 << 30)))}
        for model, chance in zip("abc", chances):
            low, high = lines[model].interval
            assert low <= lines[model].dynascore <= high
            held += low <= 100 * chance <= high
    assert 0.92 * 3 * trials <= held <= 0.98 * 3 * trials


def test_the_interval_is_taken_where_the_leaderboards_is():
    values = np.arange(1000, dtype=float)[::-1]
    assert percentile_interval(values).tolist() == [25.0, 974.0]


def test_the_dynaboard_pages_example_prints_dynabenchs_figures():
    """docs/dynaboard.md (run by the service's docs test, which runs commands only):
    its Python example prints what the page shows, Dynabench's own figures."""
    import contextlib
    import io

    from docpages import fenced

    ((_, program),) = fenced("docs/dynaboard.md", "python")
    shown = [text for _, text in fenced("docs/dynaboard.md", "text") if "'A': 77.3661" in text]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(program, "docs/dynaboard.md", "exec"), {})
    assert [printed.getvalue()] == shown == ["{'A': 77.3661, 'B': 77.1503, 'C': 79.747}\n"]

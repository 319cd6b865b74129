#!/usr/bin/env python3
"""evalproto's meta-evaluation beside Google's mt-metrics-eval, on the same table and the
same seeded draws: PERM-BOTH between two metrics (its PermutationSigDiff), timed in
alternating runs, with the ratio of the medians, and the p-values and draws compared.

mt-metrics-eval is not a dependency and its code is never committed here: give a checkout
of it, outside this repository, with --mtme DIR or MTME_DIR, or let --fetch clone one
into a temporary folder for the run. By hand:

    git clone --depth 1 https://github.com/google-research/mt-metrics-eval /tmp/mt-metrics-eval

(the PyPI package named mt-metrics-eval is not Google's: never pip-install it). Only its
mt_metrics_eval/stats.py, pce.py and tau_optimization.py are imported, with the numpy
and scipy of this environment, so that both sides use the same ones.

    python bench/metaeval.py --fetch                                 # the issue's scenario
    python bench/metaeval.py --mtme /tmp/mt-metrics-eval --all --rounds 5   # every scenario

The default scenario is issue 39's target: acc23 averaged by item, 15 systems x 1,500
segments, 200 resamples, at most 1/20 of mt-metrics-eval's time. The table is synthetic
and MQM-like: human scores from {0, -1, -2, -5, -6, -10, -25} (many ties), 5% of the
segments unrated, two metrics that follow them with about as much noise (so that the
p-values are neither 0 nor 1).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

REPOSITORY = "https://github.com/google-research/mt-metrics-eval"
HOW_TO_GET = ("mt-metrics-eval's code is needed: git clone --depth 1 "
              "https://github.com/google-research/mt-metrics-eval /tmp/mt-metrics-eval, then "
              "--mtme /tmp/mt-metrics-eval (or MTME_DIR=/tmp/mt-metrics-eval); never "
              "pip install mt-metrics-eval, which is not Google's")


@dataclass
class Scenario:
    name: str
    statistic: str
    average_by: str
    resamples: int
    target: Optional[float] = None  # our time over theirs, at most


SCENARIOS = [
    Scenario("acc23 by item (issue 39)", "acc23", "item", 200, 1 / 20),
    Scenario("kendall by item", "kendall", "item", 200),
    Scenario("pearson by item", "pearson", "item", 200),
    Scenario("pearson by none", "pearson", "none", 200),
    Scenario("acc23-opt by item", "acc23-opt", "item", 5),
]


def table(systems: int, segments: int, seed: int = 39) -> Tuple[np.ndarray, ...]:
    """MQM-like human scores (NaN: unrated segments) and two metrics' scores."""
    rng = np.random.default_rng(seed)
    penalties = np.array([0, -1, -2, -5, -6, -10, -25], dtype=float)
    human = rng.choice(penalties, size=(systems, segments),
                       p=[0.45, 0.15, 0.1, 0.12, 0.08, 0.06, 0.04])
    quality = human + rng.normal(0, 3, (systems, segments))
    metric1 = np.round(quality + rng.normal(0, 4, (systems, segments)), 4)
    metric2 = np.round(quality + rng.normal(0, 4.05, (systems, segments)), 4)
    human[:, rng.random(segments) < 0.05] = np.nan
    return human, metric1, metric2


def load_theirs(directory: str) -> Any:
    package = Path(directory) / "mt_metrics_eval" / "stats.py"
    if not package.exists():
        sys.exit(f"{directory}: no mt_metrics_eval/stats.py there. {HOW_TO_GET}")
    commit = subprocess.run(["git", "-C", directory, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True)
    print(f"mt-metrics-eval: {directory}, commit "
          f"{commit.stdout.strip() if commit.returncode == 0 else 'unknown (not a git checkout)'}")
    sys.path.insert(0, str(Path(directory).resolve()))
    from mt_metrics_eval import stats  # noqa: E402 - the checkout given

    return stats


def fetched(into: str) -> str:
    """A fresh shallow clone of mt-metrics-eval in `into` (a temporary folder)."""
    target = str(Path(into) / "mt-metrics-eval")
    cloned = subprocess.run(["git", "clone", "--quiet", "--depth", "1", REPOSITORY, target])
    if cloned.returncode != 0:
        sys.exit(f"could not clone {REPOSITORY}. {HOW_TO_GET}")
    return target


def runners(stats: Any, scenario: Scenario, human: np.ndarray, metric1: np.ndarray,
            metric2: np.ndarray, seed: int) -> Tuple[Callable[[], Any], Callable[[], Any]]:
    """(theirs, ours): each runs the test of metric 2 against metric 1 from `seed`."""
    import scipy.stats

    from evalproto.stats import metaeval as me

    systems = human.shape[0]
    gold = [None if np.isnan(value) else float(value) for value in human.ravel()]
    corr1 = stats.Correlation(systems, gold, [float(v) for v in metric1.ravel()])
    corr2 = stats.Correlation(systems, gold, [float(v) for v in metric2.ravel()])
    functions: Dict[str, Tuple[Any, Dict[str, Any]]] = {
        "pearson": (scipy.stats.pearsonr, {}),
        "kendall": (scipy.stats.kendalltau, {}),
        "acc23": (stats.KendallVariants, {"variant": "acc23"}),
        "acc23-opt": (stats.KendallWithTiesOpt, {"variant": "acc23", "sample_rate": 1.0}),
    }
    function, options = functions[scenario.statistic]
    params = stats.PermutationSigDiffParams(block_size=scenario.resamples)  # no early stop

    def theirs() -> Tuple[float, float, int, np.ndarray]:
        np.random.seed(seed)
        p_value, delta, done, draws = stats.PermutationSigDiff(
            corr1, corr2, function, scenario.average_by, scenario.resamples, params,
            **options)
        return p_value, delta, done, np.asarray(draws)

    how = me.Measure(scenario.statistic, scenario.average_by)

    def ours() -> Tuple[float, float, int, np.ndarray]:
        test = me.perm_both(human, metric1, metric2, how, scenario.resamples,
                            me.EarlyStop(block_size=scenario.resamples),
                            np.random.RandomState(seed))
        return test.p_value, test.delta, test.resamples, test.draws

    return theirs, ours


def timed(run: Callable[[], Any]) -> Tuple[float, Any]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def compare(scenario: Scenario, stats: Any, rounds: int, args: argparse.Namespace) -> bool:
    human, metric1, metric2 = table(args.systems, args.segments)
    theirs, ours = runners(stats, scenario, human, metric1, metric2, args.seed)
    ours()  # warm: the kernel's module, scipy's first calls
    times: Dict[str, List[float]] = {"theirs": [], "ours": []}
    results: Dict[str, Any] = {}
    loads = [os.getloadavg()[0]]
    for round_ in range(rounds):
        order = [("theirs", theirs), ("ours", ours)]
        for name, run in order if round_ % 2 == 0 else order[::-1]:  # alternate who goes first
            seconds, results[name] = timed(run)
            times[name].append(seconds)
        loads.append(os.getloadavg()[0])
    (p1, d1, k1, draws1), (p2, d2, k2, draws2) = results["theirs"], results["ours"]
    ratio = statistics.median(times["ours"]) / statistics.median(times["theirs"])
    print(f"\n{scenario.name}: {args.systems} systems x {args.segments} segments, "
          f"{scenario.resamples} resamples, seed {args.seed}")
    for name in ("theirs", "ours"):
        print(f"  {name:6} median {statistics.median(times[name]):8.3f} s  runs "
              + " ".join(f"{t:.3f}" for t in times[name]))
    met = scenario.target is None or ratio <= scenario.target
    print(f"  ratio (ours / theirs, medians): {ratio:.4f} = 1/{1 / ratio:.0f}" +
          (f"; target <= 1/{1 / scenario.target:.0f}: {'met' if met else 'NOT met'}"
           if scenario.target else ""))
    print(f"  p-value theirs {p1} ours {p2} ({'equal' if p1 == p2 else 'DIFFERENT'}); "
          f"resamples {k1} / {k2}; delta difference {abs(d1 - d2):.2e}; draws "
          + ("identical" if np.array_equal(draws1, draws2) else
             f"differ by at most {np.max(np.abs(draws1 - draws2)):.2e}"))
    print("  load average (1 min) during the runs: "
          + " ".join(f"{load:.2f}" for load in loads) + f" on {os.cpu_count()} CPUs")
    return met and p1 == p2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mtme", default=os.environ.get("MTME_DIR"),
                        help="a checkout of github.com/google-research/mt-metrics-eval "
                             "(default: $MTME_DIR)")
    parser.add_argument("--fetch", action="store_true",
                        help="clone mt-metrics-eval into a temporary folder for this run")
    parser.add_argument("--all", action="store_true", help="every scenario, not only issue 39's")
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs of each side")
    parser.add_argument("--systems", type=int, default=15)
    parser.add_argument("--segments", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", default=None,
                        help="EVALPROTO_KERNEL_THREADS for our kernel (default: every CPU "
                             "the process may use; mt-metrics-eval runs on one)")
    args = parser.parse_args()
    if args.threads:
        os.environ["EVALPROTO_KERNEL_THREADS"] = args.threads
    with tempfile.TemporaryDirectory() as work:
        if args.fetch:
            args.mtme = fetched(work)
        if not args.mtme:
            print(HOW_TO_GET + "; or --fetch", file=sys.stderr)
            return 2
        stats = load_theirs(args.mtme)
        from evalproto.base.compiled import kernel_threads

        print(f"evalproto's kernel threads: {kernel_threads()}")
        chosen = SCENARIOS if args.all else SCENARIOS[:1]
        met = [compare(scenario, stats, args.rounds, args) for scenario in chosen]
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())

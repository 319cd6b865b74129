"""Speed-up of scoring on 2 local Dask workers over 1 (issue target: at least 1.6x).

Starts a LocalCluster of 1 and then of 2 worker processes and times the scoring on it,
the same calls `corpus-score --scheduler` makes once started (process start-up,
imports and cluster start-up, about 3 s together, are left out: a cluster outlives
many runs). Loads: TER over 600 synthetic segments with 2 references, and an n-best
tuning load (300 references x 100 hypotheses) in process and through
`-e bleu-evaluator`. Each run scores fresh data, since workers keep their evaluators
(and tokenizer caches) between runs. Prints medians of REPEATS runs and speed-ups.

    python3 bench/dask_scaling.py [--repeats 3]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from data import make_corpus, make_nbest  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402

from evalproto.distributed import distributed_tables  # noqa: E402
from evalproto.scoring import Analysis, analyse  # noqa: E402
from evalproto.sources import MetricSpec  # noqa: E402

BLEU_EVALUATOR = str(Path(sys.executable).parent / "bleu-evaluator")  # not a PATH shim


def seconds(client, load) -> float:
    """Wall time of scoring one load on the cluster, as corpus-score does it."""
    paths, (flag, spec) = load[:-2], load[-2:]
    metric = MetricSpec("metric" if flag == "-m" else "evaluator", spec)
    start = time.perf_counter()
    segments, tables = distributed_tables(client, [metric], paths[:-1], paths[-1:], None)
    analyse(tables, len(paths) - 1, Analysis())
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        def loads(repeat: int) -> dict:
            """Fresh data for every run: workers keep their evaluators (and so their
            tokenizer caches) between runs, which would flatter repeated inputs."""
            refs, hyp = make_corpus(Path(work) / f"ter{repeat}", 600, seed=repeat)
            nbest_ref, nbest_hyp = make_nbest(Path(work) / f"nbest{repeat}",
                                              per_reference=100, seed=repeat)
            return {
                "TER, 600 segments x 2 refs": [*refs, hyp, "-m", "ter"],
                "n-best, 300 refs x 100 hyps, -m bleu": [nbest_ref, nbest_hyp, "-m", "bleu"],
                "n-best, 300 refs x 100 hyps, -e bleu-evaluator": [nbest_ref, nbest_hyp, "-e",
                                                                   BLEU_EVALUATOR],
            }

        runs = [loads(repeat) for repeat in range(args.repeats)]
        medians: dict = {name: [] for name in runs[0]}
        for workers in (1, 2):  # the same inputs on both; each new cluster starts cold
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                              dashboard_address=":0") as cluster, Client(cluster) as client:
                for name in medians:
                    times = [seconds(client, run[name]) for run in runs]
                    medians[name].append(statistics.median(times))
        print(f"{'load':48} {'1 worker':>9} {'2 workers':>10} {'speed-up':>9}")
        for name, (one, two) in medians.items():
            print(f"{name:48} {one:8.1f}s {two:9.1f}s {one / two:8.2f}x")


if __name__ == "__main__":
    main()

"""Speed-up of scoring on 2 local Dask workers over 1 (issue target: at least 1.6x).

Keeps a LocalCluster of 1 and one of 2 worker processes open (made as `--scheduler
local:N` makes them) and times the scoring on them, the same calls `corpus-score
--scheduler` makes once started (process start-up, imports and cluster start-up, about
3 s together, are left out: a cluster outlives many runs, so each cluster first scores
a warm-up load). Loads: TER over 600 synthetic
segments with 2 references, and an n-best tuning load (300 references x 100
hypotheses) in process and through `-e bleu-evaluator`. Each run scores fresh data,
since workers keep their evaluators (and tokenizer caches) between runs. The two
clusters take turns on each input, in alternating order, so that the shared machine's
drift falls on both alike. Prints medians of REPEATS runs and their ratio.

    python3 bench/dask_scaling.py [--repeats 5]
"""

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dask.distributed import Client  # noqa: E402
from data import make_corpus, make_nbest  # noqa: E402

from evalproto.sources.dask import distributed_tables, local_cluster  # noqa: E402
from evalproto.sources.specs import MetricSpec  # noqa: E402
from evalproto.stats.reductions import Analysis, analyse  # noqa: E402

BLEU_EVALUATOR = str(Path(sys.executable).parent / "bleu-evaluator")  # not a PATH shim


def seconds(client, load) -> float:
    """Wall time of scoring one load on the cluster, as corpus-score does it."""
    paths, (flag, spec) = load[:-2], load[-2:]
    metric = MetricSpec("in-process" if flag == "-m" else "command", spec)
    start = time.perf_counter()
    segments, tables = distributed_tables(client, [metric], paths[:-1], paths[-1:], None)
    analyse(tables, len(paths) - 1, Analysis())
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work, ExitStack() as stack:
        def loads(name: str, seed: int) -> dict:
            refs, hyp = make_corpus(Path(work) / f"ter-{name}", 600, seed=seed)
            nbest_ref, nbest_hyp = make_nbest(Path(work) / f"nbest-{name}",
                                              per_reference=100, seed=seed)
            return {
                "TER, 600 segments x 2 refs": [*refs, hyp, "-m", "ter"],
                "n-best, 300 refs x 100 hyps, -m bleu": [nbest_ref, nbest_hyp, "-m", "bleu"],
                "n-best, 300 refs x 100 hyps, -e bleu-evaluator": [nbest_ref, nbest_hyp, "-e",
                                                                   BLEU_EVALUATOR],
            }

        clients = {}
        for workers in (1, 2):
            cluster = stack.enter_context(local_cluster(workers))
            clients[workers] = stack.enter_context(Client(cluster))
        warm_up = loads("warm-up", seed=1000)
        for client in clients.values():
            for load in warm_up.values():
                seconds(client, load)
        times: dict = {name: {1: [], 2: []} for name in warm_up}
        for repeat in range(args.repeats):
            run = loads(str(repeat), seed=repeat)
            for name, load in run.items():
                for workers in ((1, 2) if repeat % 2 == 0 else (2, 1)):
                    times[name][workers].append(seconds(clients[workers], load))
        print(f"{'load':48} {'1 worker':>9} {'2 workers':>10} {'speed-up':>9}")
        for name, by_workers in times.items():
            one, two = (statistics.median(by_workers[w]) for w in (1, 2))
            print(f"{name:48} {one:8.2f}s {two:9.2f}s {one / two:8.2f}x")


if __name__ == "__main__":
    main()

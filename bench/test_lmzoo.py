"""`lm-score` on LM Zoo predictions files of growing size: sentences of 30 tokens over a
50,000-word vocabulary (float32, as LM Zoo's models write them), --lmzoo-sentences of
them (default 20, 40, 80: 120, 240 and 480 MB). Time and peak memory of the whole
process at each size: memory must not grow with the file (it is read a block of rows at
a time), time must grow with the tokens. The files are written here and deleted after.

    python -m pytest bench/test_lmzoo.py -s
"""

import sys

import h5py
import numpy as np
from test_scale import run_measured

VOCABULARY = 50_000
TOKENS = 30
GROWTH_MB = 64
"""How much more peak memory the largest file may take than the smallest."""


def sizes(config):
    return [int(size) for size in config.getoption("--lmzoo-sentences").split(",") if size]


def write_predictions(path, sentences, seed=1):
    """Random softmax rows (float32) and random tokens, a sentence at a time."""
    rng = np.random.default_rng(seed)
    vocabulary = np.char.encode([f"w{i}" for i in range(VOCABULARY)], "utf-8")
    with h5py.File(path, "w") as file:
        for i in range(sentences):
            logits = rng.standard_normal((TOKENS, VOCABULARY)) * 3
            logits -= np.log(np.exp(logits).sum(axis=1, keepdims=True))
            file[f"sentence/{i}/predictions"] = logits.astype(np.float32)
            file[f"sentence/{i}/tokens"] = rng.integers(0, VOCABULARY, TOKENS)
        file["vocabulary"] = vocabulary


def test_predictions_in_bounded_memory(request, tmp_path):
    measured = {}
    for sentences in sizes(request.config):
        path = tmp_path / f"predictions{sentences}.hdf5"
        write_predictions(path, sentences)
        command = [sys.executable, "-m", "evalproto", "lm-score", str(path), "-f", "json"]
        measured[sentences] = run_measured(command)
        megabytes = path.stat().st_size / 2 ** 20
        path.unlink()
        seconds, peak = measured[sentences]
        print(f"\n{sentences} sentences x {TOKENS} tokens x {VOCABULARY} ({megabytes:.0f} MB): "
              f"{seconds:.1f} s, {seconds / (sentences * TOKENS) * 1000:.2f} ms per token, "
              f"peak {peak:.0f} MB")
    first, last = min(measured), max(measured)
    marginal = (measured[last][0] - measured[first][0]) / ((last - first) * TOKENS)
    print(f"marginal time per token: {marginal * 1000:.2f} ms; peak memory grew "
          f"{measured[last][1] - measured[first][1]:.0f} MB from {first} to {last} sentences")
    assert measured[last][1] - measured[first][1] < GROWTH_MB

"""Peak memory of a 1000-resample bootstrap CI over 100,000 segments (target: < 500 MB).

sacrebleu materialises a float32 tensor of n x N x d for this (4 GB here); evalproto
sums resamples as counts @ rows a chunk at a time.
"""

import os
import subprocess
import sys

from data import make_corpus

LIMIT_MB = 500


def peak_rss_mb(command):
    """Run a command and return its peak resident memory, in MB."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, process.stderr.read().decode()
    return usage.ru_maxrss / 1024


def test_confidence_over_100k_segments_stays_under_500_mb(tmp_path):
    refs, hyp = make_corpus(tmp_path, 100_000)
    peak = peak_rss_mb([sys.executable, "-m", "evalproto", "corpus-score", *refs, hyp,
                        "--confidence", "--confidence-n", "1000", "-f", "json"])
    print(f"\npeak memory of a 1000-resample CI over 100,000 segments: {peak:.0f} MB")
    assert peak < LIMIT_MB

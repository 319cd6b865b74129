"""Benchmark inputs: synthetic corpora by default, or real files with --data DIR."""

from pathlib import Path

import pytest

from data import make_corpus


def pytest_addoption(parser):
    parser.addoption("--data", metavar="DIR", default=None,
                     help="score real files instead: DIR holds ref.* files and one hyp file")
    parser.addoption("--lm-events", default="1000000",
                     help="events in the synthetic LM Challenge log (default 1,000,000)")
    parser.addoption("--scale", default="100000,1000000",
                     help="segments of the --paired-bs scale runs, comma-separated")


@pytest.fixture(scope="session")
def corpus(request, tmp_path_factory):
    """(reference paths, hypothesis path) of a 2,000-segment corpus with 2 references."""
    directory = request.config.getoption("--data")
    if directory:
        refs = sorted(str(path) for path in Path(directory).glob("ref.*"))
        return refs, str(Path(directory) / "hyp")
    return make_corpus(tmp_path_factory.mktemp("corpus"), 2000)

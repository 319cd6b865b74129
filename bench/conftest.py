"""Benchmark inputs: synthetic corpora by default, or real files with --data DIR."""

from pathlib import Path

import pytest
from data import make_corpus, make_systems


def pytest_addoption(parser):
    parser.addoption("--data", metavar="DIR", default=None,
                     help="score real files instead: DIR holds ref.* files and one hyp file")
    parser.addoption("--lm-events", default="1000000",
                     help="events in the synthetic LM Challenge log (default 1,000,000)")
    parser.addoption("--lmzoo-sentences", default="20,40,80",
                     help="sentences (of 30 tokens, 50,000-word vocabulary) in the LM Zoo "
                          "predictions files of bench/test_lmzoo.py, comma-separated")
    parser.addoption("--scale", default="100000,1000000",
                     help="segments of the scale runs (bench/test_scale.py), comma-separated, "
                          "smallest first")
    parser.addoption("--scale-data", metavar="DIR", default=None,
                     help="keep the scale runs' generated corpora in DIR (and take them from "
                          "there again) instead of a temporary directory removed at the end")
    parser.addoption("--systems", metavar="DIR", default=None,
                     help="the report's load from real files: DIR holds a WMT22 language "
                          "pair (*.ref.A.* is the reference; *.hyp.* and *.ref.B.* are the "
                          "systems, the first four taken), of which the first 2,000 lines "
                          "are used")


@pytest.fixture(scope="session")
def corpus(request, tmp_path_factory):
    """(reference paths, hypothesis path) of a 2,000-segment corpus with 2 references."""
    directory = request.config.getoption("--data")
    if directory:
        refs = sorted(str(path) for path in Path(directory).glob("ref.*"))
        return refs, str(Path(directory) / "hyp")
    return make_corpus(tmp_path_factory.mktemp("corpus"), 2000)


@pytest.fixture(scope="session")
def four_systems(request, tmp_path_factory):
    """(reference path, 4 system paths) of 2,000 segments: real files with --systems DIR,
    synthetic ones otherwise."""
    work = tmp_path_factory.mktemp("systems")
    directory = request.config.getoption("--systems")
    if not directory:
        return make_systems(work, 2000, 4)
    found = Path(directory)
    (ref,) = sorted(found.glob("*.ref.A.*"))
    systems = (sorted(found.glob("*.hyp.*")) + sorted(found.glob("*.ref.B.*")))[:4]
    assert len(systems) == 4, f"{directory} holds fewer than 4 systems"
    copies = []
    for path in [ref, *systems]:
        copies.append(work / path.name)
        lines = path.read_text(encoding="utf-8").split("\n")[:2000]
        copies[-1].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(copies[0]), [str(path) for path in copies[1:]]

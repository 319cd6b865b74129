"""The progress line: on a terminal after 2 s, erased at the end, and never otherwise."""

import io

from conftest import DE_EN_HYP, DE_EN_REFS, read_lines
from evalproto.cli.progress import Progress
from evalproto.stats.reductions import stats_tables
from evalproto.evaluators.bleu import BLEU


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_shown_on_a_terminal_after_two_seconds_and_erased():
    stream, clock = Terminal(), Clock()
    progress = Progress(4000, "scoring", stream, clock)
    progress.advance(1000)
    assert stream.getvalue() == ""  # a short run prints nothing
    clock.now = 2.5
    progress.advance(1000)
    assert stream.getvalue() == "\rscoring: 2000/4000 (50%)"
    progress.finish()
    assert stream.getvalue().endswith("\r" + " " * len("scoring: 2000/4000 (50%)") + "\r")


def test_never_shown_when_stderr_is_not_a_terminal():
    stream, clock = io.StringIO(), Clock()
    progress = Progress(10, "scoring", stream, clock)
    clock.now = 100.0
    progress.advance(10)
    progress.finish()
    assert stream.getvalue() == ""


def test_scoring_reports_every_item_in_chunks(monkeypatch):
    from evalproto.stats import reductions as scoring
    monkeypatch.setattr(scoring, "CHUNK_ITEMS", 40)
    stream, clock = Terminal(), Clock()
    progress = Progress(150, "scoring", stream, clock)
    clock.now = 10.0  # a long run
    refs = list(zip(*(read_lines(path) for path in DE_EN_REFS)))
    hyps = {"hyp": read_lines(DE_EN_HYP)}
    (table,) = stats_tables([("bleu", BLEU())], refs, hyps, progress)
    shown = stream.getvalue()
    assert "\rscoring: 40/150 (26%)" in shown and "\rscoring: 150/150 (100%)" in shown
    assert table.rows["hyp"].tolist() == BLEU().stats_many(list(zip(refs, hyps["hyp"]))).tolist()

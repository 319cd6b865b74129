"""Progress bars: on a terminal, one per phase, with counts; never in a pipe or a file."""

import io

import pytest

from conftest import DE_EN_HYP, DE_EN_REFS, read_lines
from evalproto.cli import progress as bars
from evalproto.cli.progress import TerminalProgress
from evalproto.evaluators.bleu import BLEU
from evalproto.sources import base as sources


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def at_once(monkeypatch):
    monkeypatch.setattr(bars, "DELAY_SECONDS", 0)  # a bar for every phase, however short
    monkeypatch.setattr(bars, "REFRESH_SECONDS", 0)  # and every step drawn


def test_scoring_shows_a_bar_that_counts_every_item_in_chunks(monkeypatch, at_once):
    monkeypatch.setattr(sources, "FIRST_CHUNK_ITEMS", 40)
    monkeypatch.setattr(sources, "CHUNK_ITEMS", 40)
    stream = Terminal()
    refs = list(zip(*(read_lines(path) for path in DE_EN_REFS)))
    hyps = {"hyp": read_lines(DE_EN_HYP)}
    rows = sources.corpus_rows(BLEU(), refs, hyps, TerminalProgress(stream), label="bleu")
    shown = stream.getvalue()
    assert "scoring bleu" in shown and "40/150" in shown and "120/150" in shown
    assert rows["hyp"].tolist() == BLEU().stats_many(list(zip(refs, hyps["hyp"]))).tolist()
    assert not bars._open  # erased at the end of the phase


def test_nothing_is_drawn_when_stderr_is_not_a_terminal(at_once):
    stream = io.StringIO()
    phase = TerminalProgress(stream).start("scoring", 10)
    phase.advance(10)
    phase.close()
    assert stream.getvalue() == ""


def test_clear_erases_the_bars_still_drawn(at_once):
    stream = Terminal()
    phase = TerminalProgress(stream).start("resampling", 1000)
    phase.advance(10)
    assert bars._open
    bars.clear()
    assert not bars._open and stream.getvalue().endswith("\r")

"""Progress bars: on a terminal, one per phase, with counts; never in a pipe or a file."""

import io
import time

import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, read_lines

from evalproto import EvaluatorError
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


def test_chunks_grow_while_the_evaluator_is_fast():
    sizes = []

    class Watched(BLEU):
        def stats_columns(self, refs, hyps):
            sizes.append(len(refs) * len(hyps))
            return super().stats_columns(refs, hyps)

    refs = list(zip(*(read_lines(path) for path in DE_EN_REFS)))
    hyps = {"a": read_lines(DE_EN_HYP), "b": read_lines(DE_EN_HYP)[::-1]}
    rows = sources.corpus_rows(Watched(), refs, hyps)
    # 300 items from FIRST_CHUNK_ITEMS, growing 8 times while a chunk takes a few
    # milliseconds; each chunk is sent while the one before is scored, so a size takes
    # effect one chunk late
    assert sizes == [50, 50, 200]
    assert rows["a"].tolist() == BLEU().stats_many(list(zip(refs, hyps["a"]))).tolist()


def test_no_chunk_is_scored_once_corpus_rows_has_raised():
    """The chunk sent ahead may be being scored when the first one's failure is raised:
    corpus_rows waits for it (or drops it, not begun), so that a caller who scores again
    with the same evaluator never has two threads in it."""
    calls = {"begun": 0, "ended": 0}

    class Failing(BLEU):
        def stats_columns(self, refs, hyps):
            calls["begun"] += 1
            try:
                if calls["begun"] == 1:
                    raise EvaluatorError("the first chunk fails", 0)
                time.sleep(0.5)
                return super().stats_columns(refs, hyps)
            finally:
                calls["ended"] += 1

    refs = list(zip(*(read_lines(path) for path in DE_EN_REFS)))
    with pytest.raises(EvaluatorError, match="the first chunk fails"):
        sources.corpus_rows(Failing(), refs, {"a": read_lines(DE_EN_HYP)})
    at_the_raise = dict(calls)
    assert at_the_raise["begun"] == at_the_raise["ended"]  # none in flight...
    time.sleep(0.7)
    assert calls == at_the_raise  # ...nor begun after (the one sent ahead was dropped)


@pytest.mark.parametrize("size, seconds, following", [
    (50, 0.1, 100), (1600, 0.1, 2000), (2000, 0.1, 2000),  # fast: double, up to the most
    (50, 0.01, 400), (400, 0.01, 2000),  # a compiled kernel: 8 times
    (50, 1.0, 50),  # about right: keep
    (50, 3.0, 25), (1, 30.0, 1),  # slow: halve, down to one item
])
def test_the_next_chunk_size(size, seconds, following):
    assert sources._next_chunk_size(size, seconds) == following


def test_a_long_label_is_cut_at_its_start_so_rate_and_time_stay(at_once):
    stream = Terminal()  # says no width: drawn in 80 columns
    phase = TerminalProgress(stream).start("resampling: /a/very/long/path/to/" + "x" * 60
                                           + "/system.txt, bleu", 100)
    phase.advance(10)
    drawn = stream.getvalue().split("\r")[-1]
    assert drawn.startswith("…") and "system.txt, bleu" in drawn
    assert "10/100" in drawn and "it/s]" in drawn and len(drawn) <= 80
    phase.close()


def test_bytes_are_counted_in_bytes(at_once):
    stream = Terminal()
    phase = TerminalProgress(stream).start("reading log.jsonl", 4 << 20, unit="B")
    phase.advance(1 << 20)
    assert "1.00M/4.00M" in stream.getvalue() and "B/s" in stream.getvalue()
    phase.close()

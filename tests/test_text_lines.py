"""A text corpus is kept as line offsets (and, for stdin and .gz, the bytes), not as a
list of str: every line reads as read_lines reads it, slices and all, and a file that
changes while it is scored is an error, not a mix of two files."""

import gzip
import os
import subprocess
import sys
import threading

import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, json_rows, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from evalproto.base.errors import InputError
from evalproto.base.items import SegmentNumbers
from evalproto.readers import text
from evalproto.readers.text import Lines, read_corpus, read_lines

AWKWARD = ("plain\r\ntrailing spaces   \n\n  leading kept\nü\u2028inside\u0085too\t\n"
           "\u00a0nbsp\u00a0\nno final newline")


@pytest.fixture(params=["on disk", "gzip", "in memory"])
def lines(request, tmp_path):
    path = tmp_path / "text.txt"
    data = AWKWARD.encode()
    if request.param == "gzip":
        path = tmp_path / "text.txt.gz"
        path.write_bytes(gzip.compress(data))
        return text._lines_of(str(path)), read_lines(str(path))
    path.write_bytes(data)
    if request.param == "in memory":
        return Lines(str(path), data), read_lines(str(path))
    return text._lines_of(str(path)), read_lines(str(path))


def test_lines_read_as_read_lines(lines):
    ours, expected = lines
    assert len(ours) == len(expected) == 7
    assert list(ours) == expected and ours == expected
    assert [ours[i] for i in range(-7, 7)] == expected[-7:] + expected
    for window in (slice(0, 3), slice(2, 7), slice(5, 100), slice(3, 3), slice(None, None, 2),
                   slice(-3, None), slice(6, 2, -1)):
        assert ours[window] == expected[window], window
    with pytest.raises(IndexError, match="has 7 lines, not 7"):
        ours[7]


def test_a_plain_file_is_not_kept_in_memory_but_stdin_and_gzip_are(tmp_path):
    path = tmp_path / "plain"
    path.write_text("a\nb\n")
    assert text._lines_of(str(path))._data is None
    gz = tmp_path / "plain.gz"
    gz.write_bytes(gzip.compress(b"a\nb\n"))
    assert text._lines_of(str(gz))._data == b"a\nb\n"


def test_invalid_utf8_is_found_in_any_block(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "_CHECKED_BYTES", 8)
    path = tmp_path / "bad"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(40)) + b"caf\xe9\n")
    with pytest.raises(InputError, match=rf"{path}: line 41: invalid UTF-8 \(byte 0xe9\)"):
        text._lines_of(str(path))


def test_a_file_changed_while_it_is_scored_is_an_error(tmp_path):
    path = tmp_path / "hyp"
    path.write_text("one\ntwo\n")
    lines = text._lines_of(str(path))
    assert lines[1] == "two"
    path.write_text("one\nTWO\nthree\n")
    with pytest.raises(InputError, match="the file changed while evalproto was reading it"):
        lines[1]


def test_a_fifo_is_read_once_and_kept(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    hyps = "".join(line + "\n" for line in read_lines(DE_EN_HYP))
    writer = threading.Thread(target=lambda: fifo.write_text(hyps))
    writer.start()
    corpus = read_corpus(DE_EN_REFS, [str(fifo)])
    writer.join()
    assert corpus.systems[str(fifo)] == read_lines(DE_EN_HYP)
    assert corpus.refs[3] == [read_lines(path)[3] for path in DE_EN_REFS]


def test_corpus_score_reads_a_fifo():
    """The same through the command line, with the shell's process substitution."""
    script = (f'"{sys.executable}" -m evalproto corpus-score {DE_EN_REFS[0]} '
              f'<(cat {DE_EN_HYP}) -f json')
    completed = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    expected = run_cli("corpus-score", DE_EN_REFS[0], DE_EN_HYP, "-f", "json").output
    assert json_rows(completed.stdout)[0]["score"] == json_rows(expected)[0]["score"]


def test_segment_numbers_are_the_line_numbers_as_str():
    numbers = SegmentNumbers(5, first=11)
    assert list(numbers) == ["11", "12", "13", "14", "15"] == numbers
    assert (numbers[0], numbers[-1], numbers[1:3], len(numbers)) == ("11", "15", ["12", "13"], 5)
    assert numbers == SegmentNumbers(5, 11) and numbers != SegmentNumbers(5)


@pytest.mark.parametrize("suffix", [" .", ".", "ü", "\u00a0nbsp", "", " ", "inside\u0085too",
                                    "line"])
def test_counted_endings_are_those_of_the_lines(lines, suffix):
    ours, expected = lines
    assert ours.count_endings(suffix) == sum(line.endswith(suffix) for line in expected)


@given(st.lists(st.text(st.sampled_from("a .\u3002\u00a0\t\r\u2028\u0085ü"), max_size=6),
                max_size=30),
       st.sampled_from([" .", ".", "\u3002", " \u3002", "ü.", "a"]))
@settings(max_examples=300, deadline=None)
def test_counted_endings_of_any_text_in_any_block(tmp_path_factory, texts, suffix):
    path = tmp_path_factory.mktemp("endings") / "text"
    path.write_text("\n".join(texts), encoding="utf-8")
    expected = read_lines(str(path))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text, "_COUNTED_LINES", 4)
        assert text._lines_of(str(path)).count_endings(suffix) == sum(
            line.endswith(suffix) for line in expected)


@pytest.mark.parametrize("content, too_long", [
    (b"12345678\n12345678", None), (b"1\n123456789\n1\n", 2), (b"12\n\n3\n" + b"x" * 20, 4),
    (b"x" * 9, 1), (b"1\n" * 30 + b"123456789", 31), (b"1234567\n" * 5, None)])
def test_a_regular_file_and_a_stream_refuse_the_same_long_line(tmp_path, monkeypatch,
                                                               content, too_long):
    monkeypatch.setattr(text, "MAX_LINE_BYTES", 8)
    monkeypatch.setattr(text, "_READ_BYTES", 3)
    plain = tmp_path / "plain.txt"
    plain.write_bytes(content)
    packed = tmp_path / "packed.txt.gz"
    packed.write_bytes(gzip.compress(content))
    for path in (plain, packed):
        if too_long is None:
            assert text.read_bytes(str(path)) == content
        else:
            with pytest.raises(InputError, match=f"{path}: line {too_long} is longer than 0 MiB"):
                text.read_bytes(str(path))


@pytest.mark.parametrize("content, too_long", [
    (b"12345678\n12345678", None), (b"1\n123456789\n1\n", 2), (b"12\n\n3\n" + b"x" * 20, 4),
    (b"x" * 9, 1), (b"1\n" * 30 + b"123456789", 31), (b"1234567\n" * 5, None),
    (b"12345678" * 3, 1), (b"1\n" + b"x" * 7 + b"\n", None)])
def test_a_file_read_in_pieces_refuses_the_same_long_line(tmp_path, monkeypatch, content,
                                                          too_long):
    """A plain file's Lines are found a piece at a time: a line longer than the limit
    within a piece, across pieces or at the end is the error read_bytes gives."""
    monkeypatch.setattr(text, "MAX_LINE_BYTES", 8)
    monkeypatch.setattr(text, "_CHECKED_BYTES", 3)
    plain = tmp_path / "plain.txt"
    plain.write_bytes(content)
    if too_long is None:
        assert text._lines_of(str(plain)) == text.split_lines(str(plain), content)
    else:
        with pytest.raises(InputError, match=f"{plain}: line {too_long} is longer than 0 MiB"):
            text._lines_of(str(plain))


@given(st.lists(st.text(st.sampled_from("ab\nü"), max_size=9), max_size=20))
@settings(max_examples=200, deadline=None)
def test_line_ends_are_found_in_blocks_as_in_the_whole(tmp_path_factory, texts):
    """Every line's end, found a few bytes at a time here (64 MB, and a file 16 MB, at a
    time for real), is where a search of the whole finds it; in uint32 below 4 GB."""
    data = "".join(texts).encode()
    whole = [i for i, byte in enumerate(data) if byte == ord("\n")]
    if data and not data.endswith(b"\n"):
        whole.append(len(data))
    path = tmp_path_factory.mktemp("ends") / "text"
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text, "_FOUND_BYTES", 3)
        patch.setattr(text, "_CHECKED_BYTES", 2)  # pieces inside a character, too
        ends = text.line_ends(data)
        streamed = text.streamed_line_ends(str(path), len(data))
        lines = text._lines_of(str(path))
    assert ends.tolist() == streamed.tolist() == whole
    assert ends.dtype == streamed.dtype == "uint32"
    assert text.line_ends(data).tolist() == whole
    assert lines._data is None and list(lines) == read_lines(str(path))

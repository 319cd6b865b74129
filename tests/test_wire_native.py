"""The protocol's compiled batch path (evalproto.wire._lines) agrees with the Python code
it stands in for: it parses exactly the SCORE lines that parse_request parses, into
the same requests, formats rows as format_numbers does, reads reply rows as
parse_numbers reads them, and declines (None) everything else; and the server's
replies are the same bytes with and without it (EVALPROTO_PURE_PYTHON=1)."""

import io
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalproto.base.compiled import PURE_PYTHON_VARIABLE
from evalproto.base.numerals import format_numbers
from evalproto.evaluators.bleu import BLEU
from evalproto.evaluators.chrf import CHRF
from evalproto.evaluators.ter import TER
from evalproto.wire import _lines, protocol
from evalproto.wire.protocol import RequestError, ScoreRequest, parse_request
from evalproto.wire.server import serve

# Pieces that sit on the edges of the request grammar: separators and near-misses,
# every kind of whitespace that str.strip removes (and a few it keeps), bytes that are
# not UTF-8, and text in several scripts.
PIECES = ["SCORE", "score", "EVAL", "INFO", "|||", "||||", "||", "|", " ", "\t", "\r",
          "\x0b", "\x1c", "\x1f", "\x85", "\xa0", "\u3000", "\u2028", "\u200b", "\ufeff",
          "a", "Zürich", "東京", "e\u0301", "𝔘", "1", "-", ".", "&quot;"]
RAW = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00"]


def python_requests(lines):
    """What the server's Python path makes of raw lines: the requests if every line is
    a SCORE request, else None."""
    requests = []
    for line in lines:
        try:
            request = parse_request(line.decode("utf-8"))
        except (UnicodeDecodeError, RequestError):
            return None
        if not isinstance(request, ScoreRequest):
            return None
        requests.append(request)
    return requests


line_pieces = st.lists(st.one_of(st.sampled_from(PIECES).map(str.encode),
                                 st.sampled_from(RAW), st.text(max_size=4).map(str.encode)),
                       max_size=12).map(b"".join)
score_lines = st.builds(
    lambda fields, prefix, suffix: prefix + b" ||| ".join([b"SCORE", *fields]) + suffix,
    st.lists(line_pieces, min_size=2, max_size=4), st.sampled_from([b"", b" ", b"\t"]),
    st.sampled_from([b"", b" ", b"\r", b"\xc2\xa0"]))


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(score_lines, line_pieces), min_size=1, max_size=4))
def test_score_requests_parse_what_parse_request_parses(lines):
    expected = python_requests(lines)
    found = _lines.score_requests(lines, ScoreRequest)
    if expected is None:
        assert found is None
    else:
        assert found == expected
        assert all(type(item) is ScoreRequest for item in found)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(score_lines, min_size=1, max_size=4))
def test_well_formed_score_lines_are_all_taken(lines):
    if python_requests(lines) is not None:
        assert _lines.score_requests(lines, ScoreRequest) is not None


def test_score_requests_decline_what_is_not_a_score_line():
    good = b"SCORE ||| a b ||| a c"
    assert _lines.score_requests([good], ScoreRequest) == [ScoreRequest(("a b",), "a c")]
    for bad in (b"INFO", b"EVAL ||| 1 2", b"SCORE ||| only", b"SCORE", b"SCORE ||| a \xff ||| b",
                b"SCOREX ||| a ||| b", protocol.LineTooLong()):
        assert _lines.score_requests([good, bad], ScoreRequest) is None


numbers = st.one_of(
    st.integers(-2**63, 2**63 - 1).map(float), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 2.0**53, 2.0**53 + 2, 2.0**63, -2.0**63, 1e16, 1e-5, 0.1,
                     5e-324, 1.7976931348623157e308, 123456789.5]))


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.integers(1, 5).flatmap(
    lambda width: st.tuples(st.just(width), st.lists(st.lists(numbers, min_size=width,
                                                              max_size=width), max_size=5))))
def test_format_rows_write_what_format_numbers_writes(case):
    width, rows = case
    array = np.array(rows, dtype=np.float64).reshape(len(rows), width)
    found = _lines.format_rows(array, len(rows), width)
    try:
        expected = "".join(format_numbers(row) + "\n" for row in rows).encode()
    except ValueError:  # not finite
        assert found is None
        return
    in_range = all(not value.is_integer() or abs(value) < 2.0**63 for row in rows for value in row)
    assert found == (expected if in_range else None)


def test_format_rows_take_only_the_rows_announced_as_float64():
    rows = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert _lines.format_rows(rows, 2, 3) == b"0 1 2\n3 4 5\n"
    assert _lines.format_rows(rows, 3, 2) == b"0 1\n2 3\n4 5\n"
    assert _lines.format_rows(rows, 1, 3) is None  # not the announced size
    assert _lines.format_rows(rows.astype(np.int64), 2, 3) is None  # not float64
    assert _lines.format_rows(rows.astype(np.float32), 2, 3) is None
    with pytest.raises(TypeError):
        _lines.format_rows([[0.0, 1.0, 2.0]], 1, 3)  # not a buffer
    with pytest.raises(ValueError):
        _lines.format_rows(rows.T, 3, 2)  # not C-contiguous


TOKENS = ["0", "12", "-3", "+4", "5.", ".5", "-.5e-3", "1e5", "1E+05", "2.5e-07", "1e999",
          "-1e999", "nan", "inf", "-Infinity", "1_0", "0x10", ".", "e5", "1e", "+", "١٢",
          "１２", "1.2.3", "--1", "9007199254740993", "4.9e-324", "1e-400", "-0", "+0",
          "007", "123456789012345", "-999999999999999", "1234567890123456"]
SEPARATORS = [" ", "  ", "\t", "\x0b", "\x0c", "\r", "\x1c", "\x1f", "\xa0", "\u3000"]


def python_rows(lines, width):
    """The values parse_numbers reads from reply lines of `width` numbers, or None."""
    try:
        rows = [protocol.parse_numbers(line) for line in lines]
    except RequestError:
        return None
    return rows if all(len(row) == width for row in rows) else None


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.integers(1, 3), st.lists(st.lists(st.tuples(st.sampled_from(SEPARATORS),
                                                      st.sampled_from(TOKENS)), max_size=4)
                                   .map(lambda parts: "".join(a + b for a, b in parts)),
                                   max_size=4))
def test_parse_rows_read_what_parse_numbers_reads(width, lines):
    expected = python_rows(lines, width)
    found = _lines.parse_rows(lines, width)
    if found is None:  # declined: anything but ASCII lines of `width` decimals may be
        assert expected is None or not all(map(str.isascii, lines))
        return
    values = struct.unpack(f"{len(found) // 8}d", found)
    wanted = tuple(value for row in expected for value in row)
    assert values == wanted
    assert [math.copysign(1, value) for value in values] == [
        math.copysign(1, value) for value in wanted]


def test_parse_rows_read_small_integers_exactly_and_keep_the_sign_of_zero():
    line = "-0 +0 007 123456789012345 -999999999999999 1234567890123456 2.5"
    values = struct.unpack("7d", _lines.parse_rows([line], 7))
    assert values == tuple(float(token) for token in line.split())
    assert [math.copysign(1, value) for value in values[:2]] == [-1, 1]


def test_parse_rows_give_a_writable_array(monkeypatch):
    monkeypatch.delenv(PURE_PYTHON_VARIABLE, raising=False)
    rows = protocol.parse_rows(["1 2", "3 4.5"], 2)
    rows[0, 0] = 7  # the caller owns the rows
    assert rows.tolist() == [[7, 2], [3, 4.5]]
    assert protocol.parse_rows(["1 2", "3"], 2) is None


def served(evaluator, data, keep_going=False):
    replies, log = io.BytesIO(), io.StringIO()
    status = serve(evaluator, io.BufferedReader(io.BytesIO(data)), replies, log, keep_going)
    return status, replies.getvalue(), log.getvalue()


REQUESTS = [
    b"SCORE ||| the cat sat on the mat ||| the cat sat on a mat\n" * 3,
    b"SCORE ||| a b c ||| x y z ||| a b d\nSCORE |||  Z\xc3\xbcrich  \xe3\x80\x80||| Zurich\n",
    b"SCORE ||| \xe6\x9d\xb1\xe4\xba\xac ||| \xe6\x9d\xb1\nINFO\nSCORE ||| a ||| a\n",
    b"SCORE ||| a ||| b\nEVAL ||| 1 2\nSCORE ||| a ||| b\n",
    b"SCORE ||| a ||| b\nSCORE ||| a \xff ||| b\nSCORE ||| c ||| c\n",
    b"SCORE ||| a ||| b\nbogus\nSCORE ||| a\n",
    b"SCORE ||| a ||| \n" + b"SCORE ||| ||| \n",
]


@pytest.mark.parametrize("evaluator", [BLEU(), BLEU(tokenize="char", lowercase=True), CHRF(),
                                       CHRF(word_order=2), TER()], ids=repr)
@pytest.mark.parametrize("data", REQUESTS)
@pytest.mark.parametrize("keep_going", [False, True])
def test_server_replies_are_the_same_with_and_without_the_compiled_path(
        evaluator, data, keep_going, monkeypatch):
    monkeypatch.delenv(PURE_PYTHON_VARIABLE, raising=False)
    compiled = served(evaluator, data, keep_going)
    monkeypatch.setenv(PURE_PYTHON_VARIABLE, "1")
    assert served(evaluator, data, keep_going) == compiled


@pytest.mark.slow
def test_server_takes_the_compiled_path_for_score_batches(monkeypatch):
    monkeypatch.delenv(PURE_PYTHON_VARIABLE, raising=False)
    calls = []
    monkeypatch.setattr("evalproto.wire.server.parse_request",
                        lambda line: calls.append(line) or parse_request(line))
    status, replies, _ = served(BLEU(), REQUESTS[0] + REQUESTS[1])
    assert status == 0 and replies.count(b"\n") == 5
    assert calls == []  # no line went through the Python parser

"""Request parsing and reply formatting, for every spelling real clients use."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalproto.base.errors import InputError
from evalproto.base.numerals import format_number, format_numbers
from evalproto.wire.protocol import (
    EvalRequest,
    InfoRequest,
    RequestError,
    ScoreRequest,
    format_error,
    format_eval_request,
    format_rows,
    format_score_request,
    format_score_requests,
    parse_numbers,
    parse_request,
    parse_rows,
)


def test_score_with_several_references_strips_fields():
    request = parse_request("SCORE |||  ref one ||| ref two\t|||  the hyp \n")
    assert request == ScoreRequest(refs=("ref one", "ref two"), hyp="the hyp")


def test_cdec_handshake_is_an_ordinary_score_request():
    request = parse_request(
        "SCORE ||| Reference initialization string . ||| Testing initialization string .")
    assert request == ScoreRequest(refs=("Reference initialization string .",),
                                   hyp="Testing initialization string .")


def test_empty_reference_and_hypothesis_are_allowed():
    assert parse_request("SCORE ||| ||| ") == ScoreRequest(refs=("",), hyp="")


def test_eval_in_our_spelling_and_cdecs_six_significant_digits():
    assert parse_request("EVAL ||| 8 6 3.5 -2").vector == (8.0, 6.0, 3.5, -2.0)
    assert parse_request("EVAL ||| 1.23457e+06 4.5E-3 .5").vector == (1234570.0, 0.0045, 0.5)


def test_eval_in_moses_spelling():
    assert parse_request("EVAL |||1 2 3 \n") == EvalRequest((1.0, 2.0, 3.0))


def test_info_bare_or_with_empty_field():
    assert parse_request("INFO\n") == InfoRequest()
    assert parse_request("INFO |||") == InfoRequest()


def test_carriage_return_and_unicode_separators_stay_inside_fields():
    request = parse_request("SCORE ||| a\rb ||| c\u2028d\x85e\r\n")
    assert request == ScoreRequest(refs=("a\rb",), hyp="c\u2028d\x85e")


@pytest.mark.parametrize("line, message", [
    ("SCORE only a hypothesis", "no '|||'"),
    ("", "no '|||'"),
    ("BLEU ||| a ||| b", "unknown command 'BLEU'"),
    ("score ||| a ||| b", "unknown command 'score'"),
    ("SCORE ||| hypothesis without reference", "at least one reference"),
    ("EVAL ||| 1 2 ||| 3", "one field of numbers"),
    ("EVAL ||| 1 two 3", "number 2 is not a finite number: 'two'"),
    ("EVAL ||| 1 nan 3", "number 2 is not a finite number: 'nan'"),
    ("EVAL ||| inf", "not a finite number"),
    ("EVAL ||| 1_000", "not a finite number"),
    ("EVAL ||| 1e400", "number 1 overflows a double"),
    ("INFO ||| please", "unknown command 'INFO'"),
])
def test_bad_requests_say_what_is_wrong(line, message):
    with pytest.raises(RequestError, match=message.replace("(", r"\(").replace("|", r"\|")):
        parse_request(line)


def test_huge_fields_are_shortened_in_messages():
    with pytest.raises(RequestError) as caught:
        parse_request("X" * 1_000_000)
    assert len(str(caught.value)) < 300
    assert "1000000 characters" in str(caught.value)


@pytest.mark.parametrize("value, text", [
    (0.0, "0"), (-0.0, "0"), (12.0, "12"), (-3.0, "-3"), (2.0 ** 60, str(2 ** 60)),
    (0.1, "0.1"), (1 / 3, "0.3333333333333333"), (1e-7, "1e-07"), (-2.5, "-2.5"),
])
def test_numbers_are_written_losslessly(value, text):
    assert format_number(value) == text
    assert float(format_number(value)) == value


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_never_written(value):
    with pytest.raises(ValueError, match="finite"):
        format_number(value)


@pytest.mark.parametrize("rows", [
    [[0.0, -0.0, 12.0, -3.0], [7.0, 1.0, 0.0, 2.0]],  # counts: the bulk path
    [[2.0 ** 53, 1.0], [-(2.0 ** 60), 3.0]],  # integral but too large to take in bulk
    [[0.5, 1.0], [1 / 3, 1e-7]],
])
def test_rows_are_written_as_each_number_would_be(rows):
    array = np.array(rows)
    assert format_rows(array) == [format_numbers(row) for row in rows]
    assert format_rows(array, "\t") == [format_numbers(row, "\t") for row in rows]


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_rows_with_a_non_finite_number_are_refused(bad):
    with pytest.raises(ValueError, match="finite"):
        format_rows(np.array([[1.0, 2.0], [bad, 3.0]]))


def test_reply_rows_are_read_as_each_line_would_be():
    lines = ["1 2 3", "  -0.5\t1e-07 +4 ", "1.7976931348623157e308 .5 5."]
    assert parse_rows(lines, 3).tolist() == [list(parse_numbers(line)) for line in lines]
    assert parse_rows([], 13).shape == (0, 13)


@pytest.mark.parametrize("bad", ["1 2", "1 2 3 4", "nan 1 2", "1 inf 2", "1e999 1 2",
                                 "1_000 1 2", "١ 2 3", "1.2.3 4 5", "ERROR request 2: no"])
def test_reply_rows_with_any_bad_line_are_left_to_parse_one_by_one(bad):
    assert parse_rows(["1 2 3", bad, "4 5 6"], 3) is None


def test_every_double_round_trips_through_the_wire():
    values = [1 / 7, 123456789.125, 5e-324, 1.7976931348623157e308, -0.1 * 3]
    assert parse_numbers(" ".join(format_number(v) for v in values)) == tuple(values)


def test_score_request_refuses_text_that_would_desynchronize_the_stream():
    assert format_score_request(["a", "b"], "c") == "SCORE ||| a ||| b ||| c\n"
    with pytest.raises(ValueError, match="a newline"):
        format_score_request(["line one\nline two"], "hyp")
    with pytest.raises(ValueError, match=r"'\|\|\|'"):
        format_score_request(["ref"], "a ||| b")


@pytest.mark.slow
@given(st.lists(st.tuples(st.lists(st.text("a |\n\udcff", max_size=6), max_size=3),
                          st.text("a |\n\udcff", max_size=6)), max_size=8))
@settings(max_examples=500, deadline=None)
def test_score_requests_in_bulk_are_made_and_refused_as_one_by_one(items):
    """The first item that cannot be sent is named, whatever is wrong with it: a
    newline, a separator, a lone surrogate, or no reference."""
    expected, refused = [], None
    for index, (refs, hyp) in enumerate(items):
        try:
            expected.append(format_score_request(refs, hyp))
        except ValueError as exc:
            refused = refused or (index, str(exc))
    if refused is None:
        assert format_score_requests(items) == expected
    else:
        with pytest.raises(InputError) as raised:
            format_score_requests(items)
        assert (raised.value.item, raised.value.problem) == refused


def test_eval_request_round_trips():
    assert parse_request(format_eval_request([1, 0.5, 3e20])).vector == (1.0, 0.5, 3e20)


def test_error_reply_is_always_one_line():
    assert format_error("bad\nthing\r\u2028here") == "ERROR bad thing here\n"

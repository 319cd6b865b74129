"""The server under generated requests: one reply per request, never out of step,
never a number for a bad request, and fail-fast unless --keep-going.

Requests are generated with a known class: good ones (whose exact reply the test
computes from the evaluator directly), bad ones (which must get ERROR), and raw
bytes (which must get some single well-formed reply line).
"""

import io
import json

from conftest import script
from conftest import serve as serve_process
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalproto.base.numerals import format_number, format_numbers
from evalproto.evaluators.bleu import BLEU
from evalproto.wire.server import serve

EVALUATOR = BLEU()
WIDTH = len(EVALUATOR.stat_names)
ODD_TEXT = ["\t", "\r", "\u2028", "\x85", "\x0b", "\x0c", "\x00", "|", "||", " ", "",
            "é", "漢字", "🙂", "a.b", "1e400", "nan", "-3"]
BAD_NUMBERS = ["nan", "NaN", "inf", "-Infinity", "1e400", "-1e999", "0x10", "1_0", "one", "1,5"]
MEGABYTE = "ab cd. " * 150_000

characters = st.characters(blacklist_characters="\n", blacklist_categories=("Cs",))
field = st.one_of(st.text(characters, max_size=30), st.sampled_from(ODD_TEXT)).filter(
    lambda text: "|||" not in text)
count = st.integers(min_value=0, max_value=10 ** 6)


@st.composite
def possible_sum(draw):
    """A vector that sums BLEU rows: total_1 is the hypothesis length, the totals do not
    grow with the order, and no order matches more n-grams than it has."""
    totals = [draw(count)]
    for _ in range(3):
        totals.append(draw(st.integers(0, totals[-1])))
    correct = [draw(st.integers(0, total)) for total in totals]
    return [totals[0], draw(count), *correct, *totals]


@st.composite
def good_request(draw, big=False):
    """(request bytes, expected reply) for a request that must be served."""
    if draw(st.booleans()):
        refs = draw(st.lists(st.one_of(field, st.just(MEGABYTE)) if big else field,
                             min_size=1, max_size=4))
        hyp = draw(field)
        line = " ||| ".join(["SCORE", *refs, hyp])
        stripped = [text.strip() for text in refs]
        reply = format_numbers(EVALUATOR.checked_stats(stripped, hyp.strip()))
    else:
        vector = draw(possible_sum())
        separator = draw(st.sampled_from([" ||| ", " |||", "|||", "\t|||  "]))
        ending = draw(st.sampled_from(["", " ", "\r"]))
        line = "EVAL" + separator + " ".join(map(str, vector)) + ending
        reply = format_number(EVALUATOR.checked_score(vector))
    return line.encode("utf-8"), reply


@st.composite
def bad_request(draw):
    """Request bytes that must be answered with ERROR."""
    kind = draw(st.sampled_from(["utf8", "number", "negative", "count", "one field",
                                 "no separator", "command", "impossible"]))
    if kind == "impossible":  # more matches than n-grams
        vector = draw(possible_sum())
        order = draw(st.integers(0, 3))
        vector[2 + order] = vector[6 + order] + draw(st.integers(1, 10))
        return ("EVAL ||| " + " ".join(map(str, vector))).encode()
    if kind == "utf8":
        junk = draw(st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x80abc"]))
        return b"SCORE ||| " + draw(field).encode() + junk + b" ||| hyp"
    if kind in ("number", "negative"):
        vector = [str(value) for value in draw(possible_sum())]
        position = draw(st.integers(0, WIDTH - 1))
        vector[position] = (draw(st.sampled_from(BAD_NUMBERS)) if kind == "number"
                            else str(-draw(st.integers(1, 10 ** 6))))
        return ("EVAL ||| " + " ".join(vector)).encode()
    if kind == "count":
        size = draw(st.integers(0, 2 * WIDTH).filter(lambda n: n != WIDTH))
        return ("EVAL ||| " + " ".join(map(str, draw(st.lists(count, min_size=size,
                                                               max_size=size))))).encode()
    if kind == "one field":
        return ("SCORE ||| " + draw(field)).encode()
    if kind == "no separator":
        return draw(field.filter(lambda text: text.strip() != "INFO")).encode()
    command = draw(st.text(characters, min_size=1, max_size=8).filter(
        lambda text: "|||" not in text and text.strip() not in ("SCORE", "EVAL", "INFO")))
    return (command + " ||| a ||| b").encode()


raw_request = st.binary(max_size=60).map(lambda data: data.replace(b"\n", b""))
request = st.one_of(
    good_request().map(lambda pair: ("good",) + pair),
    bad_request().map(lambda line: ("bad", line, None)),
    raw_request.map(lambda line: ("raw", line, None)),
    st.just(("info", b"INFO", None)),
)
FINAL = b"SCORE ||| the final check ||| the final check"
FINAL_REPLY = format_numbers(EVALUATOR.checked_stats(["the final check"], "the final check"))


def run_server(requests, keep_going):
    stdin = io.BytesIO(b"".join(line + b"\n" for line in requests))
    stdout, stderr = io.BytesIO(), io.StringIO()
    status = serve(EVALUATOR, stdin, stdout, stderr, keep_going=keep_going)
    return status, stdout.getvalue().decode("utf-8").split("\n")[:-1], stderr.getvalue()


def check_reply(kind, expected, reply):
    """What each kind of request may be answered with."""
    if kind == "good":
        assert reply == expected
    elif kind == "bad":
        assert reply.startswith("ERROR request ")
    elif kind == "info":
        assert json.loads(reply)["stats"] == list(EVALUATOR.stat_names)
    elif not reply.startswith("ERROR request "):  # raw bytes that happened to be valid
        numbers = reply.split()
        assert len(numbers) in (1, WIDTH) and all(float(n) >= 0 for n in numbers)


FUZZ = settings(max_examples=6000, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@FUZZ
@given(st.lists(request, min_size=1, max_size=8))
def test_keep_going_answers_every_request_in_step(batch):
    status, replies, log = run_server([line for _, line, _ in batch] + [FINAL], keep_going=True)
    assert status == 0
    assert len(replies) == len(batch) + 1
    for (kind, _, expected), reply in zip(batch, replies):
        check_reply(kind, expected, reply)
        if reply.startswith("ERROR"):
            assert f"bleu-evaluator: {reply}\n" in log
    assert replies[-1] == FINAL_REPLY


@settings(FUZZ, max_examples=4000)
@given(st.lists(request, min_size=1, max_size=8))
def test_without_keep_going_the_first_error_is_the_last_reply(batch):
    status, replies, log = run_server([line for _, line, _ in batch] + [FINAL], keep_going=False)
    errors = [i for i, reply in enumerate(replies) if reply.startswith("ERROR")]
    if not errors:
        assert status == 0 and replies[-1] == FINAL_REPLY
        assert all(kind in ("good", "raw", "info") for kind, _, _ in batch)
        return
    first = errors[0]
    assert status == 1 and len(replies) == first + 1
    assert log == f"bleu-evaluator: {replies[first]}\n"
    assert all(kind != "bad" for kind, _, _ in batch[:first]), "a bad request got a number"
    for (kind, _, expected), reply in zip(batch[:first], replies[:first]):
        check_reply(kind, expected, reply)


@settings(FUZZ, max_examples=40)
@given(st.lists(good_request(big=True), min_size=1, max_size=3))
def test_megabyte_fields(batch):
    status, replies, _ = run_server([line for line, _ in batch], keep_going=False)
    assert status == 0 and replies == [expected for _, expected in batch]


@settings(FUZZ, max_examples=25)
@given(st.lists(request, min_size=1, max_size=20))
def test_through_a_real_pipe(batch):
    result = serve_process([script("bleu-evaluator"), "--keep-going"],
                           b"".join(line + b"\n" for _, line, _ in batch) + FINAL + b"\n")
    replies = result.stdout.decode("utf-8").split("\n")[:-1]
    assert result.returncode == 0 and len(replies) == len(batch) + 1
    for (kind, _, expected), reply in zip(batch, replies):
        check_reply(kind, expected, reply)
    assert replies[-1] == FINAL_REPLY

"""The compiled reader of LM Challenge logs (`event_columns`, native/lmlog.cpp) reads
what msgspec reads, to the same columns, or declines the chunk: on generated logs with
every kind of key, escapes, unicode, unselected events, numbers of every form, unknown
fields and broken lines; and it takes the plain logs that lmc writes."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalproto.readers import _lmlog, lmlogs

keys = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1),
                 st.integers(2**63, 2**70), st.text(max_size=6),
                 st.sampled_from(["u0", "u1", "\u00e9", "\U0001f600", "a\"b", "\\"]))
words = st.one_of(st.text(max_size=5), st.sampled_from(["w1", "wé", "東京", "e\u0301", ""]))
numbers = st.one_of(st.none(), st.integers(-10**30, 10**30),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from([-0.0, 5e-324, 1.7976931348623157e308, -1.5e-7]))
anything = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(
    allow_nan=False, allow_infinity=False), st.text(max_size=4)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=3), max_leaves=8)


@st.composite
def events(draw):
    target = draw(words)
    event = {"target": target}
    for field in ("user", "message", "token"):
        if draw(st.booleans()):
            event[field] = draw(keys)
    if draw(st.integers(0, 3)):
        first = draw(st.lists(st.one_of(words, st.just(target)), max_size=4))
        rest = draw(st.lists(st.lists(words, max_size=3), max_size=len(target) + 1))
        event["completions"] = [first, *rest]
    elif draw(st.booleans()):
        event["completions"] = None
    if draw(st.booleans()):
        event["logp"] = draw(numbers)
    if draw(st.integers(0, 4)) == 0:
        event["select"] = draw(st.booleans())
    if draw(st.integers(0, 6)) == 0:
        event["character"] = draw(anything)  # a field the statistics do not read
    if draw(st.integers(0, 20)) == 0:
        event["results"] = draw(st.sampled_from([None, [["w1", -1.0, None]]]))
    items = draw(st.permutations(list(event.items())))
    return json.dumps(dict(items), ensure_ascii=draw(st.booleans()),
                      separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])))


def broken(line: str, how: int) -> str:
    """A line made odd in one of the ways the reader must decline or read alike."""
    return [line, line + "\r", " " + line + " ", line.replace("}", ',"target":"x"}', 1),
            line[:-1], "", line.replace('"', "'", 1), line + "x", "[" + line + "]",
            line.replace("{", '{"logp": 1e999, ', 1), line.replace("{", '{"user": 1.0, ', 1),
            line.replace("{", '{"message": "\\ud800", ', 1),
            line.replace("{", '{"token": "\\ud83d\\ude00", ', 1),
            line.replace("{", '{"select": null, ', 1), line.encode().decode("latin-1")][how]


def msgspec_columns(data: bytes):
    """The reference reading: msgspec, then the Python code's columns."""
    try:
        columns = lmlogs._decoded_columns("log", 1, data)
    except Exception:
        return None
    return columns


def same_columns(native, reference) -> None:
    ours = lmlogs._native_columns(*native)
    assert ours.users == reference.users
    assert [type(user) for user in ours.users] == [type(user) for user in reference.users]
    assert ours.messages == reference.messages
    for name in ("select", "user_changes", "message_changes", "lengths", "hashes", "ranks",
                 "starts"):
        assert np.array_equal(getattr(ours, name), getattr(reference, name)), name
    assert np.array_equal(ours.logps, reference.logps, equal_nan=True)
    assert [math.copysign(1, value) for value in ours.logps] == [
        math.copysign(1, value) for value in reference.logps]
    assert not reference.reranking  # the reader declines candidates


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(events(), st.integers(0, 40)), min_size=1, max_size=6),
       st.booleans())
def test_the_compiled_reader_reads_what_msgspec_reads_or_declines(lines, final_newline):
    text = "\n".join(line if how > 14 else broken(line, how) for line, how in lines)
    data = (text + ("\n" if final_newline else "")).encode("utf-8", "surrogatepass")
    native = _lmlog.event_columns(data, 0, len(data))
    reference = msgspec_columns(data)
    if native is not None:
        assert reference is not None, "read a chunk that msgspec refuses"
        same_columns(native, reference)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(events(), min_size=1, max_size=8))
def test_plain_logs_are_read_by_the_compiled_reader(lines):
    plain = [line for line in lines if '"results": [' not in line and '"results":[' not in line
             and "\\ud8" not in line.lower()]
    big = any(abs(json.loads(line).get(field) or 0) >= 2**63 for line in plain
              for field in ("user", "message", "token")
              if type(json.loads(line).get(field)) is int)
    if not plain or big:
        return
    data = ("\n".join(plain) + "\n").encode()
    native = _lmlog.event_columns(data, 0, len(data))
    assert native is not None
    same_columns(native, msgspec_columns(data))


def test_a_span_of_the_log_is_read_and_its_bounds_checked():
    data = b'{"target": "a"}\n{"target": "b", "user": 1}\n'
    users, *_ = _lmlog.event_columns(data, 16, len(data))
    assert users == [1]
    with pytest.raises(ValueError):
        _lmlog.event_columns(data, 10, 5)
    with pytest.raises(TypeError):
        _lmlog.event_columns(data.decode(), 0, 3)

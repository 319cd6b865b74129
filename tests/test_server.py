"""bleu-evaluator as a tuner sees it: a real subprocess speaking the protocol."""

import io
import json
import subprocess
import threading

import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, read_lines, serve
from sacrebleu.metrics import BLEU as SacreBLEU

from evalproto.base.numerals import format_numbers
from evalproto.evaluators.bleu import BLEU
from evalproto.wire.protocol import parse_numbers
from evalproto.wire.server import serve as serve_requests


def replies(result):
    return result.stdout.decode("utf-8").splitlines()


def test_score_then_eval_matches_sacrebleu_sentence_score(bleu_evaluator):
    result = serve(bleu_evaluator, "SCORE ||| the cat sat on the mat ||| the cat sat on a mat\n"
                                   "EVAL ||| 6 6 5 3 2 1 6 5 4 3\n")
    assert result.returncode == 0, result.stderr
    stats_line, score_line = replies(result)
    assert stats_line == "6 6 5 3 2 1 6 5 4 3"
    expected = SacreBLEU().sentence_score("the cat sat on a mat", ["the cat sat on the mat"])
    assert float(score_line) == expected.score


def test_summed_score_replies_evaluate_to_the_corpus_score(bleu_evaluator):
    refs = list(zip(*(read_lines(path) for path in DE_EN_REFS)))
    hyps = read_lines(DE_EN_HYP)
    requests = "".join(f"SCORE ||| {ref_a} ||| {ref_b} ||| {hyp}\n"
                       for (ref_a, ref_b), hyp in zip(refs, hyps))
    result = serve(bleu_evaluator, requests)
    assert result.returncode == 0, result.stderr
    rows = [parse_numbers(line) for line in replies(result)]
    assert len(rows) == len(hyps)
    total = [sum(column) for column in zip(*rows)]
    result = serve(bleu_evaluator, "EVAL ||| " + " ".join(str(int(v)) for v in total) + "\n")
    expected = SacreBLEU().corpus_score(hyps, [list(column) for column in zip(*refs)])
    assert float(replies(result)[0]) == pytest.approx(expected.score, abs=1e-9)


def test_cdec_handshake_and_six_digit_eval(bleu_evaluator):
    result = serve(bleu_evaluator,
                   "SCORE ||| Reference initialization string . ||| "
                   "Testing initialization string .\n"
                   "EVAL ||| 1.23457e+06 1.23e+06 900000 600000 400000 300000 "
                   "1.23457e+06 1.2e+06 1.1e+06 1e+06\n")
    assert result.returncode == 0, result.stderr
    handshake, score = replies(result)
    assert handshake == "4 4 3 2 1 0 4 3 2 1"
    expected = SacreBLEU.compute_bleu([900000, 600000, 400000, 300000],
                                      [1234570, 1200000, 1100000, 1000000], 1234570, 1230000,
                                      smooth_method="exp")
    assert float(score) == expected.score


def test_moses_eval_spelling(bleu_evaluator):
    result = serve(bleu_evaluator, "EVAL |||4 4 3 2 1 0 4 3 2 1 \n")
    assert result.returncode == 0, result.stderr
    expected = SacreBLEU.compute_bleu([3, 2, 1, 0], [4, 3, 2, 1], 4, 4, smooth_method="exp")
    assert float(replies(result)[0]) == expected.score


def test_info_and_the_info_flag(bleu_evaluator):
    result = serve(bleu_evaluator + ["--tokenize", "intl"], "INFO\n")
    info = json.loads(replies(result)[0])
    assert info["name"] == "bleu"
    assert info["stats"][:3] == ["hyp_len", "ref_len", "correct_1"] and len(info["stats"]) == 10
    assert info["higher_is_better"] is True
    assert info["signature"].startswith("case:mixed|eff:no|tok:intl|smooth:exp|version:evalproto-")
    assert info["protocol"] == 1
    flag = serve(bleu_evaluator + ["--tokenize", "intl", "--info"], "")
    assert flag.returncode == 0 and json.loads(flag.stdout) == info


def test_lone_carriage_returns_and_unicode_breaks_do_not_split_requests(bleu_evaluator):
    result = serve(bleu_evaluator, "SCORE ||| a\rb c ||| a\rb c\n"
                                   "SCORE ||| x\u2028y ||| x\u2028y\x85z\n"
                                   "SCORE ||| one ||| one\r\n")
    assert result.returncode == 0, result.stderr
    assert len(replies(result)) == 3
    assert replies(result)[2] == "1 1 1 0 0 0 1 0 0 0"


def test_end_of_input_exits_zero(bleu_evaluator):
    result = serve(bleu_evaluator, "")
    assert result.returncode == 0 and result.stdout == b"" and result.stderr == b""


BAD_REQUESTS = {
    "no separator": (b"SCORE the hypothesis", "no '|||'"),
    "unknown command": (b"BLEU ||| a ||| b", "unknown command 'BLEU'"),
    "no reference": (b"SCORE ||| lonely hypothesis", "at least one reference"),
    "eval count": (b"EVAL ||| 1 2 3", "EVAL needs 10 numbers"),
    "eval word": (b"EVAL ||| 4 4 3 2 1 zero 4 3 2 1", "number 6 is not a finite number: 'zero'"),
    "eval nan": (b"EVAL ||| 4 4 3 2 1 NaN 4 3 2 1", "number 6 is not a finite number: 'NaN'"),
    "eval negative": (b"EVAL ||| 4 4 3 2 1 -1 4 3 2 1", "they break every statistic is a count"),
    "eval fraction": (b"EVAL ||| 4 4 3 2 1 0.5 4 3 2 1", "they break every statistic is a count"),
    # correct > total would score BLEU 237; a negative length would move it too
    "eval impossible": (b"EVAL ||| 5 5 9 2 1 0 5 4 3 2",
                        "not a possible sum of bleu statistics: they break correct_1 <= total_1"),
    "eval length": (b"EVAL ||| 5 5 4 2 1 0 7 4 3 2", "they break total_1 == hyp_len"),
    "eval arabic digits": ("EVAL ||| ٤ 4 3 2 1 0 4 3 2 1".encode(),
                           "number 1 is not a finite number: '٤'"),
    "eval fullwidth": ("EVAL ||| ４ 4 3 2 1 0 4 3 2 1".encode(), "number 1 is not a finite number"),
    "invalid utf-8": (b"SCORE ||| caf\xe9 ||| cafe", "not valid UTF-8: byte 0xe9 at offset 13"),
}
GOOD_REQUEST = b"SCORE ||| a b ||| a b\n"
GOOD_REPLY = "2 2 2 1 0 0 2 1 0 0"


@pytest.mark.slow
@pytest.mark.parametrize("name", BAD_REQUESTS)
def test_bad_request_fails_fast_with_one_error_line(bleu_evaluator, name):
    request, message = BAD_REQUESTS[name]
    result = serve(bleu_evaluator, GOOD_REQUEST + request + b"\n" + GOOD_REQUEST)
    lines = replies(result)
    assert result.returncode == 1
    assert lines == [GOOD_REPLY, lines[1]]
    assert lines[1].startswith("ERROR request 2: ") and message in lines[1]
    assert lines[1] in result.stderr.decode("utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("name", BAD_REQUESTS)
def test_bad_request_with_keep_going_then_serves_the_next(bleu_evaluator, name):
    request, message = BAD_REQUESTS[name]
    result = serve(bleu_evaluator + ["--keep-going"],
                   request + b"\n" + GOOD_REQUEST + b"EVAL ||| " + GOOD_REPLY.encode() + b"\n")
    lines = replies(result)
    assert result.returncode == 0
    assert len(lines) == 3
    assert lines[0].startswith("ERROR request 1: ") and message in lines[0]
    assert lines[0] in result.stderr.decode("utf-8")
    assert lines[1] == GOOD_REPLY
    assert float(lines[2]) == SacreBLEU.compute_bleu([2, 1, 0, 0], [2, 1, 0, 0], 2, 2).score


def test_unknown_option_is_a_usage_error(bleu_evaluator):
    result = serve(bleu_evaluator + ["--tokenize", "klingon"], "")
    assert result.returncode == 2
    assert b"klingon" in result.stderr


def test_a_client_that_goes_away_is_not_a_traceback(bleu_evaluator):
    server = subprocess.Popen(bleu_evaluator, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    server.stdout.close()  # the tuner died
    server.stdin.write(b"SCORE ||| a ||| a\n" * 1000)
    server.stdin.close()
    stderr = server.stderr.read()
    assert server.wait(timeout=60) == 1
    assert b"Traceback" not in stderr


def test_each_reply_comes_before_the_next_request_is_sent(bleu_evaluator):
    """A tuner writes one request and waits: the server must not hold a reply back
    while it waits for more input, even though it answers arrived requests together."""
    process = subprocess.Popen(bleu_evaluator, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    watchdog = threading.Timer(60, process.kill)  # a held-back reply fails, not hangs
    watchdog.start()
    try:
        conversation = [("SCORE ||| the cat sat on the mat ||| the cat sat on a mat",
                         "6 6 5 3 2 1 6 5 4 3"),
                        ("SCORE ||| a b c ||| a b", "2 3 2 1 0 0 2 1 0 0"),
                        ("EVAL ||| 6 6 5 3 2 1 6 5 4 3", None)]
        for request, expected in conversation:
            process.stdin.write(request.encode() + b"\n")
            process.stdin.flush()
            reply = process.stdout.readline().decode().strip()  # blocks if held back
            assert reply == expected or (expected is None and float(reply) > 0)
    finally:
        process.stdin.close()
        watchdog.cancel()
    assert process.wait(timeout=60) == 0


class Trickle(io.BytesIO):
    """A pipe that delivers a few bytes per read, splitting lines anywhere."""

    def read1(self, size=-1):
        return super().read1(7)


def test_lines_split_across_reads_are_joined_whole():
    bleu = BLEU()
    long_ref = "a long reference . " * 2000
    requests = [(["the cat sat on the mat"], "the cat sat on a mat"),
                ([long_ref, "b c"], "a long reference ."), (["x"], "")]
    data = "".join(" ||| ".join(["SCORE", *refs, hyp]) + "\n" for refs, hyp in requests)
    replies = io.BytesIO()
    assert serve_requests(bleu, Trickle(data.encode()), replies, io.StringIO()) == 0
    assert replies.getvalue().decode().splitlines() == [
        format_numbers(bleu.checked_stats(refs, hyp)) for refs, hyp in requests]

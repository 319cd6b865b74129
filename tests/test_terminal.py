"""What a person at a terminal sees, under a pseudo-terminal: progress bars with rate and
time left, one per phase, on stderr and only there; Ctrl-C erasing them before one
`Aborted!` line; an evaluator started by hand saying what it waits for."""

import re
import subprocess
import sys

import pytest
from conftest import DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS, EAGER_BARS, PseudoTerminal, script

BAR = r"{label}[^\r\n|]*\d+%\|[^\r\n]*\| *\d+/\d+ \[[\d:]+<[\d:]+, +[\d.]+it/s\]"
"""A drawn bar of a phase: its label, the share done, the count, elapsed<left and rate."""
LONG_TEST = ["corpus-score", DE_EN_REFS[0], "-i", DE_EN_HYP, DE_EN_HYP2, "-m", "bleu",
             "--paired-ar", "-parn", "200000000"]
"""A paired test of far more trials than any test waits for: it runs until stopped."""


@pytest.fixture
def terminals():
    opened = []

    def run(command, **options):
        terminal = PseudoTerminal(command, **options)
        opened.append(terminal)
        return terminal

    yield run
    for terminal in opened:
        terminal.close()


def test_every_phase_shows_a_bar_with_rate_and_time_left(terminals):
    terminal = terminals([sys.executable, "-c", EAGER_BARS, "corpus-score", *DE_EN_REFS,
                          "-i", DE_EN_HYP, DE_EN_HYP2, "-m", "bleu", "chrf", "-pbs",
                          "-pbsn", "100"])
    assert terminal.finish() == 0
    for label in ["reading", "scoring bleu", "scoring chrf", "resampling: bleu",
                  "resampling: chrf", "report"]:
        assert re.search(BAR.format(label=re.escape(label)), terminal.text), label
    screen = [line for line in terminal.screen() if line]
    assert screen[0].startswith("System"), screen  # every bar erased: the report first
    assert not any("it/s" in line for line in screen)


@pytest.mark.slow
def test_a_long_phase_shows_its_bar_on_a_terminal_by_itself(terminals):
    """No test hook: the real command, whose paired test outlasts the bars' delay."""
    terminal = terminals([script("evalproto"), *LONG_TEST])
    terminal.wait_for(BAR.format(label=re.escape("paired test: bleu")))
    terminal.process.terminate()
    assert terminal.finish() == 1


@pytest.mark.slow
def test_a_terminal_nobody_sized_shows_the_bar_too(terminals):
    """A pseudo-terminal of 0 x 0 (as some CI runners and `script` make): tqdm alone
    reads -1 rows there and hides every bar."""
    terminal = terminals([script("evalproto"), *LONG_TEST], size=None)
    terminal.wait_for(BAR.format(label=re.escape("paired test: bleu")))
    terminal.process.terminate()
    assert terminal.finish() == 1


def test_nothing_is_drawn_when_stderr_is_a_pipe():
    """The same run as the first test, bars asked for at once, into a pipe: only the
    report, and not one byte on stderr."""
    done = subprocess.run([sys.executable, "-c", EAGER_BARS, "corpus-score", *DE_EN_REFS,
                           "-i", DE_EN_HYP, DE_EN_HYP2, "-m", "bleu", "chrf", "-pbs",
                           "-pbsn", "100"], capture_output=True, timeout=300)
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout.startswith(b"System")


@pytest.mark.slow
def test_ctrl_c_erases_the_bar_and_prints_one_aborted_line(terminals):
    terminal = terminals([script("evalproto"), *LONG_TEST])
    terminal.wait_for(BAR.format(label=re.escape("paired test")))
    terminal.process.send_signal(2)  # SIGINT, as Ctrl-C sends it
    assert terminal.finish() == 1
    assert terminal.text.count("Aborted!") == 1
    screen = [line for line in terminal.screen() if line.strip()]
    assert screen == ["Aborted!"], screen  # the bar was erased before it


@pytest.mark.parametrize("name", ["bleu", "ter", "wer"])
def test_an_evaluator_started_by_hand_says_what_it_waits_for(terminals, name):
    terminal = terminals([script(f"{name}-evaluator")])
    hint = terminal.wait_for(r"[^\n]*reading SCORE/EVAL requests[^\n]*\n").group()
    assert hint == (f"{name}-evaluator: reading SCORE/EVAL requests from standard input, "
                    f"one per line; Ctrl-D ends (--help for more)\n")
    terminal.write(b"EVAL ||| " + b" ".join([b"1"] * 10 if name == "bleu" else
                                          [b"1", b"2"] if name == "ter" else
                                          [b"0", b"0", b"0", b"4"]) + b"\n")
    terminal.wait_for(r"\n[0-9.]+\n")  # the reply, after the echoed request
    terminal.write(b"\x04")  # Ctrl-D: end of input
    assert terminal.finish() == 0
    assert terminal.text.count("reading SCORE/EVAL") == 1


def test_an_evaluator_fed_by_a_pipe_writes_nothing_on_stderr():
    done = subprocess.run([script("bleu-evaluator")], input=b"EVAL ||| 1 1 1 1 1 1 1 1 1 1\n",
                          capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stderr == b""
    assert re.fullmatch(rb"100(\.0*\d*)?\n", done.stdout)

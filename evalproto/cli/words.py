"""Reading words of a command line before click does: the launcher needs the -e
commands before any slow import, and the commands need the order of -m and -e (click
collects each repeated option apart) and sacrebleu's `-i H1 H2 ...`. Only the standard
library is imported here, as in the launcher."""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

METRIC_FLAGS = {"-m": "in-process", "--metric": "in-process", "-e": "command",
                "--evaluator": "command"}
INPUT_FLAGS = ("-i", "--input")


class UsageMistake(ValueError):
    """A command line that cannot be read as meant (click reports it as usage)."""


def option_values(args: Sequence[str], flags: Dict[str, str]) -> List[Tuple[str, str]]:
    """(flags[flag], value) for each use of one of `flags`, in command-line order, in any
    of the forms `-x V`, `-xV`, `--long V` and `--long=V`, up to a `--`."""
    found = []
    words = iter(args)
    for word in words:
        if word == "--":
            break
        name, equals, value = word.partition("=")
        if name.startswith("--") and name in flags:
            found.append((flags[name], value if equals else next(words, "")))
        elif not word.startswith("--") and word[:2] in flags:
            found.append((flags[word[:2]], word[2:] or next(words, "")))
    return found


def spread_inputs(args: Sequence[str], value_options: set) -> List[str]:
    """sacrebleu's `-i H1 H2 ...`: every word after -i up to the next option is a system,
    given to click as its own `-i`. A file that comes after the systems and another
    option is refused: it would otherwise be read as a reference."""
    words = list(args)
    spread: List[str] = []
    after_inputs = False
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            return spread + words[i - 1:]
        if _is_input_flag(word):
            after_inputs = True
            spread.append(word)
            if word in INPUT_FLAGS and i < len(words) and not _is_option(words[i]):
                spread.append(words[i])  # -i's own value
                i += 1
            while i < len(words) and not _is_option(words[i]):
                spread += [INPUT_FLAGS[0], words[i]]
                i += 1
        elif word in value_options:
            spread += words[i - 1:i + 1]
            i += 1
        elif _is_option(word):
            spread.append(word)
        elif after_inputs:
            raise UsageMistake(
                f"{word!r} comes after -i and another option, so it is neither a system "
                f"nor clearly a reference: give the reference files first, then -i and "
                f"every system (evalproto corpus-score REF... -i HYP...)")
        else:
            spread.append(word)
    return spread


def _is_option(word: str) -> bool:
    return word.startswith("-") and word != "-"


def _is_input_flag(word: str) -> bool:
    return word in INPUT_FLAGS or word.startswith("--input=") or (
        word.startswith("-i") and not word.startswith("--"))


def _is_option(word: str) -> bool:
    return word.startswith("-") and word != "-"


def _is_input_flag(word: str) -> bool:
    return word in INPUT_FLAGS or word.startswith("--input=") or (
        word.startswith("-i") and not word.startswith("--"))

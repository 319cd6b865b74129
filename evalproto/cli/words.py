"""Reading words of a command line before click does: the launcher needs the -e
commands before any slow import, and the commands need the order of -m and -e (click
collects each repeated option apart) and sacrebleu's `-i H1 H2 ...` and `-m bleu chrf`.
Only the standard library is imported here, as in the launcher."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

METRIC_FLAGS = {"-m": "in-process", "--metric": "in-process", "-e": "command",
                "--evaluator": "command"}
INPUT_FLAGS = ("-i", "--input")
GREEDY_FLAGS = {"-i": "-i", "--input": "-i", "-m": "-m", "--metric": "-m"}
"""The options that take every word after them up to the next option, as sacrebleu's
-i and -m do (each spelling, with the short spelling it stands for)."""


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


def spread_values(args: Sequence[str], value_options: Set[str],
                  greedy: Optional[Dict[str, str]] = None) -> List[str]:
    """sacrebleu's `-i H1 H2 ...` and `-m bleu chrf ter`: every word after -i (or -m) up
    to the next option is a value of its own, given to click as its own `-i` (`-m`).
    A word after the systems and another option is refused: it would otherwise be
    read as a reference. `value_options` are the command's options that take a value;
    `greedy` the options that take every word after them (GREEDY_FLAGS by default)."""
    greedy = GREEDY_FLAGS if greedy is None else greedy
    words = list(args)
    spread: List[str] = []
    after_inputs = False
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            return spread + words[i - 1:]
        flag = _greedy_flag(word, greedy)
        if flag is not None and flag in value_options:
            after_inputs = after_inputs or flag == INPUT_FLAGS[0]
            spread.append(word)
            if word in greedy and i < len(words) and not _is_option(words[i]):
                spread.append(words[i])  # the option's own value
                i += 1
            while i < len(words) and not _is_option(words[i]):
                spread += [flag, words[i]]
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


def _greedy_flag(word: str, greedy: Dict[str, str]) -> Optional[str]:
    """"-i" or "-m" (or another of `greedy`) for a word that is one of them in any
    spelling (`-i`, `-iA`, `--input`, `--input=A`), else None."""
    name = word.partition("=")[0]
    if name in greedy:
        return greedy[name]
    if not word.startswith("--") and word[:2] in greedy:
        return word[:2]
    return None

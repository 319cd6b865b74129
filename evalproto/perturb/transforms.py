"""The AugLy transforms of each kind of perturbation, by Dynabench's names for them, with
its settings; and how one is applied to a text as Dynabench applies it: spaces put
around punctuation first, taken away before it again after, and the generators seeded
for each copy from the run's seed and the copy's id.

AugLy (the `perturb` extra) is imported only when the transforms are made."""

from __future__ import annotations

import random
import re
import zlib
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple

import numpy as np

from evalproto.base.errors import SetupError
from evalproto.perturb.names import gender_swap

EXTRA = "pip install 'evalproto[perturb]'"

NAMES = "gendered names"
"""Stands in a declaration for the mapping of gendered names, made from the seed."""

Declared = List[Tuple[str, Dict[str, Any]]]
"""AugLy transform classes with their arguments, applied in turn."""

KINDS: Dict[str, Dict[str, Declared]] = {
    "robustness": {
        "ChangeCase": [("ChangeCase", {"case": "upper", "cadence": 3.0})],
        "Contractions": [("Contractions", {"aug_p": 1.0})],
        "InsertPunctuationChars": [("InsertPunctuationChars",
                                    {"cadence": 10.0, "vary_chars": True})],
        "InsertWhitespaceChars": [("InsertWhitespaceChars",
                                   {"cadence": 10.0, "vary_chars": True})],
        "InsertZeroWidthChars": [("InsertZeroWidthChars",
                                  {"cadence": 10.0, "vary_chars": True})],
        "ReplaceFunFonts": [("ReplaceFunFonts", {"vary_fonts": True})],
        "ReplaceSimilarUnicodeChars": [("ReplaceSimilarUnicodeChars", {})],
        "ReplaceUpsideDown": [("ReplaceUpsideDown", {"granularity": "word"})],
        "CharTypos": [("SimulateTypos", {"typo_type": "charmix"})],
        "KeyboardTypos": [("SimulateTypos", {"typo_type": "keyboard"})],
        "MisspellingTypos": [("SimulateTypos", {"typo_type": "misspelling"})],
        "SplitWords": [("SplitWords", {})],
    },
    "fairness": {
        "SwapGenderedNamesAndWords": [("ReplaceWords", {"aug_word_p": 1.0, "mapping": NAMES}),
                                      ("SwapGenderedWords", {"aug_word_p": 1.0})],
    },
}
"""Each kind's transforms, by the name that ends its copies' ids, in Dynabench's order."""

Transform = Callable[..., Any]


def made_transforms(kind: str, seed: int) -> Dict[str, List[Transform]]:
    """KINDS[kind] made with AugLy; the names' mapping is drawn from `seed`."""
    try:
        import augly.text as augly_text
    except ImportError as exc:  # AugLy, nlpaug, requests, or libmagic for python-magic
        missing = f"{exc.name.partition('.')[0]} is not installed" if exc.name else str(exc)
        raise SetupError(f"perturbing a dataset needs AugLy, the perturb extra ({missing}): "
                         f"{EXTRA}") from None
    made: Dict[str, List[Transform]] = {}
    for name, declared in KINDS[kind].items():
        made[name] = [getattr(augly_text, cls)(**{
            key: gender_swap(seed) if value is NAMES else value
            for key, value in arguments.items()}) for cls, arguments in declared]
    return made


@contextmanager
def in_this_thread() -> Iterator[None]:
    """nlpaug (under AugLy's typos, split words and word swaps) starts a pool of one
    thread for each text it augments, and waits for that thread to augment it; while
    this is active it augments the text itself, the same draws from the same generators
    in the same order, three to four times as fast."""
    from nlpaug.base_augmenter import Augmenter

    pooled = Augmenter.__dict__["_parallel_augment"]

    def augmented(cls: type, action: Callable[[Any], Any], data: Any, n: int,
                  num_thread: int = 1) -> List[Any]:
        return [action(data) for _ in range(n)]

    Augmenter._parallel_augment = classmethod(augmented)
    try:
        yield
    finally:
        Augmenter._parallel_augment = pooled


_BEFORE_PUNCTUATION = re.compile(r"([.,!?'\:\-])")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,!?\"'\:\-])")


def spaced(text: str) -> str:
    """Dynabench's pre-processing: a space each side of . , ! ? ' : -"""
    return _BEFORE_PUNCTUATION.sub(r" \1 ", text)


def unspaced(text: str) -> str:
    """Dynabench's post-processing: no space before punctuation (nor " ), none at
    either end. Spaces after punctuation stay: "can't" comes back as "can' t"."""
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text).strip()


def seed_for(seed: int, copy_id: str) -> int:
    """The seed of one copy, as Dynabench derives it: the run's seed plus the Adler-32
    of the copy's id, modulo 2**32."""
    return (seed + zlib.adler32(copy_id.encode("utf-8"))) % 2**32


def seed_generators(value: int) -> None:
    """Seed the generators AugLy draws from: Python's, and numpy's global one, which
    nlpaug uses (Dynabench seeds only Python's, so its numpy draws differ run to run)."""
    random.seed(value)
    np.random.seed(value)


def perturbed_text(text: str, transforms: Sequence[Transform],
                   ignore_words: Sequence[str] = ()) -> str:
    """`text` through `transforms` in turn, each given the previous one's output as
    AugLy returns it (a list of one text after the first), between Dynabench's pre- and
    post-processing; `ignore_words` are words the transforms must leave alone."""
    options = {"ignore_words": list(ignore_words)} if ignore_words else {}
    result: Any = spaced(text)
    for transform in transforms:
        result = transform(result, **options)
    if isinstance(result, list):
        (result,) = result
    return unspaced(result)


def changed(kind: str, original: str, perturbed: str) -> bool:
    """Whether a copy's text differs from the original's, by Dynabench's rule for its
    kind: for fairness, in its characters other than whitespace (so that spacing that
    the processing alone moved is no change); for robustness, at all (some of its
    transforms only insert whitespace)."""
    if kind == "fairness":
        return "".join(original.split()) != "".join(perturbed.split())
    return original != perturbed

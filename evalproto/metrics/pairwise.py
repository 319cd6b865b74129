"""All-pairs sentence scores (for minimum Bayes risk decoding): every hypothesis of a
batch scored against every reference of the same batch, as a (B, H, R) array.

BLEU, chrF and TER fill the matrix with compiled kernels (their `pairwise_scores`).
Any other metric, an evaluator command included, gets it from `all_pairs`: each pair
is an item of its own, scored by the metric's own statistics and sentence score, which
is exact but pays for every text once per pair.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from evalproto.base.errors import EvalprotoError

Batches = Sequence[Sequence[str]]
"""B batches of texts, each a list of the same number of strings."""
PAIRS_AT_ONCE = 20_000
"""The most pairs whose statistics `all_pairs` holds at a time."""


def checked_batches(hyps: Any, refs: Any) -> tuple[List[List[str]], Optional[List[List[str]]]]:
    """hyps and refs as lists of batches of strings, or a TypeError or ValueError that
    says what was expected: every batch of hyps as long as the first, as many batches
    of refs as of hyps, each as long as its first."""
    checked = _batches(hyps, "hyps", "hypotheses")
    if refs is None or refs is hyps:
        return checked, None
    references = _batches(refs, "refs", "references")
    if len(references) != len(checked):
        raise ValueError(f"refs holds {len(references)} batches but hyps holds {len(checked)}: "
                         f"refs[b] lists the references of hyps[b]'s hypotheses")
    return checked, references


def _batches(texts: Any, name: str, what: str) -> List[List[str]]:
    batches: List[List[str]] = []
    for b, batch in enumerate(checked_sequence(texts, name, f"batches, each a list of {what}")):
        checked_sequence(batch, f"{name}[{b}]", f"{what} (strings)")
        if batches and len(batch) != len(batches[0]):
            raise ValueError(f"{name}[{b}] holds {len(batch)} {what} but {name}[0] holds "
                             f"{len(batches[0])}: every batch must hold as many (the scores are "
                             f"a (B, H, R) array; score batches of other sizes in calls of "
                             f"their own)")
        batches.append(checked_texts(batch, f"{name}[{b}]"))
    return batches


def checked_sequence(value: Any, name: str, what: str) -> Sequence[Any]:
    """A list or tuple (not a string), or a TypeError: "`name` must be a list of `what`"."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of {what}, got {type(value).__name__}")
    return value


def checked_texts(texts: Sequence[Any], name: str) -> List[str]:
    """A list of strings, or a TypeError that names the first that is not one."""
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(text).__name__}")
    return list(texts)


def shape_of(hyps: Batches, refs: Optional[Batches]) -> tuple[int, int, int]:
    """(B, H, R) of checked batches; refs None: the hypotheses themselves."""
    if not hyps:
        return 0, 0, 0
    return len(hyps), len(hyps[0]), len((hyps if refs is None else refs)[0])


def all_pairs(source: Any, hyps: Batches, refs: Optional[Batches]) -> np.ndarray:
    """The (B, H, R) sentence scores of every pair, from any source of statistics rows
    (`stats_many`) and its sentence scorer (`for_sentences().score_many`): the
    reference that the kernels are tested against, and the way for other metrics."""
    batches, per_hyps, per_refs = shape_of(hyps, refs)
    scorer = source.for_sentences()
    scores = np.empty((batches, per_hyps, per_refs))
    rows_at_once = max(1, PAIRS_AT_ONCE // max(1, per_refs))
    for b in range(batches):
        references = hyps[b] if refs is None else refs[b]
        for first in range(0, per_hyps, rows_at_once):
            block = hyps[b][first:first + rows_at_once]
            items = [([ref], hyp) for hyp in block for ref in references]
            try:
                cells = scorer.score_many(source.stats_many(items))
            except EvalprotoError as exc:
                if exc.item is None:
                    raise
                hyp, ref = divmod(exc.item, per_refs)
                raise exc.at(f"hyps[{b}][{first + hyp}] against refs[{b}][{ref}]") from None
            scores[b, first:first + len(block)] = np.reshape(cells, (len(block), per_refs))
    return scores


def as_matrix(cells: bytearray, hyps: Batches, refs: Optional[Batches]) -> np.ndarray:
    """A kernel's float64 cells as the (B, H, R) array, over the same memory."""
    return np.frombuffer(cells, dtype=np.float64).reshape(shape_of(hyps, refs))

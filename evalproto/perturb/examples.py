"""Perturbed copies of a dataset's examples. Each transform of a kind makes one copy of
an example, written only when the transform changed it: the original row with its
perturbed fields, `input_id` the original's id and the id `<id>_<transform>` in the
field that held the original's; every other field (`answer`, `tags`, ...) as it was."""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.errors import InputError
from evalproto.base.progress import QUIET, Progress
from evalproto.perturb.entities import EntityFinder, entity_words, installed_finder
from evalproto.perturb.transforms import (
    changed,
    in_this_thread,
    made_transforms,
    perturbed_text,
    seed_for,
    seed_generators,
)
from evalproto.readers.datasets import ID_FIELDS, id_field

NOT_PERTURBED = (*ID_FIELDS, "answer", "input_id")
"""Fields left as they are unless named: the ids and the reference answer."""

Example = Tuple[int, str, Dict[str, Any]]
"""(line number, id, row) of an example, as evalproto.readers.datasets reads it."""


def text_fields(path: str, number: int, row: Dict[str, Any],
                fields: Optional[Sequence[str]]) -> List[str]:
    """The fields of `row` to perturb: `fields`, each of which must be a string in it,
    or by default its string fields other than NOT_PERTURBED, in the row's order."""
    if fields is None:
        return [key for key, value in row.items()
                if key not in NOT_PERTURBED and isinstance(value, str)]
    for field in fields:
        if field not in row:
            raise InputError(f"{path}: line {number}: no {field!r} field, which `fields` "
                             f"names")
        if not isinstance(row[field], str):
            raise InputError(f"{path}: line {number}: {field!r} must be a string to be "
                             f"perturbed, found {type(row[field]).__name__}")
    return list(fields)


def perturbed_examples(path: str, examples: Sequence[Example], kind: str, seed: int,
                       fields: Optional[Sequence[str]] = None,
                       entities: Optional[EntityFinder] = None,
                       progress: Progress = QUIET) -> List[Dict[str, Any]]:
    """The copies of `examples` (read from `path`, which errors name) that the
    transforms of `kind` change, an example's copies in the transforms' order. For
    fairness, the words of the entities that `entities` finds (by default spaCy's
    pipeline where it is installed) are left alone. Python's and numpy's global
    generators are as they were afterwards."""
    chosen = [text_fields(path, number, row, fields) for number, _, row in examples]
    kept = random.getstate(), np.random.get_state()  # importing AugLy draws too
    try:
        transforms = made_transforms(kind, seed)
        finder = None
        if kind == "fairness":
            finder = entities if entities is not None else installed_finder()
        phase = progress.start(f"perturb: {kind}", len(examples))
        copies = []
        with in_this_thread():
            for (_, key, row), keys in zip(examples, chosen):
                for name, steps in transforms.items():
                    copy = _copy(kind, key, row, keys, name, steps, seed, finder)
                    if copy is not None:
                        copies.append(copy)
                phase.advance()
        phase.close()
        return copies
    finally:
        random.setstate(kept[0])
        np.random.set_state(kept[1])


def _copy(kind: str, key: str, row: Dict[str, Any], keys: Sequence[str], name: str,
          steps: Sequence[Any], seed: int, entities: Optional[EntityFinder]
          ) -> Optional[Dict[str, Any]]:
    """One transform's copy of an example, or None if it changed no field."""
    named_by = id_field(row)
    copy = dict(row)
    copy["input_id"] = row[named_by]
    copy_id = copy[named_by] = f"{key}_{name}"
    seed_generators(seed_for(seed, copy_id))
    any_changed = False
    for field in keys:
        copy[field] = perturbed_text(row[field], steps, entity_words(entities, row[field]))
        any_changed = changed(kind, row[field], copy[field]) or any_changed
    return copy if any_changed else None

"""Perturbed copies of a Dynabench dataset, as Dynabench makes them to measure a model's
fairness and robustness (with AugLy, the `perturb` extra):

    rows = evalproto.perturb_dataset("dev.jsonl", "robustness", seed=1)

Each row is a copy of an example that one transform changed, with `input_id` the
original's id; the same seed gives the same rows.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from evalproto.base.errors import InputError, UsageProblem
from evalproto.base.progress import QUIET, Progress
from evalproto.perturb.entities import EntityFinder
from evalproto.perturb.examples import perturbed_examples
from evalproto.perturb.transforms import KINDS
from evalproto.readers.datasets import ID_FIELDS, Contents, read_examples

PERTURBATIONS = {kind: list(transforms) for kind, transforms in KINDS.items()}
"""Each kind of perturbation with the names of its transforms, which end its copies' ids:
robustness (AugLy's typos, case, contractions, inserted characters, look-alike and
upside-down letters, split words) and fairness (gendered names and words swapped)."""


def perturb_dataset(path: str, kind: str, *, seed: int = 0,
                    fields: Optional[Sequence[str]] = None,
                    entities: Optional[EntityFinder] = None,
                    contents: Contents = None,
                    progress: Progress = QUIET) -> List[Dict[str, Any]]:
    """The perturbed copies of the examples of the Dynabench dataset at `path` (JSON
    Lines of {"uid" or "id", text fields, "answer", "tags", ...}; '-' is standard
    input, .gz is decompressed; a name in `contents` is read from its bytes there),
    for `kind`, one of PERTURBATIONS. Each transform makes one copy of each example,
    kept only where it changed a field: the example's row with `fields` perturbed
    (default: its string fields but its id, "answer" and "input_id"), "input_id" its
    id, and the id `<id>_<transform>` in the field that held it. A fairness copy leaves
    alone the words of the entities that `entities` finds in a text (a function from a
    text to its entities' texts; by default spaCy's en_core_web_sm where it is
    installed, and otherwise none: every name of the swap is swapped). Seeded as
    Dynabench seeds (`seed`, a whole number): the same seed gives the same copies.
    AugLy draws from Python's and numpy's global generators, which are seeded for each
    copy and restored at the end: two calls at once in threads draw from each other's."""
    if kind not in KINDS:
        raise UsageProblem(f"`kind` must be one of {', '.join(KINDS)}, not {kind!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageProblem(f"`seed` must be a whole number >= 0, not {seed!r}")
    if fields is not None:
        fields = _checked_fields(fields)
    examples = read_examples(path, contents)
    if not examples:
        raise InputError(f"{path}: the dataset has no examples")
    return perturbed_examples(path, examples, kind, seed, fields, entities, progress)


def _checked_fields(fields: Sequence[str]) -> List[str]:
    """`fields` as a list: named, each once, and none an id."""
    if isinstance(fields, str) or not fields:
        raise UsageProblem("`fields` must be a list of one or more field names")
    seen: List[str] = []
    for field in fields:
        if not isinstance(field, str) or not field:
            raise UsageProblem(f"`fields` must name fields, not {field!r}")
        if field in ID_FIELDS or field == "input_id":
            raise UsageProblem(f"`fields` names {field!r}, which identifies an example: "
                               f"it is not perturbed")
        if field in seen:
            raise UsageProblem(f"`fields` names {field!r} twice")
        seen.append(field)
    return seen


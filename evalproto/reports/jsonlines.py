"""Dynabench's JSON Lines files, written from plain text files: a dataset's examples
(`{"uid", "answer", "tags"}`) and a system's predictions (`{"id", "pred"}`), so that a
corpus of text files can go to the evaluation service (`evalproto board`) and to
`corpus-score --data-format dynabench`. Example ids are `s1`, `s2`, ... by line, or
the lines of an ids file. Any rows (a dataset's perturbed copies) are written alike."""

from __future__ import annotations

import json
from typing import List, Optional, Sequence

from evalproto.base.errors import InputError
from evalproto.readers.groups import read_groups
from evalproto.readers.text import check_line_counts, read_lines

ID_PREFIX = "s"
"""Example ids by line: s1, s2, ..."""


def example_ids(count: int, ids_path: Optional[str] = None) -> List[str]:
    """`count` ids: s1 ... sN, or the lines of `ids_path` (one a line, each unique)."""
    if ids_path is None:
        return [f"{ID_PREFIX}{line}" for line in range(1, count + 1)]
    ids = read_lines(ids_path)
    if len(ids) != count:
        raise InputError(f"{ids_path} has {len(ids)} lines but the text has {count}; an ids "
                         f"file has one id a line")
    seen = set()
    for number, key in enumerate(ids, 1):
        if not key.strip():
            raise InputError(f"{ids_path}: line {number}: an empty id")
        if key in seen:
            raise InputError(f"{ids_path}: line {number}: the id {key!r} is there already")
        seen.add(key)
    return ids


def dataset_jsonl(ref_paths: Sequence[str], groups_path: Optional[str] = None,
                  ids_path: Optional[str] = None) -> str:
    """A dataset: one example a line of the reference files (one answer, or a list of
    one a file), with the tags of a groups file's lines."""
    references = [read_lines(path) for path in ref_paths]
    check_line_counts(ref_paths, [], {path: len(lines)
                                      for path, lines in zip(ref_paths, references)})
    ids = example_ids(len(references[0]), ids_path)
    tags = read_groups(groups_path, ids) if groups_path else [[] for _ in ids]
    rows = []
    for number, key in enumerate(ids):
        answers = [stream[number] for stream in references]
        rows.append({"uid": key, "answer": answers[0] if len(answers) == 1 else answers,
                     "tags": tags[number]})
    return json_lines(rows)


def predictions_jsonl(hyp_path: str, ids_path: Optional[str] = None) -> str:
    """A system's predictions: one a line of the hypothesis file."""
    hyps = read_lines(hyp_path)
    return json_lines([{"id": key, "pred": hyp}
                   for key, hyp in zip(example_ids(len(hyps), ids_path), hyps)])


def json_lines(rows: Sequence[dict]) -> str:
    """Rows as JSON Lines, UTF-8 text rather than escapes."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)

"""JSON Lines datasets as corpora: Dynabench-style examples and Open-Assistant exports.

References come from the dataset, predictions from files of `{"id": ..., "pred": ...}`
rows, and the two are joined on id. A missing, duplicate or unknown id is an error that
names it: a prediction file that does not cover the dataset exactly would otherwise
give a score for a different test set.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from evalproto.base.errors import InputError
from evalproto.base.gcpause import paused_gc
from evalproto.readers.text import Corpus, parse_jsonl, read_bytes

FORMATS = ("text", "dynabench", "oasst")
"""The --data-format names: plain text files, or a JSON Lines dataset and its predictions."""


Contents = Optional[Mapping[str, bytes]]
"""Files given as bytes, by the name that messages call them (an upload to the
evaluation service has no path); a name not in it is a path, read from disk."""


def read_jsonl(path: str, contents: Contents = None) -> List[Tuple[int, Dict[str, Any]]]:
    data = contents[path] if contents is not None and path in contents else read_bytes(path)
    with paused_gc():
        return list(parse_jsonl(path, data))


def _id(value: Any, path: str, number: int, missing: str) -> str:
    """An example's or a prediction's id, a string or a whole number, as a string."""
    if value is None:
        raise InputError(f"{path}: line {number}: {missing}")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{path}: line {number}: an id must be a string or a whole number, "
                         f"found {type(value).__name__}")
    return str(value)


def _texts(value: Any, path: str, number: int, field: str) -> List[str]:
    """A string or a list of strings, as a list."""
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise InputError(f"{path}: line {number}: {field!r} must be a string or a non-empty "
                         f"list of strings")
    return texts


def _one_line(texts: List[str]) -> List[str]:
    """Segments go over the protocol one per line, so line breaks become spaces."""
    return [" ".join(text.split("\n")).rstrip() for text in texts]


def read_predictions(path: str, ids: Sequence[str], field: str,
                     contents: Contents = None) -> List[str]:
    """The prediction for every id, in the dataset's order."""
    predictions: Dict[str, str] = {}
    for number, row in read_jsonl(path, contents):
        key = _id(row.get("id"), path, number, "a prediction needs an 'id'")
        if key in predictions:
            raise InputError(f"{path}: line {number}: duplicate prediction for id {key!r}")
        if not isinstance(row.get(field), str):
            raise InputError(f"{path}: line {number}: expected a string in {field!r}")
        predictions[key] = row[field]
    known = set(ids)
    extra = [key for key in predictions if key not in known]
    if extra:
        raise InputError(f"{path}: prediction for id {extra[0]!r}, which is not in the dataset"
                         f"{f' (and {len(extra) - 1} more)' if len(extra) > 1 else ''}")
    missing = [key for key in ids if key not in predictions]
    if missing:
        raise InputError(f"{path}: no prediction for id {missing[0]!r}"
                         f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}")
    return _one_line([predictions[key] for key in ids])


def _corpus(ref_path: str, examples: List[Tuple[str, List[str], List[str]]],
            hyp_paths: Sequence[str], hyp_field: str, contents: Contents = None) -> Corpus:
    if not examples:
        raise InputError(f"{ref_path}: the dataset has no examples")
    ids = [key for key, _, _ in examples]
    return Corpus(refs=[_one_line(refs) for _, refs, _ in examples],
                  systems={path: read_predictions(path, ids, hyp_field, contents)
                           for path in hyp_paths},
                  ids=ids, tags=[tags for _, _, tags in examples])


ID_FIELDS = ("uid", "id")
"""The fields that name a Dynabench example: its "uid", or else its "id"."""


def id_field(row: Dict[str, Any]) -> str:
    """The field that names this example (ID_FIELDS)."""
    return ID_FIELDS[0] if ID_FIELDS[0] in row else ID_FIELDS[1]


def read_examples(path: str, contents: Contents = None
                  ) -> List[Tuple[int, str, Dict[str, Any]]]:
    """(line number, id, row) of every example of a Dynabench dataset: its id is its
    "uid" or else its "id" (a string or a whole number, as a string), and unique."""
    examples, seen = [], set()
    for number, row in read_jsonl(path, contents):
        key = _id(row.get(id_field(row)), path, number, "an example needs a 'uid' "
                                                               "or an 'id'")
        if key in seen:
            raise InputError(f"{path}: line {number}: duplicate example id {key!r}")
        seen.add(key)
        examples.append((number, key, row))
    return examples


def read_dynabench(ref_path: str, hyp_paths: Sequence[str], ref_field: str = "answer",
                   hyp_field: str = "pred", contents: Contents = None) -> Corpus:
    """Rows {"uid" or "id", ref_field: str or [str], "tags": [str]}; tags become groups.
    Files named in `contents` are read from there instead of from disk."""
    examples = []
    for number, key, row in read_examples(ref_path, contents):
        if ref_field not in row:
            raise InputError(f"{ref_path}: line {number}: no {ref_field!r} field (see `ref_field`)")
        tags = row.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            raise InputError(f"{ref_path}: line {number}: 'tags' must be a list of strings")
        examples.append((key, _texts(row[ref_field], ref_path, number, ref_field), tags))
    return _corpus(ref_path, examples, hyp_paths, hyp_field, contents)


def read_inputs(path: str, keys: Sequence[str], contents: Contents = None
                ) -> List[Tuple[str, Dict[str, Any]]]:
    """What a model receives of each example of a Dynabench dataset: its id (`uid` or
    `id`) and the values of the task's input keys, in the dataset's order. A row
    without one of the keys is refused, naming the line and the key."""
    examples = []
    for number, key, row in read_examples(path, contents):
        missing = [name for name in keys if name not in row]
        if missing:
            raise InputError(f"{path}: line {number}: no {missing[0]!r} field, one of the "
                             f"task's input keys ({', '.join(keys)})")
        examples.append((key, {name: row[name] for name in keys}))
    return examples


def read_copies(path: str, original_ids: Sequence[str], contents: Contents = None
                ) -> List[Tuple[str, str]]:
    """The rows of a perturbed copy of a dataset (Dynabench's perturbed datasets): each
    row's id (`uid` or `id`) and its `input_id`, the id of the original's row it copies,
    in the file's order. A row without one, or whose input_id names no row of the
    original, is refused, naming the line."""
    known = set(original_ids)
    copies = []
    for number, key, row in read_examples(path, contents):
        original = _id(row.get("input_id"), path, number, "a perturbed example needs an "
                                                          "'input_id': the id of the example "
                                                          "it copies")
        if original not in known:
            raise InputError(f"{path}: line {number}: input_id {original!r} names no example "
                             f"of the original dataset")
        copies.append((key, original))
    return copies


def messages(row: Dict[str, Any], path: str, number: int
             ) -> Iterator[Tuple[Dict[str, Any], Optional[str]]]:
    """Every message of an export row, with the message_id of its parent in the row's
    structure (None for the first): a message, a {"thread": [...]}, or a tree
    {"message_tree_id", "prompt": {..., "replies": [...]}}; each must be an object."""
    def objects(value: Any, field: str) -> List[Dict[str, Any]]:
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise InputError(f"{path}: line {number}: {field!r} must be a list of message "
                             f"objects")
        return value

    if "thread" in row:
        parent = None
        for message in objects(row["thread"], "thread"):
            yield message, parent
            parent = message.get("message_id")
    elif "prompt" in row:
        if not isinstance(row["prompt"], dict):
            raise InputError(f"{path}: line {number}: 'prompt' must be a message object")
        pending: List[Tuple[Dict[str, Any], Optional[str]]] = [(row["prompt"], None)]
        while pending:
            message, parent = pending.pop(0)
            yield message, parent
            pending.extend((reply, message.get("message_id"))
                           for reply in objects(message.get("replies", []), "replies"))
    else:
        yield row, None


def read_oasst(ref_path: str, hyp_paths: Sequence[str], hyp_field: str = "pred") -> Corpus:
    """Every assistant message of an Open-Assistant export (message, thread or tree
    JSON Lines), keyed by message_id, its text the reference; groups by language."""
    examples, seen = [], set()
    for number, row in read_jsonl(ref_path):
        for message, _ in messages(row, ref_path, number):
            if message.get("role") != "assistant":
                continue
            key, text = message.get("message_id"), message.get("text")
            if not isinstance(key, str) or not isinstance(text, str):
                raise InputError(f"{ref_path}: line {number}: an assistant message needs a "
                                 f"string 'message_id' and 'text'")
            if key in seen:
                raise InputError(f"{ref_path}: line {number}: duplicate message_id {key!r}")
            seen.add(key)
            lang = message.get("lang")
            if lang is not None and not isinstance(lang, str):
                raise InputError(f"{ref_path}: line {number}: a message's 'lang' must be a "
                                 f"string, found {type(lang).__name__}")
            examples.append((key, [text], [lang] if lang else []))
    return _corpus(ref_path, examples, hyp_paths, hyp_field)

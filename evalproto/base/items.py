"""A segment to score: its references and its hypothesis, checked the same way on every path.

In process a segment is scored as given, as sacrebleu's API takes its strings (and a
text file's lines as sacrebleu's command line reads them: see evalproto.readers.text).
Only the protocol strips the whitespace around each field; the client of an evaluator
command says when that changed what it sent (evalproto.sources.base.corpus_rows).
"""

from __future__ import annotations

import operator
from typing import Any, Iterable, Iterator, List, NamedTuple, Sequence, Tuple, Union, overload


class Item(NamedTuple):
    """One segment: its references (one or more) and its hypothesis."""

    refs: Tuple[str, ...]
    hyp: str


def checked_item(refs: Any, hyp: Any, index: int = 0) -> Item:
    """(refs, hyp) as an Item, texts as given. A string where the list of references
    belongs (a common slip: each character would become a reference), an empty list,
    or a text that is not a string is a TypeError or ValueError that says what was
    expected."""
    where = f"segment {index + 1}"
    if isinstance(refs, (str, bytes)):
        raise TypeError(f"{where}: the references are one {type(refs).__name__}; expected a "
                        f"list of reference strings (for one reference: [ref])")
    try:
        refs = tuple(refs)
    except TypeError:
        raise TypeError(f"{where}: the references are a {type(refs).__name__}; expected a "
                        f"list of reference strings") from None
    if not refs:
        raise ValueError(f"{where}: no reference; a segment needs at least one")
    for ref in refs:
        if not isinstance(ref, str):
            raise TypeError(f"{where}: a reference is of type {type(ref).__name__}; expected str")
    if not isinstance(hyp, str):
        raise TypeError(f"{where}: the hypothesis is of type {type(hyp).__name__}; expected str")
    return Item(refs, hyp)


_PAIRS = (tuple, list, Item)
_new_item = tuple.__new__
_NOTHING = object()  # no item's references


def checked_items(items: Iterable[Any]) -> List[Item]:
    """Every (refs, hyp) pair of `items` as `checked_item` makes it. The usual items (a
    pair of a list or tuple of str and a str) take a short way, which matters on
    millions of segments: in a list, consecutive items with the same references object
    (each system's item of one segment, as corpus_rows sends them) share one checked
    tuple (a generator could change the object between its items; a list's items are
    all made). Anything else takes checked_item's way, which explains what is wrong."""
    checked: List[Item] = []
    append = checked.append
    shared = type(items) is list
    last_refs: Any = _NOTHING
    last_checked: Tuple[str, ...] = ()
    for index, item in enumerate(items):
        if type(item) in _PAIRS and len(item) == 2:
            refs, hyp = item
            if type(hyp) is str and refs is last_refs:
                append(_new_item(Item, (last_checked, hyp)))
                continue
            if (type(hyp) is str and type(refs) in _PAIRS and refs
                    and all(type(ref) is str for ref in refs)):
                last_refs = refs if shared else _NOTHING
                last_checked = tuple(refs)
                append(_new_item(Item, (last_checked, hyp)))
                continue
        elif isinstance(item, (str, bytes)) or not _is_pair(item):
            raise TypeError(f"segment {index + 1}: expected a (references, hypothesis) pair, "
                            f"got {type(item).__name__}")
        append(checked_item(item[0], item[1], index))
    return checked


def _is_pair(item: Any) -> bool:
    return isinstance(item, Sequence) and len(item) == 2


class SegmentNumbers(Sequence[str]):
    """The ids of segments numbered `first`, `first + 1`, ... (a text corpus's line
    numbers), as str, made when they are read: a million of them as a list would take
    tens of megabytes."""

    def __init__(self, count: int, first: int = 1) -> None:
        self._numbers = range(first, first + count)

    def __len__(self) -> int:
        return len(self._numbers)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> List[str]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[str, List[str]]:
        if isinstance(index, slice):
            return [str(number) for number in self._numbers[index]]
        return str(self._numbers[operator.index(index)])

    def __iter__(self) -> Iterator[str]:
        return map(str, self._numbers)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SegmentNumbers):
            return self._numbers == other._numbers
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<segments {self._numbers.start}..{self._numbers.stop - 1}>"

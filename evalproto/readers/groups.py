"""Groups files: one line of comma-separated tags per segment (a segment may have
several tags, or none); each tag is also scored on its own segments."""

from __future__ import annotations

from typing import List, Sequence

from evalproto.base.errors import InputError
from evalproto.base.numerals import is_whole_number
from evalproto.readers.text import read_lines


def read_groups(path: str, ids: Sequence[str], partial: bool = False) -> List[List[str]]:
    """Each segment's tags. Segments with whole-number ids (line numbers) take the tags
    of that line, so shards reduced in any order get their own tags, and with `partial`
    the file may cover more segments than are there; other ids (a dataset's) go by
    position."""
    lines = read_lines(path)
    numbers = [int(segment) for segment in ids] if all(
        is_whole_number(segment) for segment in ids) else None
    if (numbers is None or not partial) and len(lines) != len(ids):
        raise InputError(f"{path} has {len(lines)} lines but there are {len(ids)} segments; "
                         f"a groups file needs one line of tags per segment")
    if numbers is None:
        numbers = list(range(1, len(ids) + 1))
    tags = []
    for segment, number in zip(ids, numbers):
        if not 1 <= number <= len(lines):
            raise InputError(f"{path}: no line {number} for segment {segment!r}: a groups "
                             f"file has one line per segment, line N for segment id N")
        tags.append([tag.strip() for tag in lines[number - 1].split(",") if tag.strip()])
    return tags

"""Common English given names, male and female (data/*.txt, one a line, shipped with
the package), and the mapping of Dynabench's gendered-name swap: each name to a name of
the other gender, drawn with Python's random generator seeded with the run's seed."""

from __future__ import annotations

import random
from importlib import resources
from typing import Dict, List

GENDERS = ("male", "female")
"""The groups whose names are swapped for one another, in Dynabench's order."""


def given_names(gender: str) -> List[str]:
    """The names of one of GENDERS, as the package's data file lists them."""
    text = (resources.files(__package__) / "data" / f"{gender}_names.txt").read_text(
        encoding="utf-8")
    return text.split()


def gender_swap(seed: int) -> Dict[str, str]:
    """{name: a name of the other gender}, drawn as Dynabench draws it after seeding the
    generator: for every name of every group in turn, another group by rejection (a
    draw of a group until it is not the name's own), then a name of that group."""
    groups = [given_names(gender) for gender in GENDERS]
    draw = random.Random(seed)
    mapping = {}
    for own, names in enumerate(groups):
        for name in names:
            other = own
            while other == own:
                other = draw.randint(0, len(groups) - 1)
            mapping[name] = groups[other][draw.randint(0, len(groups[other]) - 1)]
    return mapping

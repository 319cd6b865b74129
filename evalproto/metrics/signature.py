"""Signatures in sacrebleu's style: the settings that make two scores comparable, as
`key:value` fields joined by "|" (`nrefs:2|case:mixed|tok:13a|version:evalproto-X`).

One class writes them all: an evaluator's settings, the data's part that reductions
put in front (`nrefs`, resampling), and the short form of `evalproto sacrebleu
--short`. A value is written as sacrebleu writes it (booleans as yes/no); a "|" or a
backslash inside a value is escaped with a backslash, so that a value such as a
COMET model's "Unbabel/wmt22-comet-da|comet 2.2" stays one field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, Mapping, Tuple, Union

SHORT_KEYS: Dict[str, str] = {
    "version": "v", "nrefs": "#", "bs": "bs", "ar": "ar", "seed": "rs", "case": "c",
    "eff": "e", "tok": "tok", "smooth": "s", "nc": "nc", "nw": "nw", "space": "s"}
"""sacrebleu's abbreviations of signature keys (--short)."""


def signature_value(value: Any) -> str:
    """A value as a signature writes it: booleans as yes/no (as sacrebleu), a list as
    its items joined by commas, "|" and "\\" escaped."""
    if isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, (list, tuple)):
        text = ",".join(signature_value(item) for item in value)
    else:
        text = str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|")


Fields = Union[Mapping[str, Any], Iterable[Tuple[str, Any]]]


@dataclass(frozen=True)
class Signature:
    """Ordered key:value fields. Parts join in order: `Signature.of(data, metric)`."""

    fields: Tuple[Tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, *parts: Fields) -> Signature:
        """The fields of every part, in order (a mapping's in its order)."""
        fields = []
        for part in parts:
            fields += list(part.items() if isinstance(part, Mapping) else part)
        return cls(tuple(fields))

    def text(self, abbreviations: Mapping[str, str] = {}) -> str:  # noqa: B006 (read only)
        """The signature, with keys abbreviated where `abbreviations` says (--short)."""
        return "|".join(f"{abbreviations.get(key, key)}:{signature_value(value)}"
                        for key, value in self.fields)

    def __str__(self) -> str:
        return self.text()

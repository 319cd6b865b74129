"""The entities of a text, whose words the fairness swaps leave alone, as Dynabench does
with spaCy's small English pipeline. The pipeline is used only where it is installed:
nothing is downloaded, and without it no word is held back."""

from __future__ import annotations

import importlib.util
from typing import Callable, Iterable, List, Optional

from evalproto.base.errors import SetupError

PIPELINE = "en_core_web_sm"
"""The spaCy pipeline Dynabench's perturbation script loads."""

EntityFinder = Callable[[str], Iterable[str]]
"""A text to the texts of its entities (e.g. ["Mary Smith", "Paris"])."""


def installed_finder() -> Optional[EntityFinder]:
    """spaCy's PIPELINE as an EntityFinder where the pipeline is installed, else None.
    spaCy is imported only then (it is slow to import)."""
    if importlib.util.find_spec(PIPELINE) is None:
        return None
    try:
        import spacy

        pipeline = spacy.load(PIPELINE)
    except Exception as exc:  # spaCy's errors on loading are of many kinds
        raise SetupError(f"spaCy's {PIPELINE} is installed but does not load ({exc}); "
                         f"reinstall it, or uninstall it to swap every name") from None

    def entities(text: str) -> List[str]:
        return [entity.text for entity in pipeline(text).ents]
    return entities


def entity_words(finder: Optional[EntityFinder], text: str) -> List[str]:
    """The words of the entities `finder` finds in `text` (none without a finder)."""
    if finder is None:
        return []
    return [word for entity in finder(text) for word in entity.split()]

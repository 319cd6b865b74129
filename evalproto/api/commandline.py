"""The command line's door into evalproto: what its commands need beyond the public
names (writing outputs, formatting results for a terminal, stats files, the drop-in's
signatures), which Python users have no use for.

Every name is imported on first use, as evalproto's public names are, so that the
launcher starts its evaluators before anything slow loads.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List, Tuple

_NAMES: Dict[str, Tuple[str, str]] = {
    # outputs
    "write_output": ("evalproto.base.outputs", "write_output"),
    "check_outputs": ("evalproto.base.outputs", "check_outputs"),
    "parse_number": ("evalproto.base.numerals", "parse_number"),
    "is_whole_number": ("evalproto.base.numerals", "is_whole_number"),
    # metrics as the command line names them
    "evaluator_name": ("evalproto.api.scoring", "evaluator_name"),
    "with_options": ("evalproto.api.scoring", "with_options"),
    "REPORT_METRICS": ("evalproto.api.report", "REPORT_METRICS"),
    "Signature": ("evalproto.metrics.signature", "Signature"),
    "analyse": ("evalproto.stats.reductions", "analyse"),
    "SIGNATURE_SHORT_KEYS": ("evalproto.metrics.signature", "SHORT_KEYS"),
    # inputs
    "stdin_columns": ("evalproto.readers.text", "stdin_columns"),
    # results as text
    "FORMATS": ("evalproto.reports.results", "FORMATS"),
    "format_results": ("evalproto.reports.results", "format_results"),
    "format_segments": ("evalproto.reports.results", "format_segments"),
    "format_scores": ("evalproto.reports.results", "format_scores"),
    "format_lm_json": ("evalproto.reports.lm", "format_json"),
    "format_lm_text": ("evalproto.reports.lm", "format_text"),
    "format_lm_comparison": ("evalproto.reports.lm", "format_comparison_text"),
    "format_leaderboard": ("evalproto.api.board", "format_leaderboard"),
    "format_dynaboard": ("evalproto.reports.leaderboard", "format_dynaboard"),
    # minimum Bayes risk decoding of files
    "mbr_files": ("evalproto.api.mbr", "mbr_files"),
    "format_choices": ("evalproto.reports.choices", "format_choices"),
    "format_meta_evaluation": ("evalproto.reports.metaeval", "format_meta_evaluation"),
    "system_name": ("evalproto.api.metaeval", "system_name"),
    # stats files
    "file_stats": ("evalproto.api.files", "file_stats"),
    "import_scores": ("evalproto.api.statsfiles", "import_scores"),
    "write_stats": ("evalproto.reports.statsfiles", "write_stats"),
    # Dynabench's files from text files
    "dataset_jsonl": ("evalproto.reports.jsonlines", "dataset_jsonl"),
    "predictions_jsonl": ("evalproto.reports.jsonlines", "predictions_jsonl"),
    "json_lines": ("evalproto.reports.jsonlines", "json_lines"),
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        module, attribute = _NAMES[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'evalproto.api.commandline' has no attribute {name!r}")


def __dir__() -> List[str]:
    return __all__

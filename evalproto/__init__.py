"""evalproto: metric evaluators with additive statistics, in process or over a pipe.

    import evalproto
    bleu = evalproto.load("bleu", tokenize="intl")
    print(bleu.corpus_score(hyps, refs))          # refs: one list of references per segment
    cmp = evalproto.compare({"A": hyps_a, "B": hyps_b}, refs, metrics=["bleu", "chrf"],
                            confidence=True, paired="bs")

Every public name is imported on first use: the `evalproto` command
(evalproto.cli.launch) must set its signal handlers and start its evaluators before
anything slow, and the numerical modules bring numpy.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, Tuple

from evalproto.base.version import __version__ as __version__

_PUBLIC: Dict[str, Tuple[str, str]] = {
    # metrics and their scores
    **{name: ("evalproto.api.scoring", name) for name in (
        "load", "Metric", "Score", "compare", "Comparison", "registered_evaluators",
        "describe_evaluator", "evaluator_name", "with_options", "info", "read_dataset",
        "score_corpus", "analysis_of")},
    **{name: ("evalproto.api.cluster", name) for name in (
        "score_files", "score_on_cluster", "bag_stats", "bag_score")},
    **{name: ("evalproto.api.statsfiles", name) for name in (
        "reduce_stats", "write_stats_files", "import_scores")},
    **{name: ("evalproto.api.lm", name) for name in (
        "lm_score", "LMScore", "lm_compare", "LMComparison", "lm_summaries", "LMOptions")},
    **{name: ("evalproto.api.report", name) for name in (
        "REPORT_METRICS", "report_corpus", "report_from_stats", "format_report",
        "compare_mt_lines")},
    "Report": ("evalproto.reports.report", "Report"),
    "ReportOptions": ("evalproto.reports.report", "ReportOptions"),
    "Evaluator": ("evalproto.metrics.evaluator", "Evaluator"),
    "CountsEvaluator": ("evalproto.metrics.evaluator", "CountsEvaluator"),
    "Signature": ("evalproto.metrics.signature", "Signature"),
    "SIGNATURE_SHORT_KEYS": ("evalproto.metrics.signature", "SHORT_KEYS"),
    "EvaluatorProcess": ("evalproto.sources.process", "EvaluatorProcess"),
    "MetricSpec": ("evalproto.sources.specs", "MetricSpec"),
    "DEFAULT_TIMEOUT": ("evalproto.sources.process", "DEFAULT_TIMEOUT"),
    # tables and reductions
    "StatsTable": ("evalproto.stats.table", "StatsTable"),
    "Analysis": ("evalproto.stats.reductions", "Analysis"),
    "Result": ("evalproto.stats.reductions", "Result"),
    "analyse": ("evalproto.stats.reductions", "analyse"),
    "DEFAULT_SEED": ("evalproto.stats.resampling", "DEFAULT_SEED"),
    # inputs
    "Corpus": ("evalproto.readers.text", "Corpus"),
    "read_corpus": ("evalproto.readers.text", "read_corpus"),
    "check_inputs": ("evalproto.readers.text", "check_inputs"),
    "stdin_columns": ("evalproto.readers.text", "stdin_columns"),
    "read_groups": ("evalproto.readers.groups", "read_groups"),
    "DATA_FORMATS": ("evalproto.readers.datasets", "FORMATS"),
    # outputs
    "FORMATS": ("evalproto.reports.results", "FORMATS"),
    "format_results": ("evalproto.reports.results", "format_results"),
    "format_segments": ("evalproto.reports.results", "format_segments"),
    "format_scores": ("evalproto.reports.results", "format_scores"),
    "write_stats": ("evalproto.reports.statsfiles", "write_stats"),
    "format_lm_json": ("evalproto.reports.lm", "format_json"),
    "format_lm_text": ("evalproto.reports.lm", "format_text"),
    "format_lm_comparison": ("evalproto.reports.lm", "format_comparison_text"),
    "write_output": ("evalproto.base.outputs", "write_output"),
    "check_outputs": ("evalproto.base.outputs", "check_outputs"),
    "parse_number": ("evalproto.base.numerals", "parse_number"),
    # errors
    **{name: ("evalproto.base.errors", name) for name in (
        "EvalprotoError", "EvaluatorError", "InputError", "SetupError", "SpecError",
        "UsageProblem", "EvaluatorWarning", "InputWarning")},
}

__all__ = sorted([*_PUBLIC, "__version__"])


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        module, attribute = _PUBLIC[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'evalproto' has no attribute {name!r}")


def __dir__() -> list:
    return __all__

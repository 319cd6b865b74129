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
        "load", "Metric", "Score", "info", "registered_evaluators", "describe_evaluator",
        "compare", "Comparison", "read_dataset")},
    # minimum Bayes risk decoding
    **{name: ("evalproto.api.mbr", name) for name in ("mbr", "MBRChoice")},
    "MetricSpec": ("evalproto.sources.specs", "MetricSpec"),
    "EvaluatorProcess": ("evalproto.sources.process", "EvaluatorProcess"),
    "DEFAULT_TIMEOUT": ("evalproto.sources.process", "DEFAULT_TIMEOUT"),
    # writing a metric
    "Evaluator": ("evalproto.metrics.evaluator", "Evaluator"),
    "CountsEvaluator": ("evalproto.metrics.evaluator", "CountsEvaluator"),
    # tables and reductions
    "StatsTable": ("evalproto.stats.table", "StatsTable"),
    "Analysis": ("evalproto.stats.reductions", "Analysis"),
    "Result": ("evalproto.stats.reductions", "Result"),
    "DEFAULT_SEED": ("evalproto.stats.resampling", "DEFAULT_SEED"),
    # files
    "Corpus": ("evalproto.readers.text", "Corpus"),
    "read_corpus": ("evalproto.readers.text", "read_corpus"),
    "DATA_FORMATS": ("evalproto.readers.datasets", "FORMATS"),
    "score_files": ("evalproto.api.files", "score_files"),
    "reduce_stats": ("evalproto.api.statsfiles", "reduce_stats"),
    # LM evaluation logs
    **{name: ("evalproto.api.lm", name) for name in (
        "lm_score", "LMScore", "lm_compare", "LMComparison")},
    # reports
    **{name: ("evalproto.api.report", name) for name in (
        "report_corpus", "report_from_stats", "format_report")},
    "Report": ("evalproto.reports.report", "Report"),
    "ReportOptions": ("evalproto.reports.report", "ReportOptions"),
    # meta-evaluation: metrics against human judgements
    **{name: ("evalproto.api.metaeval", name) for name in (
        "meta_evaluate", "meta_eval_files", "williams_test")},
    **{name: ("evalproto.reports.metaeval", name) for name in (
        "MetaEvaluation", "MetricAgreement")},
    "read_score_file": ("evalproto.readers.metascores", "read_score_file"),
    "read_oasst_replies": ("evalproto.readers.rankings", "read_oasst_replies"),
    "META_STATISTICS": ("evalproto.stats.metaeval", "STATISTICS"),
    # Dynabench's Dynascore
    "dynascore": ("evalproto.api.dynaboard", "dynascore"),
    # perturbed datasets: Dynabench's fairness and robustness copies
    **{name: ("evalproto.api.perturb", name) for name in (
        "perturb_dataset", "PERTURBATIONS")},
    # Dask
    **{name: ("evalproto.api.cluster", name) for name in ("bag_stats", "bag_score")},
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

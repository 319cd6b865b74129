"""sacrebleu's top-level metric options (`-tok intl`, `-lc`, `-cw 2`, `--ter-normalized`,
...) and the evaluator option each one sets. One table serves both `evalproto
sacrebleu` (which parses them with sacrebleu's own parser) and corpus-score and stats
(which take them beside `-m`), so the two cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Tuple


@dataclass(frozen=True)
class MetricFlag:
    """One of sacrebleu's metric options: its spellings (long first), its argparse
    destination (also the click parameter's name), the evaluator it belongs to, and
    that evaluator's option it sets."""

    flags: Tuple[str, ...]
    dest: str
    metric: str
    option: str
    is_flag: bool = False

    @property
    def short(self) -> str:
        """The spelling sacrebleu users type: -tok, -lc, --chrf-whitespace."""
        return self.flags[-1]


SACREBLEU_FLAGS = (
    MetricFlag(("--tokenize", "-tok"), "bleu_tokenize", "bleu", "--tokenize"),
    MetricFlag(("--smooth-method", "-s"), "bleu_smooth_method", "bleu", "--smooth-method"),
    MetricFlag(("--smooth-value", "-sv"), "bleu_smooth_value", "bleu", "--smooth-value"),
    MetricFlag(("--lowercase", "-lc"), "bleu_lowercase", "bleu", "--lowercase", True),
    MetricFlag(("--force",), "bleu_force", "bleu", "--force", True),
    MetricFlag(("--chrf-char-order", "-cc"), "chrf_char_order", "chrf", "--char-order"),
    MetricFlag(("--chrf-word-order", "-cw"), "chrf_word_order", "chrf", "--word-order"),
    MetricFlag(("--chrf-beta",), "chrf_beta", "chrf", "--beta"),
    MetricFlag(("--chrf-whitespace",), "chrf_whitespace", "chrf", "--whitespace", True),
    MetricFlag(("--chrf-lowercase",), "chrf_lowercase", "chrf", "--lowercase", True),
    MetricFlag(("--chrf-eps-smoothing",), "chrf_eps_smoothing", "chrf", "--eps-smoothing",
               True),
    MetricFlag(("--ter-case-sensitive",), "ter_case_sensitive", "ter", "--case-sensitive",
               True),
    MetricFlag(("--ter-asian-support",), "ter_asian_support", "ter", "--asian-support", True),
    MetricFlag(("--ter-no-punct",), "ter_no_punct", "ter", "--no-punct", True),
    MetricFlag(("--ter-normalized",), "ter_normalized", "ter", "--normalized", True),
)
"""sacrebleu 2.6.0's metric options (its CLI has no --max-ngram-order). Its -lc is
BLEU's alone, as in sacrebleu: chrF's is --chrf-lowercase."""

Option = Tuple[str, Optional[str], str]
"""(an evaluator's option, its value or None for a flag, how the user said it)."""


def given_options(values: Mapping[str, Any]) -> List[Tuple[MetricFlag, Option]]:
    """Each sacrebleu option that was given a value (`values` by dest: a flag that is
    set, an option that is not None), with the evaluator option it stands for."""
    given: List[Tuple[MetricFlag, Option]] = []
    for flag in SACREBLEU_FLAGS:
        value = values.get(flag.dest)
        if flag.is_flag and value:
            given.append((flag, (flag.option, None, flag.short)))
        elif not flag.is_flag and value is not None:
            given.append((flag, (flag.option, str(value), f"{flag.short} {value}")))
    return given


def options_for(metric: str, values: Mapping[str, Any]) -> List[Option]:
    """The evaluator options of one metric among `given_options(values)`."""
    return [option for flag, option in given_options(values) if flag.metric == metric]

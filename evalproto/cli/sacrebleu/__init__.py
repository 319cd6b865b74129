"""`evalproto sacrebleu ARGS...`: sacrebleu 2.x's command line, scored by evalproto.

It takes sacrebleu's arguments and prints what `sacrebleu ARGS...` (2.6.0) prints, byte
for byte, but for the version in signatures (`version:evalproto-X`): the same text,
JSON and LaTeX, tables, messages on stderr, usage errors and exit codes. The figures are
evalproto's: each metric's statistics come from an evalproto evaluator (one row per
segment), and every score, interval and p-value is a reduction over those rows with
evalproto's resampling (sacrebleu's random draws).

The figures print exactly as sacrebleu's because evalproto's are sacrebleu's to the
bit: its evaluators score summed statistics with sacrebleu's float operations in its
order, and its bootstrap sums resamples in float32 and scores them as sacrebleu does
(see evalproto.stats.resampling). Text is read as sacrebleu reads it, keeping a line's
leading whitespace, and scored as given, as everywhere in process.

Test sets (-t, -l, --echo, --download, --list) are read with sacrebleu's dataset module
from its local cache; nothing is downloaded.
"""

from __future__ import annotations

import signal
from typing import List

import click

from evalproto.cli.sacrebleu.run import run


class _PassThrough(click.Command):
    """Hands every argument, `--` and -h included, to sacrebleu's parser untouched."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        ctx.meta["sacrebleu_args"] = list(args)
        return []


@click.command("sacrebleu", cls=_PassThrough, add_help_option=False,
               context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                 "help_option_names": []})
@click.pass_context
def command(ctx: click.Context) -> None:
    """sacrebleu's command line (same arguments, same output), scored by evalproto."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly, as sacrebleu does
    ctx.exit(run(ctx.meta["sacrebleu_args"]))

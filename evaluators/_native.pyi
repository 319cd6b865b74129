"""Compiled kernels for BLEU, chrF and TER statistics (native/module.cpp)."""

from typing import List, Sequence, Union

BEAM_WIDTH: int
MAX_SHIFT_CANDIDATES: int
MAX_SHIFT_DIST: int
MAX_SHIFT_SIZE: int
MAX_THREADS: int

def bleu_rows(hyps: Sequence[str], refs: Sequence[Sequence[str]], max_order: int,
              tokenizer: str) -> bytearray: ...
def bleu_columns(refs: Sequence[Sequence[str]], hyps: Sequence[Sequence[str]],
                 max_order: int, tokenizer: str) -> bytearray: ...
def chrf_rows(hyps: Sequence[str], refs: Sequence[Sequence[str]], char_order: int,
              word_order: int, beta: float, whitespace: bool,
              eps_smoothing: bool) -> bytearray: ...
def chrf_columns(refs: Sequence[Sequence[str]], hyps: Sequence[Sequence[str]],
                 char_order: int, word_order: int, beta: float, whitespace: bool,
                 eps_smoothing: bool) -> bytearray: ...
def ter_rows(hyps: Sequence[Union[str, List[str]]],
             refs: Sequence[Sequence[Union[str, List[str]]]]) -> bytearray: ...
def set_threads(n: int) -> int: ...
def tokenize_13a(line: str) -> str: ...

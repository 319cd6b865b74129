"""Synthetic parallel text for benchmarks: realistic sentence lengths and word
frequencies, with hypotheses that are noisy copies of the first reference, so that
BLEU lands near WMT-like values. Deterministic for a given seed."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List, TextIO

import numpy as np

VOCABULARY = 30_000


def _words(rng: np.random.Generator, count: int) -> List[str]:
    ranks = (rng.zipf(1.2, size=count) - 1) % VOCABULARY + 1
    return [f"w{rank}" for rank in ranks]


def _edit(rng: np.random.Generator, words: List[str], rate: float) -> List[str]:
    """Substitute, drop and insert words at the given rate, and swap a few neighbours."""
    out = []
    for word in words:
        roll = rng.random()
        if roll < rate / 3:
            out.extend(_words(rng, 1))
        elif roll < 2 * rate / 3:
            continue
        elif roll < rate:
            out.extend([word, *_words(rng, 1)])
        else:
            out.append(word)
    for _ in range(len(out) // 12):
        i = int(rng.integers(0, max(len(out) - 1, 1)))
        out[i:i + 2] = out[i:i + 2][::-1]
    return out


def make_corpus(directory: Path, segments: int, references: int = 2, seed: int = 1
                ) -> tuple[list[str], str]:
    """Write ref.0 ... ref.K-1 and hyp into `directory`; return their paths."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    lengths = np.clip(rng.lognormal(np.log(22), 0.5, size=segments).astype(int), 1, 150)
    sources = [_words(rng, int(length)) for length in lengths]
    ref_paths = []
    for k in range(references):
        path = directory / f"ref.{k}"
        lines = [" ".join(_edit(rng, words, 0.15 if k else 0.0)) for words in sources]
        path.write_text("\n".join(lines) + "\n")
        ref_paths.append(str(path))
    hyp_path = directory / "hyp"
    hyp_path.write_text("\n".join(" ".join(_edit(rng, words, 0.35)) for words in sources) + "\n")
    return ref_paths, str(hyp_path)


def make_nbest(directory: Path, references: int = 300, per_reference: int = 60, seed: int = 2
               ) -> tuple[str, str]:
    """A tuning load: each reference repeated once per hypothesis of its n-best list.
    Writes ref and hyp, aligned line by line; returns their paths."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    lengths = np.clip(rng.lognormal(np.log(22), 0.5, size=references).astype(int), 1, 150)
    refs, hyps = [], []
    for length in lengths:
        words = _words(rng, int(length))
        reference = " ".join(words)
        for _ in range(per_reference):
            refs.append(reference)
            hyps.append(" ".join(_edit(rng, words, 0.3)))
    (directory / "ref").write_text("\n".join(refs) + "\n")
    (directory / "hyp").write_text("\n".join(hyps) + "\n")
    return str(directory / "ref"), str(directory / "hyp")


SYSTEMS_CHUNK = 1_000_000
"""Segments drawn at a time by make_systems: each chunk from a generator of its own, so
that ten million segments take the memory of one million (the first chunk's stream is
the one earlier versions drew all segments from, so that up to a million segments the
files are the same as theirs)."""


def make_systems(directory: Path, segments: int, systems: int = 5, seed: int = 4
                 ) -> tuple[str, list[str]]:
    """One reference and `systems` hypothesis files of `segments` lines of 5-40 words,
    each system a copy of the reference with a larger share of its words replaced.
    Written a chunk of lines at a time from arrays of word ids (a million lines of five
    systems in well under a minute); returns (reference path, system paths)."""
    directory.mkdir(parents=True, exist_ok=True)
    words = np.array([f"w{rank}" for rank in range(VOCABULARY + 1)], dtype=object)
    paths = [directory / "ref", *(directory / f"system{number + 1}" for number in range(systems))]
    streams = [open(path, "w", encoding="utf-8") for path in paths]
    try:
        for first in range(0, segments, SYSTEMS_CHUNK):
            rng = np.random.default_rng(seed if first == 0 else [seed, first // SYSTEMS_CHUNK])
            for stream, ids in zip(streams, _system_ids(rng, min(SYSTEMS_CHUNK, segments - first),
                                                        systems)):
                _write_lines(stream, words, *ids)
    finally:
        for stream in streams:
            stream.close()
    return str(paths[0]), [str(path) for path in paths[1:]]


def _system_ids(rng: np.random.Generator, segments: int, systems: int
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(word ids, line starts, line ends) of the reference, then of each system."""
    lengths = rng.integers(5, 41, size=segments)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    reference = (rng.zipf(1.2, size=int(ends[-1])) - 1) % VOCABULARY + 1
    yield reference, starts, ends
    for number in range(systems):
        ids = reference.copy()
        replaced = rng.random(len(ids)) < 0.25 + 0.05 * number
        ids[replaced] = (rng.zipf(1.2, size=int(replaced.sum())) - 1) % VOCABULARY + 1
        yield ids, starts, ends


def _write_lines(stream: TextIO, words: np.ndarray, ids: np.ndarray, starts: np.ndarray,
                 ends: np.ndarray) -> None:
    tokens = words[ids]
    stream.write("".join(" ".join(tokens[start:end]) + "\n"
                         for start, end in zip(starts.tolist(), ends.tolist())))

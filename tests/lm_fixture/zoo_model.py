"""A tiny LM Zoo model for the tests and the example of docs/lm-zoo.md: a
SentencePiece-like subword tokenizer (`▁` opens a word; characters it never saw are
`<unk>`) and a bigram model over its tokens, interpolated with unigrams (smoothed more
for short pieces, so that unseen ones still differ), whose natural-log distributions are
stored as float32, as LM Zoo's models store a softmax. Each sentence
is `<s>`, its pieces, `</s>`; the first row, with no context, is uniform (as LM Zoo's
transformers backend writes it).

`write_outputs(directory)` writes what the model's container would for SENTENCES:
predictions.hdf5 (get_predictions.hdf5), surprisals.tsv (get_surprisals), tokenize.txt,
unkify.txt and spec.json, beside sentences.txt; and unigram.hdf5, the predictions of
the same tokens by the unigrams alone (a weaker model to compare with). Run as a
script, it writes them into the directory given (tests/lm_fixture/zoo holds them for the docs):

    python tests/lm_fixture/zoo_model.py tests/lm_fixture/zoo
"""

import json
import math
import sys
from pathlib import Path
from typing import List

import numpy as np

TRAIN = [
    "The cat sat on the mat.",
    "The dog sat on the cat.",
    "A cat and a dog sat in 2023, didn't they?",
    "Кошка сидит на ковре.",
    "東京は日本の首都です。",
]
SENTENCES = [
    "The cat sat on the mat.",
    "A dog sat on the mat in 2024, didn't it?",
    "Кошка сидит на коврике ✓",
    "日本の猫です。",
]
UNK, START, END, SPACE = "<unk>", "<s>", "</s>", "▁"


class BigramModel:
    def __init__(self, train: List[str], weight: float = 0.7) -> None:
        words = [word for line in train for word in line.split()]
        characters = sorted({character for word in words for character in word})
        self.vocabulary = [UNK, START, END, SPACE,
                           *sorted({SPACE + word for word in words}),
                           *sorted({SPACE + character for character in characters}),
                           *characters]
        self.ids = {token: i for i, token in enumerate(self.vocabulary)}
        size = len(self.vocabulary)
        singles, pairs = np.zeros(size), np.zeros((size, size))
        for line in train:
            ids = [self.ids[token] for token in self.tokenize(line)]
            np.add.at(singles, ids, 1)
            np.add.at(pairs, (ids[:-1], ids[1:]), 1)
        singles += [1 / len(token) ** 2 for token in self.vocabulary]
        unigrams = singles / singles.sum()
        seen = pairs.sum(axis=1, keepdims=True)
        bigrams = np.divide(pairs, seen, out=np.zeros_like(pairs), where=seen > 0)
        mixed = np.where(seen > 0, weight * bigrams + (1 - weight) * unigrams, unigrams)
        self.logp = np.log(mixed).astype(np.float32)

    def tokenize(self, sentence: str) -> List[str]:
        """<s>, the longest known pieces of each word (the first with `▁`), </s>."""
        tokens = [START]
        for word in sentence.split():
            rest, first = SPACE + word, True
            while rest:
                piece = next((rest[:n] for n in range(len(rest), 0, -1)
                              if rest[:n] in self.ids and rest[:n] != SPACE), None)
                if piece is None and first:
                    piece = SPACE  # a word that starts with an unknown character
                tokens.append(piece or UNK)
                rest, first = rest[len(piece or rest[0]):], False
        return [*tokens, END]

    def predictions(self, tokens: List[str]) -> np.ndarray:
        """Row j: log p(token | token j - 1), in nats; row 0 is uniform."""
        size = len(self.vocabulary)
        first = np.full((1, size), -math.log(size), dtype=np.float32)
        return np.vstack([first, *(self.logp[self.ids[token]][None, :] for token in tokens[:-1])])


MODEL = BigramModel(TRAIN)
UNIGRAMS = BigramModel(TRAIN, weight=0)


def write_predictions(path: Path, sentences: List[str] = SENTENCES,
                      model: BigramModel = MODEL) -> None:
    """get_predictions.hdf5's output, byte for byte the same on every run."""
    import h5py

    with h5py.File(path, "w", libver="latest", track_order=False) as file:
        for i, sentence in enumerate(sentences):
            tokens = MODEL.tokenize(sentence)
            group = file.create_group(f"/sentence/{i}", track_order=False)
            group.create_dataset("predictions", data=model.predictions(tokens),
                                 compression="gzip", shuffle=True, track_times=False)
            group.create_dataset("tokens", data=np.array([MODEL.ids[t] for t in tokens]),
                                 track_times=False)
        file.create_dataset("/vocabulary", data=np.char.encode(MODEL.vocabulary, "utf-8"),
                            track_times=False)


def surprisals(sentences: List[str] = SENTENCES) -> str:
    """get_surprisals' table of the same model: -log2 p of each token."""
    lines = ["sentence_id\ttoken_id\ttoken\tsurprisal"]
    for i, sentence in enumerate(sentences):
        tokens = MODEL.tokenize(sentence)
        rows = MODEL.predictions(tokens).astype(np.float64)
        for j, token in enumerate(tokens):
            bits = float(-rows[j, MODEL.ids[token]] / math.log(2))
            lines.append(f"{i + 1}\t{j + 1}\t{token}\t{bits!r}")
    return "\n".join(lines) + "\n"


def spec() -> dict:
    return {
        "name": "tiny-bigram", "ref_url": "https://example.org/tiny-bigram",
        "image": {"maintainer": "tests@example.org", "version": "1", "datetime": "2024-01-01",
                  "supported_features": {"tokenize": True, "unkify": True,
                                         "get_surprisals": True, "get_predictions": True,
                                         "mount_checkpoint": False}},
        "vocabulary": {"items": MODEL.vocabulary, "unk_types": [UNK], "prefix_types": [START],
                       "suffix_types": [END], "special_types": []},
        "tokenizer": {"type": "subword", "cased": True, "sentinel_position": "initial",
                      "sentinel_pattern": SPACE, "metaspace": SPACE},
    }


def write_outputs(directory: Path, sentences: List[str] = SENTENCES) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tokenized = [MODEL.tokenize(sentence) for sentence in sentences]
    write_predictions(directory / "predictions.hdf5", sentences)
    write_predictions(directory / "unigram.hdf5", sentences, UNIGRAMS)
    texts = {
        "sentences.txt": [sentence for sentence in sentences],
        "tokenize.txt": [" ".join(tokens) for tokens in tokenized],
        "unkify.txt": [" ".join("1" if t == UNK else "0" for t in tokens) for tokens in tokenized],
    }
    for name, lines in texts.items():
        (directory / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    (directory / "surprisals.tsv").write_text(surprisals(sentences), encoding="utf-8")
    (directory / "spec.json").write_text(json.dumps(spec(), ensure_ascii=False, indent=1) + "\n",
                                         encoding="utf-8")


if __name__ == "__main__":
    write_outputs(Path(sys.argv[1]))

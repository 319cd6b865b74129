"""A small n-gram language model for the LM Challenge tests, speaking lmc's predictor
protocol on stdin/stdout (`predict<TAB>context[<TAB>candidate...]`, `train`, `clear`).

Usage: ngram_model.py TRAIN_FILE [--chars]

Words (default): a bigram model with add-one smoothing over the training vocabulary.
Without candidates it proposes the 10 likeliest words that complete the partly typed
word, as suffixes; with candidates it scores each one that makes a known word.
--chars: the same over characters, for the character entropy game.
Scores are natural-log probabilities, normalised over the vocabulary.
"""

import math
import re
import sys
from collections import Counter

WORD = re.compile(r"\w+|[^\w\s]+")
START = "<s>"


class Bigrams:
    def __init__(self, sequences):
        self.unigrams = Counter()
        self.pairs = Counter()
        for units in sequences:
            previous = START
            for unit in units:
                self.unigrams[previous] += 1
                self.pairs[previous, unit] += 1
                previous = unit
        self.vocabulary = sorted({unit for units in sequences for unit in units})

    def logp(self, previous, unit):
        count = self.pairs[previous, unit] + 1
        return math.log(count / (self.unigrams[previous] + len(self.vocabulary)))


def split_context(context, chars):
    """(previous unit, partly typed unit) at the end of the context."""
    if chars:
        return (context[-1] if context else START), ""
    typed = re.search(r"\w*$", context).group()
    before = WORD.findall(context[:len(context) - len(typed)])
    return (before[-1] if before else START), typed


def predict(model, context, candidates, chars):
    previous, typed = split_context(context, chars)
    if candidates:
        known = [c for c in candidates if typed + c in model.vocabulary_set]
        return [(c, model.logp(previous, typed + c)) for c in known]
    options = [unit for unit in model.vocabulary
               if unit.startswith(typed) and len(unit) > len(typed)]
    best = sorted(options, key=lambda unit: -model.logp(previous, unit))[:10]
    return [(unit[len(typed):], model.logp(previous, unit)) for unit in best]


def main():
    chars = "--chars" in sys.argv[2:]
    with open(sys.argv[1], encoding="utf-8") as stream:
        lines = [line.rstrip("\n") for line in stream]
    model = Bigrams([list(line) if chars else WORD.findall(line) for line in lines])
    model.vocabulary_set = set(model.vocabulary)
    for request in sys.stdin:
        command, *fields = request.rstrip("\n").split("\t")
        if command == "predict":
            results = predict(model, fields[0], fields[1:], chars)
            print("\t".join(f"{unit}\t{score!r}" for unit, score in results), flush=True)


if __name__ == "__main__":
    main()

"""A third-party evaluator, installed as a plugin by the test suite."""

from evalproto import Evaluator


class LengthRatio(Evaluator):
    """Hypothesis words per reference word."""

    name = "length-ratio"

    def __init__(self):
        self.stat_names = ("hyp_words", "ref_words")

    def stats(self, refs, hyp):
        return [len(hyp.split()), len(refs[0].split())]

    def score(self, vector):
        return vector[0] / vector[1] if vector[1] else 0.0

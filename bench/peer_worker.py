"""The peers' side of bench/peers.py, run by the Python of the peers' own virtual
environment (sacrebleu, sacrebleu-mojo, fastchrf; never evalproto's): it reads the
inputs once, then answers one task a line on stdin with one JSON line on stdout, the
task's seconds (timed here, in process) and its numbers."""

import json
import sys
import time


def tasks(data):
    import fastchrf
    import sacrebleu
    import sacrebleu_mojo
    from sacrebleu.metrics import BLEU, CHRF

    corpora = data["corpora"]
    batches = data["batches"]
    bleu_texts = data["bleu_texts"]
    sentence_bleu = BLEU(effective_order=True)
    sentence_chrf = CHRF()

    def sentence_chrf_rows():
        """sacrebleu's sentence chrF of the first batch's first rows (the equality check
        of the pairwise rows; untimed)."""
        rows = data["checked_rows"]
        return [[sentence_chrf.sentence_score(hyp, [ref]).score for ref in batches[0]]
                for hyp in batches[0][:rows]]

    return {
        "mojo_chrf": lambda size: sacrebleu_mojo.corpus_chrf(
            corpora[size]["hyps"], [corpora[size]["refs"]]).score,
        "mojo_bleu": lambda size: sacrebleu_mojo.corpus_bleu(
            corpora[size]["hyps"], [corpora[size]["refs"]]).score,
        "sacrebleu_chrf": lambda size: sacrebleu.corpus_chrf(
            corpora[size]["hyps"], [corpora[size]["refs"]]).score,
        "sacrebleu_bleu": lambda size: sacrebleu.corpus_bleu(
            corpora[size]["hyps"], [corpora[size]["refs"]]).score,
        "fastchrf_pairwise": lambda _: fastchrf.pairwise_chrf(batches, batches),
        "sacrebleu_pairwise_chrf_rows": lambda _: sentence_chrf_rows(),
        "sacrebleu_pairwise_bleu": lambda _: [
            [sentence_bleu.sentence_score(hyp, [ref]).score for ref in bleu_texts]
            for hyp in bleu_texts],
    }


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as stream:
        table = tasks(json.load(stream))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        name, size = json.loads(line)
        start = time.perf_counter()
        result = table[name](size)
        seconds = time.perf_counter() - start
        print(json.dumps({"seconds": seconds, "result": result}), flush=True)


if __name__ == "__main__":
    main()

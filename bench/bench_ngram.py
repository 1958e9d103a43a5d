"""How fast is n-gram counting? Counts 1- to 5-grams over the full training split with the
notebook's own `count_ngrams` (the solution cell of notebook 01) and prints time and tokens/s.

    python bench/bench_ngram.py                     # the course corpus (Shakespeare, train split)
    python bench/bench_ngram.py --text FILE         # any text file (e.g. Tiny Shakespeare)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lmcourse import data
from lmcourse.notebook_runner import solution_namespace
from lmcourse.tokenizers import split_sentences

SETUP_AND_COUNTING = ("setup", "pad_sentence", "count_ngrams")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--text", type=Path, help="a text file to use instead of the course corpus")
    ap.add_argument("--max-order", type=int, default=5)
    args = ap.parse_args()
    if args.text:
        text = data.load_corpus(args.text).text("train")
        label = f"{args.text.name} (first 90%)"
    else:
        text = data.spoken_text(data.load_shakespeare().text("train"))
        label = "Shakespeare train split (spoken text)"
    sentences = split_sentences(text)
    n_tokens = sum(len(s) + 1 for s in sentences)
    ns = solution_namespace("01_ngram", SETUP_AND_COUNTING)
    print(f"corpus: {label}: {len(sentences):,} sentences, {n_tokens:,} predicted tokens (words + </s>)")
    print(f"{'n':>3} {'distinct n-grams':>17} {'seconds':>9} {'tokens/s':>12}")
    total = 0.0
    for n in range(1, args.max_order + 1):
        start = time.perf_counter()
        counts = ns["count_ngrams"](sentences, n)
        dt = time.perf_counter() - start
        total += dt
        print(f"{n:>3} {len(counts):>17,} {dt:>9.2f} {n_tokens / dt:>12,.0f}")
    print(f"all orders 1..{args.max_order}: {total:.2f} s, {args.max_order * n_tokens / total:,.0f} tokens/s")


if __name__ == "__main__":
    main()

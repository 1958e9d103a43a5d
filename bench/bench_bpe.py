"""Byte-level BPE (lmcourse/bpe.py): training and encoding speed, and bytes per token.

Prints figures, asserts nothing (the agreement checks live in tests/test_bpe.py):

1. training time, plain trainer (recounts every pair) vs incremental trainer, on a slice of the
   training plays (the merges are checked equal);
2. the incremental trainer on all the training plays to 4096 ids, against Hugging Face
   ``tokenizers``' BpeTrainer (Rust) in the same run, how many merges the two share, and the plain
   trainer's time per merge on the same text, extrapolated (it would take too long to run);
3. encoding the validation plays: MB/s of ours (cold cache, then warm) against tiktoken built from
   the same ranks and pattern, in the same run;
4. bytes per token on the validation plays for vocabulary sizes 256 .. 8192, all from one training
   run to 8192 (the first k merges of that run are exactly what training to 256 + k would give);
5. what the merges learned (first merges, longest tokens, a few splits), and peak memory.

    python bench/bench_bpe.py                 # the sizes above
    python bench/bench_bpe.py --quick         # a smaller run (a 1 MB training slice, 2048 ids)
"""

from __future__ import annotations

import argparse
import platform
import resource
import time

from lmcourse import bpe, data
from lmcourse.reference import bpe as bpe_reference


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def show(b: bytes) -> str:
    """A token as text, or as bytes where it is not whole UTF-8 characters."""
    try:
        return repr(b.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(b)


def pair_count_after(words, merges, pair_bytes) -> int:
    """How often the adjacent pair of tokens with these bytes occurs once ``merges`` are applied."""
    tok = bpe.BPETokenizer(merges)
    total = 0
    for word, freq in words.items():
        ids = tok.encode_pretoken(word)
        total += freq * sum((tok.vocab[a], tok.vocab[b]) == pair_bytes for a, b in zip(ids, ids[1:]))
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a 1 MB training slice and 2048 ids at most")
    ap.add_argument("--slice", type=int, default=200_000, help="characters for plain vs incremental (200k)")
    ap.add_argument("--slice-vocab", type=int, default=512, help="vocab size for plain vs incremental (512)")
    args = ap.parse_args()

    corpus = data.load_shakespeare(quiet=True)
    train, val = corpus.text("train"), corpus.text("val")
    if args.quick:
        train = train[:1_000_000]
    sizes = [256, 512, 1024, 2048] + ([] if args.quick else [4096, 8192])
    main_vocab = 2048 if args.quick else 4096
    n_train, n_val = len(train.encode()), len(val.encode())
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, one thread")
    sliced = ", sliced" if args.quick else ""
    print(f"training plays: {n_train / 1e6:.2f} MB ({len(corpus.splits['train'])} works{sliced}); "
          f"validation plays: {n_val / 1e6:.2f} MB ({', '.join(corpus.splits['val'])})")
    words, t_pre = timed(bpe.pretoken_counts, train)
    print(f"pre-tokenization of the training plays: {t_pre:.2f} s, {sum(words.values()):,} pre-tokens, "
          f"{len(words):,} distinct")

    # 1. plain vs incremental on a slice
    text = train[: args.slice]
    (_, plain), t_plain = timed(bpe_reference.train_bpe, text, args.slice_vocab)
    (_, incr), t_incr = timed(bpe.train_bpe_incremental, text, args.slice_vocab)
    print(f"\n1. training on the first {len(text):,} characters to {args.slice_vocab} ids "
          f"({len(plain)} merges): plain {t_plain:.2f} s, incremental {t_incr:.2f} s, "
          f"{t_plain / t_incr:.0f}x faster; same merges: {plain == incr}")

    # 2. the incremental trainer on all the training plays, against HF tokenizers and the plain trainer
    (vocab, merges), t_ours = timed(bpe.train_bpe_incremental, train, main_vocab)
    print(f"\n2. training on all {n_train / 1e6:.2f} MB to {main_vocab} ids ({len(merges)} merges):")
    print(f"   ours, incremental: {t_ours:.2f} s (pre-tokenization included); peak memory {peak_rss_mb():.0f} MB")
    n_probe = 10
    t_probe = timed(bpe_reference.train_bpe, train, 256 + n_probe)[1]
    per_merge = (t_probe - t_pre) / n_probe
    print(f"   ours, plain: {t_probe:.1f} s for its first {n_probe} merges, {per_merge:.2f} s a merge -> about "
          f"{t_pre + per_merge * len(merges):,.0f} s for {len(merges)} (extrapolated, "
          f"{(t_pre + per_merge * len(merges)) / t_ours:.0f}x the incremental one)")
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    except ImportError:
        print("   HF tokenizers is not installed (pip install -e '.[dev]'): no comparison")
    else:
        hf = Tokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        trainer = trainers.BpeTrainer(vocab_size=main_vocab, min_frequency=0, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        t_hf = timed(hf.train_from_iterator, [train], trainer)[1]
        u2b = {u: b for b, u in bpe.bytes_to_unicode().items()}
        ours_pairs = [(vocab[a], vocab[b]) for a, b in merges]
        hf_pairs = [(bytes(u2b[c] for c in a), bytes(u2b[c] for c in b))
                    for a, b in (m.split(" ") if isinstance(m, str) else m
                                 for m in __import__("json").loads(hf.to_str())["model"]["merges"])]
        prefix = next((i for i, (x, y) in enumerate(zip(ours_pairs, hf_pairs)) if x != y), min(len(ours_pairs),
                                                                                            len(hf_pairs)))
        shared = len(set(ours_pairs) & set(hf_pairs))
        print(f"   HF tokenizers BpeTrainer (Rust, {hf.get_vocab_size()} ids): {t_hf:.2f} s; ours is "
              f"{t_ours / t_hf:.1f}x its time")
        print(f"   merges: the first {prefix} are identical, in order; {shared} of {len(ours_pairs)} are in both lists")
        if prefix < len(ours_pairs):
            mine, theirs = ours_pairs[prefix], hf_pairs[prefix]
            counts = [pair_count_after(words, merges[:prefix], p) for p in (mine, theirs)]
            print(f"   first difference, merge {prefix}: ours {tuple(map(show, mine))} (count {counts[0]}), "
                  f"HF {tuple(map(show, theirs))} (count {counts[1]})"
                  + (": a tie, which HF breaks the other way" if counts[0] == counts[1] else ""))
    print(f"   peak memory so far (HF included): {peak_rss_mb():.0f} MB")

    # 3. encoding speed against tiktoken with the same ranks
    tok = bpe.BPETokenizer(merges)
    ids, t_cold = timed(tok.encode, val)
    ids_warm, t_warm = timed(tok.encode, val)
    print(f"\n3. encoding the validation plays ({n_val / 1e6:.2f} MB, {len(ids):,} tokens at {tok.vocab_size} ids):")
    print(f"   ours: {n_val / t_cold / 1e6:.2f} MB/s with an empty pre-token cache, {n_val / t_warm / 1e6:.2f} MB/s "
          f"with it filled")
    no_cache = bpe.BPETokenizer(merges)
    no_cache.CACHE_SIZE = 0
    t_none = timed(lambda: [no_cache.encode_pretoken(p.encode()) for p in bpe.pretokenize(val)])[1]
    print(f"   ours without the cache: {n_val / t_none / 1e6:.2f} MB/s")
    try:
        enc = tok.tiktoken_encoding()
    except ImportError:
        print("   tiktoken is not installed (pip install -e '.[dev]'): no comparison")
    else:
        ids_tt, t_tt = timed(enc.encode_ordinary, val)
        print(f"   tiktoken, same ranks and pattern: {n_val / t_tt / 1e6:.2f} MB/s; ours (cold) takes "
              f"{t_cold / t_tt:.1f}x its time; same ids: {ids_tt == ids == ids_warm}")

    # 4. bytes per token against vocabulary size
    big = max(sizes)
    if big > main_vocab:
        (vocab, merges), t_big = timed(bpe.train_bpe_incremental, train, big)
        print(f"\n4. one training run to {big} ids on the training plays: {t_big:.1f} s")
    else:
        print(f"\n4. merges of the run above ({main_vocab} ids)")
    print(f"   {'vocab size':>10} {'tokens (val)':>13} {'bytes/token':>12} {'chars/token':>12}")
    for size in sizes:
        tok_k = bpe.BPETokenizer(merges[: size - 256])
        n = len(tok_k.encode(val))
        print(f"   {size:>10} {n:>13,} {n_val / n:>12.3f} {len(val) / n:>12.3f}")

    # 5. what the merges learned
    tok = bpe.BPETokenizer(merges)
    print(f"\n5. the first 20 merges: {' '.join(show(vocab[256 + i]) for i in range(20))}")
    longest = sorted(range(256, 256 + len(merges)), key=lambda i: (-len(vocab[i]), i))
    print(f"   the 5 longest tokens: {' '.join(show(vocab[i]) for i in longest[:5])}")
    words_only = [i for i in longest if vocab[i].strip()][:10]
    print(f"   the 10 longest that are not all whitespace: {' '.join(show(vocab[i]) for i in words_only)}")
    for s in ["To be, or not to be, that is the question:", "In 1599, Julius Caesar earned 23 wounds.",
              "Coriolanus, Enobarbus and Rosencrantz", "O Romeo,\n\n    Romeo!", "naïve café, 東京, 🙂"]:
        pieces = [show(tok.decode_bytes([i])) for i in tok.encode(s)]
        print(f"   {len(s.encode()):>3} bytes -> {len(pieces):>3} tokens: {' '.join(pieces)}")
    print(f"\npeak memory: {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()

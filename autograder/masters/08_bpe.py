# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 08 · Tokenization: byte-level BPE from scratch
#
# **What you will build.** The tokenizer of GPT-2 and of most language models since: **byte-level
# Byte Pair Encoding (BPE)**. You will count adjacent pairs, merge them, train a BPE vocabulary on
# Shakespeare with a rule that gives everyone the same merges, encode text with it (merges by rank
# inside each pre-token, special tokens kept whole) and decode it back, and then write the trainer
# again so that it only updates the counts a merge changed. Then you will look at what it learned,
# how many bytes a token holds as the vocabulary grows, and train notebook 05's GPT on BPE tokens
# and on characters for the same compute time, compared in **bits per byte**.
#
# **Prerequisites.** Notebook 01 (words, `<unk>`, counting) and 05 (the GPT, the ladder). Python
# dicts, lists and `bytes`; no PyTorch needed for the exercises.
#
# **Time.** About 90 minutes of work; a few minutes of computing on a laptop CPU (the `cpu`
# profile), two of them the GPT runs of section 8; seconds under the autograder. Measured figures:
# [08_bpe](../docs/notebooks.md#08_bpe).
#
# **How the checks work.** Cells marked `# YOUR CODE HERE` are yours; the cell after each one
# checks your answer and says what looks wrong, and the autograder runs hidden tests of the same
# rules. Write the tokenizer yourself, in plain Python: `tiktoken`, `tokenizers` (Hugging Face)
# and `sentencepiece` score 0 under any name (importing one in a graded call fails it too), and
# the course's own tokenizer (`lmcourse.bpe`) is absent while the autograder runs (the experiments
# that use it then skip). Where an exercise uses an earlier one (`train_bpe` calls your
# `pair_counts` and `merge`), its tests run it with the course's version of the earlier one. Every
# rule in one place (threads, the course's files, TorchScript, questions): [How the checks
# work](../docs/notebooks.md#how-the-checks-work).

# %% locked="setup"
import copy
import dataclasses
import math
import time
from collections import Counter

import matplotlib.pyplot as plt
import regex
import torch
import torch.nn.functional as F

import lmcourse
import lmcourse.marking
from lmcourse.data import data_dir, encode_text, load_shakespeare
from lmcourse.nn import GPT, GPTConfig
from lmcourse.runtime import given, is_autograding
from lmcourse.tokenizers import CharTokenizer, split_words
from lmcourse.train import TrainConfig, train

_notebook_start = time.perf_counter()
rt = lmcourse.setup(seed=0)
tests = lmcourse.marking.Exam("08_bpe", globals())   # the test cells below: tests.check("merge")
P = rt.profile
# this notebook's sizes: characters of the training plays for the tokenizer (None: all), the
# largest vocabulary of section 6, the slice the two trainers are timed on, the GPT's vocabulary
# and the seconds of training each GPT gets in section 8
SIZES = {
    "tiny": dict(train_chars=60_000, max_vocab=1024, slice_chars=8_000, slice_vocab=300, gpt_vocab=512, budget_s=1.0),
    "cpu": dict(train_chars=None, max_vocab=8192, slice_chars=100_000, slice_vocab=512, gpt_vocab=1024, budget_s=60),
    "gpu": dict(train_chars=None, max_vocab=8192, slice_chars=100_000, slice_vocab=512, gpt_vocab=2048, budget_s=60),
}[P.name]

# %% [markdown]
# ## 1. Why subwords, and why bytes
#
# A language model predicts the next token $w_t$ from $w_1, \dots, w_{t-1}$, and each token's
# identity enters the model as one row $W^{\text{embed}}[w_t]$ of a $|V| \times d$ matrix. So the
# vocabulary $V$ must be fixed before training, and what it holds decides two things:
#
# * **words** (notebook 01): short sequences, but a huge $|V|$, and every word not in it, a name or
#   a typo, becomes `<unk>` — the model cannot even tell one unknown word from another;
# * **characters** (notebooks 02–07): a tiny $|V|$ and nothing unknown in Shakespeare, but every
#   sequence is long (each prediction covers one letter), and a character never seen in training,
#   an accent or an emoji, is unknown again.
#
# **Subword tokenization** sits between the two: frequent words are one token, rare ones are split
# into frequent pieces. **Byte-level** BPE starts from the 256 possible **bytes** of the UTF-8
# encoding of the text, not from characters. Every string is a sequence of bytes, so nothing is
# ever unknown: a Chinese character is three bytes, an emoji four, and the model sees them as such
# until training merges frequent byte sequences into tokens of their own.

# %%
for s in ["to be", "naïve", "東京", "🙂"]:
    print(f"{s!r:>9}: {len(s)} characters -> UTF-8 bytes {list(s.encode('utf-8'))}")

# %% [markdown]
# ## 2. Pairs and merges
#
# BPE builds its vocabulary with one step, repeated: find the **most frequent adjacent pair** of
# tokens, give it a new id, and replace every occurrence of the pair by that id. Ids 0–255 are the
# bytes; the first merge creates id 256, the second 257, and so on.
#
# ### Exercise 1 — `pair_counts` (1 point)
# Write `pair_counts(ids)`: given a list of token ids, return a `dict` (a `Counter` is fine) that
# maps each adjacent pair `(a, b)`, a tuple, to how many times it occurs. Overlapping pairs all
# count: `[7, 7, 7]` holds `(7, 7)` twice. A list of fewer than two ids has no pairs (`{}`). Do not
# change `ids`.

# %% solution="pair_counts"
def pair_counts(ids):
    """{(a, b): how often the pair occurs} over the adjacent pairs of ids."""
    ### BEGIN SOLUTION
    counts = {}
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts
    ### END SOLUTION


# %% tests="pair_counts_tests" points=1
tests.check("pair_counts")
### BEGIN HIDDEN TESTS
tests.grade("pair_counts")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2 — `merge` (1 point)
# Write `merge(ids, pair, new_id)`: a **new** list in which every occurrence of `pair`, found by
# scanning **left to right**, is replaced by `new_id`. Occurrences do not overlap: once a pair is
# merged, the scan goes on after it, so `merge([7, 7, 7], (7, 7), 256)` is `[256, 7]`. Do not
# change `ids`.

# %% solution="merge"
def merge(ids, pair, new_id):
    """A new list: each occurrence of pair (left to right, no overlaps) replaced by new_id."""
    ### BEGIN SOLUTION
    out = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out
    ### END SOLUTION


# %% tests="merge_tests" points=1
tests.check("merge")
### BEGIN HIDDEN TESTS
tests.grade("merge")
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Pre-tokens and special tokens
#
# Counting pairs over the raw text would let a token grow across word boundaries: `"e t"`
# (" the" after "be") is frequent, and a tokenizer that merges it learns one token per *pair of
# words*. GPT-2 first cuts the text into **pre-tokens** with a regular expression and merges only
# *inside* a pre-token: contractions (`'s`, `'ll`, ...), an optional space followed by letters, or
# by digits, or by other symbols, and runs of whitespace. The pattern needs the `regex` package:
# `\p{L}` is any letter of any script, `\p{N}` any digit. Joining the pre-tokens gives the text
# back, so nothing is lost.
#
# **Special tokens** such as `"<|endoftext|>"` (which GPT-2 puts between documents) are cut out
# before that: each one is a single token, never merged with its neighbours and never split.
# `split_specials(text, special_tokens)` returns the text as `(piece, is_special)` pairs.
#
# Two facts make training cheap. A pair never spans two pre-tokens, so the text can be replaced by
# its **distinct pre-tokens with their frequencies**: `" the"` occurs 20,000 times in the plays,
# its pairs are counted once, weighted by 20,000. And a merge only changes the pre-tokens that
# contain the pair.

# %% locked="pretokens"
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
PRETOKEN_RE = regex.compile(GPT2_PATTERN)


def pretokenize(text):
    """text cut into GPT-2's pre-tokens (strings); joined, they give text back."""
    return PRETOKEN_RE.findall(text)


def split_specials(text, special_tokens=()):
    """text as [(piece, is_special), ...] in order: each special token a piece of its own, the
    text between them ordinary pieces (empty ones left out); the longer special token wins."""
    if not special_tokens:
        return [(text, False)] if text else []
    alternatives = "|".join(regex.escape(s) for s in sorted(special_tokens, key=len, reverse=True))
    pieces = regex.split(f"({alternatives})", text)
    return [(p, i % 2 == 1) for i, p in enumerate(pieces) if p]  # split alternates: text, special, text, ...


print(pretokenize("I'll see 42 dogs,  ok?!\n"))
print(split_specials("to be<|endoftext|>or not", ["<|endoftext|>"]))
print(Counter(pretokenize("ab ab ab")))

# %% [markdown]
# ## 4. Training: the rule
#
# ### Exercise 3 — `train_bpe` (3 points)
# Write `train_bpe(text, vocab_size, special_tokens=())`, returning `(vocab, merges)`:
#
# * `merges` is a list of pairs (tuples of two ids), in the order learned; merge `i` creates id
#   `256 + i`;
# * `vocab` is a dict from every id to its `bytes`: `vocab[b] = bytes([b])` for the 256 bytes, then
#   `vocab[256 + i] = vocab[a] + vocab[b]` for merge `i = (a, b)`, then the special tokens, in the
#   order given, as their UTF-8 bytes with the next ids. `vocab_size` counts all three kinds.
#
# The rule, step by step:
#
# 1. cut the special tokens out (`split_specials`); pre-tokenize each ordinary piece
#    (`pretokenize`) and count each **distinct** pre-token once, with its frequency; each starts as
#    the list of its UTF-8 bytes (`list(s.encode("utf-8"))`);
# 2. repeat until the vocabulary has `vocab_size` ids: count the adjacent pairs of every pre-token
#    (use your `pair_counts`), each pair weighted by its pre-token's frequency; take the **most
#    frequent** pair; `merge` it in every pre-token with the next id;
# 3. **ties**: among the pairs with the highest count, take the one whose bytes are greatest:
#    compare `vocab[a]`, and where those are equal, `vocab[b]` — i.e. the greatest
#    `(count, vocab[a], vocab[b])`, e.g. `max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))`;
# 4. **stop early** when no pair is left (every pre-token is one token): the vocabulary is then
#    smaller than `vocab_size` (the special tokens still come right after the last merge).
#
# The result is deterministic: the same text always gives the same merges, on any machine.
#
# A worked example, `"aaabdaaabac"` (one pre-token). The counts are `aa` 4 (each `aaa` holds two),
# `ab` 2, the rest 1, so merge 0 is `(a, a)` → 256. In `aa a b d aa a b a c` both `(256, a)` and
# `(a, b)` occur twice: a tie, and `b"aa" > b"a"`, so merge 1 is `(256, a)` → 257 `"aaa"`. Then
# `(257, b)` → 258 `"aaab"`; after that every pair occurs once, and the greatest first token wins:
# `(d, 258)` → 259 `"daaab"`.

# %% solution="train_bpe"
def train_bpe(text, vocab_size, special_tokens=()):
    """Learn byte-level BPE: (vocab {id: bytes}, merges [(a, b), ...]) by the rule above."""
    ### BEGIN SOLUTION
    words = Counter()
    for piece, is_special in split_specials(text, special_tokens):
        if not is_special:
            words.update(pretokenize(piece))
    tokens = [list(w.encode("utf-8")) for w in words]
    freqs = list(words.values())
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    for new_id in range(256, vocab_size - len(special_tokens)):
        counts = {}
        for ids, freq in zip(tokens, freqs):
            for pair, c in pair_counts(ids).items():
                counts[pair] = counts.get(pair, 0) + c * freq
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))
        tokens = [merge(ids, best, new_id) for ids in tokens]
        vocab[new_id] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
    for s in special_tokens:
        vocab[len(vocab)] = s.encode("utf-8")
    return vocab, merges
    ### END SOLUTION


# %% tests="train_bpe_tests" points=3
# Your train_bpe runs with the reference pair_counts and merge (a slip there costs in its own exercise only).
tests.check("train_bpe")
### BEGIN HIDDEN TESTS
tests.grade("train_bpe")
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Encoding and decoding
#
# Encoding a new text with the learned merges replays training's choices, but by **rank**: inside
# each pre-token, starting from its bytes, look at all adjacent pairs that have a merge, merge the
# one learned **earliest** (lowest new id) everywhere in the pre-token, and repeat until no pair
# has a merge. The order in the text does not matter: with merges `[(b, c), (a, b)]`, `"abc"`
# becomes `[a, 256]` (`bc` was learned first), not `[257, c]`. This is what tiktoken and Hugging
# Face `tokenizers` do with the same merges.
#
# ### Exercise 4 — `encode` (3 points)
# Write `encode(text, merges, special_tokens=())`: the list of token ids of `text`. Merge `i` of
# `merges` makes id `256 + i`; the special tokens have the ids after the merges, in the order
# given (`256 + len(merges) + j`). Special tokens in the text become their one id (use
# `split_specials`); each ordinary piece is pre-tokenized (`pretokenize`), and each pre-token is
# encoded on its own by the rule above, with your `merge`. An empty text gives `[]`. Do not change
# `merges`: `encode` only reads it.

# %% solution="encode"
def encode(text, merges, special_tokens=()):
    """Token ids of text: merges applied by rank inside each pre-token; special tokens whole."""
    ### BEGIN SOLUTION
    ranks = {pair: 256 + i for i, pair in enumerate(merges)}
    special_ids = {s: 256 + len(merges) + j for j, s in enumerate(special_tokens)}
    out = []
    for piece, is_special in split_specials(text, special_tokens):
        if is_special:
            out.append(special_ids[piece])
            continue
        for pretoken in pretokenize(piece):
            ids = list(pretoken.encode("utf-8"))
            while len(ids) >= 2:
                pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, math.inf))
                if pair not in ranks:
                    break
                ids = merge(ids, pair, ranks[pair])
            out.extend(ids)
    return out
    ### END SOLUTION


# %% tests="encode_tests" points=3
# Your encode runs with the reference merge (a slip there costs in its own exercise only).
tests.check("encode")
### BEGIN HIDDEN TESTS
tests.grade("encode")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 5 — `decode` (1 point)
# Write `decode(ids, vocab)`: join the bytes `vocab[i]` of all the ids into one `bytes` object,
# then decode it as UTF-8 **once**, with `errors="replace"`: a token sequence may end in the
# middle of a character (a model can generate any id), and bytes that are not valid UTF-8 become
# U+FFFD `"�"`, as tiktoken and Hugging Face do, instead of raising. Decoding each token on its own
# would break characters that span two tokens.

# %% solution="decode"
def decode(ids, vocab):
    """The text of the token ids: their bytes joined, decoded as UTF-8 (invalid bytes -> U+FFFD)."""
    ### BEGIN SOLUTION
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")
    ### END SOLUTION


# %% tests="decode_tests" points=1
tests.check("decode")
### BEGIN HIDDEN TESTS
tests.grade("decode")
### END HIDDEN TESTS

# %% [markdown]
# Your encoder on a line of Shakespeare (with the merges of the test above, learned on the first
# 20,000 characters of the training plays), token by token:

# %%
# the course's tokenizer (absent while this notebook is graded: this demo and sections 7 and 8 skip)
course_bpe = given("lmcourse.bpe", "this demo and sections 7 and 8 skip their runs")
if course_bpe:
    _demo_merges = course_bpe.train_bpe_incremental(load_shakespeare(quiet=True).text("train")[:20_000], 400)[1]
    _demo_vocab = course_bpe.BPETokenizer(_demo_merges).vocab
    line = "Friends, Romans, countrymen, lend me your ears;"
    ids = encode(line, _demo_merges)
    print(f"{len(line.encode())} bytes -> {len(ids)} tokens: {[decode([i], _demo_vocab) for i in ids]}")
    print("round trip:", decode(ids, _demo_vocab) == line)

# %% [markdown]
# ## 6. Training faster: update only what a merge changed
#
# Your `train_bpe` recounts every pair of every pre-token after each merge. But a merge of
# `(a, b)` only changes the pre-tokens that contain `(a, b)`, and in those only the pairs next to a
# merged spot: in `x a b y`, the pairs `(x, a)`, `(a, b)`, `(b, y)` go and `(x, n)`, `(n, y)` come.
# An **incremental** trainer keeps the counts of all pairs between merges, and for each merge:
#
# 1. finds the pre-tokens that contain the best pair (keep an index `pair -> pre-tokens that hold
#    it`, or scan; the index is what makes it fast);
# 2. for each, subtracts the old pre-token's pairs (times its frequency), merges, adds the new
#    pre-token's pairs;
# 3. picks the next best pair by the same rule and tie-break as `train_bpe` (a scan of the counts is
#    fine; a heap is faster).
#
# ### Exercise 6 — `train_bpe_incremental` (2 points)
# Write `train_bpe_incremental(text, vocab_size, special_tokens=())`: the **same** result as
# `train_bpe` (vocab and merges, early stop and special tokens included), without recounting every
# pair after each merge. It must not call `train_bpe` (the tests refuse it); it may use
# `pair_counts`, `merge` and helpers of your own. It is graded on its result; its speed is shown
# below, not graded. Watch out for pairs whose count drops to 0: they must not be chosen.

# %% solution="train_bpe_incremental"
def train_bpe_incremental(text, vocab_size, special_tokens=()):
    """train_bpe's result, updating the pair counts only where a merge changed a pre-token."""
    ### BEGIN SOLUTION
    words = Counter()
    for piece, is_special in split_specials(text, special_tokens):
        if not is_special:
            words.update(pretokenize(piece))
    tokens = [list(w.encode("utf-8")) for w in words]
    freqs = list(words.values())
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    counts = {}
    where = {}  # pair -> indices of the pre-tokens that hold it (may list some that lost it since)
    for w, ids in enumerate(tokens):
        for pair, c in pair_counts(ids).items():
            counts[pair] = counts.get(pair, 0) + c * freqs[w]
            where.setdefault(pair, set()).add(w)
    for new_id in range(256, vocab_size - len(special_tokens)):
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))
        vocab[new_id] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
        for w in where.pop(best):
            old = tokens[w]
            new = merge(old, best, new_id)
            if len(new) == len(old):
                continue
            for pair, c in pair_counts(old).items():
                counts[pair] -= c * freqs[w]
                if counts[pair] == 0:
                    del counts[pair]
            for pair, c in pair_counts(new).items():
                counts[pair] = counts.get(pair, 0) + c * freqs[w]
                where.setdefault(pair, set()).add(w)
            tokens[w] = new
    for s in special_tokens:
        vocab[len(vocab)] = s.encode("utf-8")
    return vocab, merges
    ### END SOLUTION


# %% tests="train_bpe_incremental_tests" points=2
# Your trainer runs with the reference pair_counts and merge, and with a train_bpe that fails when called.
tests.check("train_bpe_incremental")
### BEGIN HIDDEN TESTS
tests.grade("train_bpe_incremental")
### END HIDDEN TESTS

# %% [markdown]
# Your two trainers on the same slice of the training plays (both are your code; the time depends
# on your machine):

# %%
corpus = load_shakespeare(quiet=True)
_slice = corpus.text("train")[:SIZES["slice_chars"]]
_t = time.perf_counter()
_plain = train_bpe(_slice, SIZES["slice_vocab"])
t_plain = time.perf_counter() - _t
_t = time.perf_counter()
_fast = train_bpe_incremental(_slice, SIZES["slice_vocab"])
t_fast = time.perf_counter() - _t
print(f"{len(_slice):,} characters to {SIZES['slice_vocab']} ids: train_bpe {t_plain:.2f} s, "
      f"train_bpe_incremental {t_fast:.2f} s ({t_plain / max(t_fast, 1e-9):.1f}x faster)")
print("the same vocab and merges:", _plain == _fast)

# %% [markdown]
# ## 7. What BPE learns from Shakespeare
#
# From here on the notebook uses the course's tokenizer, `lmcourse.bpe` (the same rules as yours,
# with an incremental trainer with a heap, and a cache of encoded pre-tokens that makes encoding
# fast; while this notebook is graded, or in a copy of the course without it, it is absent, and
# sections 7 and 8 skip their runs). One
# training run to the largest vocabulary gives every smaller one too: the first $k$
# merges of a run are exactly what training to $256 + k$ ids would give.
#
# The tokenizer can be saved as Hugging Face `tokenizers`' `tokenizer.json` (GPT-2's layout,
# `BPETokenizer.save`) or as tiktoken's rank file (`save_tiktoken`). The course's own tests load
# both files in those libraries and check that they encode the validation plays and random Unicode
# to the same ids as `lmcourse.bpe`; neither library is needed here.

# %%
if course_bpe:
    train_text, val_text = corpus.text("train"), corpus.text("val")
    if SIZES["train_chars"] is not None:  # tiny: a slice of the plays
        train_text, val_text = train_text[:SIZES["train_chars"]], val_text[:SIZES["train_chars"] // 4]
    _t = time.perf_counter()
    big_vocab, big_merges = course_bpe.train_bpe_incremental(train_text, SIZES["max_vocab"])
    print(f"trained to {len(big_vocab):,} ids on {len(train_text.encode()):,} bytes "
          f"in {time.perf_counter() - _t:.1f} s")
    path = data_dir() / "tokenizers" / f"08_bpe_{SIZES['max_vocab']}_{P.name}.json"
    if not is_autograding():
        path.parent.mkdir(parents=True, exist_ok=True)
        course_bpe.BPETokenizer(big_merges).save(path)
        print(f"saved as tokenizer.json to {path}; reloaded, the same merges:",
              course_bpe.BPETokenizer.load(path).merges == big_merges)


    def show(b):
        """A token's bytes as text (with a visible space), or as bytes where they are not whole characters."""
        try:
            return b.decode("utf-8").replace(" ", "␣").replace("\n", "\\n")
        except UnicodeDecodeError:
            return repr(b)


    print("the first 20 merges:", " ".join(show(big_vocab[256 + i]) for i in range(20)))
    longest = sorted(big_vocab, key=lambda i: (-len(big_vocab[i]), i))
    print("the 10 longest tokens that are not all whitespace:",
          " ".join([show(big_vocab[i]) for i in longest if big_vocab[i].strip()][:10]))
    tok = course_bpe.BPETokenizer(big_merges)
    for s in ["In 1599, Julius Caesar earned 23 wounds.", "Rosencrantz and Guildenstern", "O Romeo,\n\n    Romeo!"]:
        print(f"{s!r:>45} -> {' | '.join(show(tok.vocab[i]) for i in tok.encode(s))}")

# %% [markdown]
# The first merges are the most frequent pairs of English spelling (`␣t`, `he`, `␣the`, ...); the
# longest tokens are whole frequent words with their leading space, and the names of the plays'
# main characters, which appear in every speech heading. Numbers and rare names fall apart into
# short pieces, and whitespace runs become tokens of their own.
#
# The same sentence as characters (notebooks 02–07), words (notebook 01) and BPE tokens:

# %%
if course_bpe:
    sentence = "Why, man, he doth bestride the narrow world like a Colossus"
    print(f"characters ({len(sentence)}):", list(sentence)[:20], "...")
    print(f"words ({len(split_words(sentence))}):", split_words(sentence))
    print(f"BPE, {tok.vocab_size} ids ({len(tok.encode(sentence))}):",
          [show(tok.vocab[i]) for i in tok.encode(sentence)])

# %% [markdown]
# ### Bytes per token against the vocabulary size
#
# How much text does a token carry? Encode the validation plays (never seen in training) with the
# first $k$ merges, for vocabularies from 256 (bytes only: 1 byte per token) to the largest. Each
# doubling of $|V|$ buys less than the one before.

# %%
if course_bpe:
    sizes = [s for s in (256, 512, 1024, 2048, 4096, 8192) if s <= len(big_vocab)]
    n_val = len(val_text.encode())
    bytes_per_token = {}
    for size in sizes:
        bytes_per_token[size] = n_val / len(course_bpe.BPETokenizer(big_merges[:size - 256]).encode(val_text))
        print(f"|V| = {size:>5}: {bytes_per_token[size]:.3f} bytes per token")
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.plot(sizes, list(bytes_per_token.values()), "o-")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("vocabulary size |V|")
    ax.set_ylabel("bytes per token (validation plays)")
    ax.set_title(f"BPE on Shakespeare ({P.name} profile)")
    plt.show()

# %% [markdown]
# ## 8. The GPT on BPE tokens against characters, for the same compute time
#
# Does a subword vocabulary help a small model? Train notebook 05's GPT (the course's
# `lmcourse.nn.GPT`, same sizes from the profile) twice, for the **same compute time**: once on
# characters, once on BPE tokens of a vocabulary of `gpt_vocab` ids. On a CPU the budget is counted
# in seconds of CPU time, which other programs on a busy machine do not eat into (the runs then
# take longer on the clock but make the same number of steps); on a GPU it is wall-clock time. With
# the same `block_size`, a BPE window spans about three times as much text, and each step sees more
# of the plays; but the model must predict among many more tokens, and its embedding and output
# layer grow with $|V|$.
#
# The losses are not comparable as they are: a loss per character and a loss per token measure
# different things. The unit that makes any two tokenizations comparable is **bits per byte**: the
# total surprise on a text, in bits, divided by the number of bytes of that text,
# $$\text{bits per byte} = \frac{\sum_t -\log_2 p(w_t \mid w_{<t})}{\text{bytes of the text predicted}} .$$
# Shakespeare's text here is plain ASCII, so for characters bits per byte equal notebook 05's bits
# per character, and its ladder extends with one more rung.

# %%
if course_bpe:
    def compute_clock():
        """Seconds of compute so far: CPU time of this process on a CPU (a busy machine's other jobs
        do not count), wall-clock time after the queued kernels finish on a GPU."""
        if rt.device.type == "cuda":
            torch.cuda.synchronize()
            return time.perf_counter()
        if rt.device.type == "mps":
            torch.mps.synchronize()
            return time.perf_counter()
        return time.process_time()


    def step_seconds(model, ids, cfg, probe_steps=5):
        """Compute seconds per training step of a throw-away copy of model (one short run, no validation)."""
        probe = copy.deepcopy(model)
        short = dataclasses.replace(cfg, steps=probe_steps + 1, warmup_steps=0, eval_interval=10 ** 9, progress=False,
                                    quiet=True)
        train(probe, ids, None, short, stop_after=1)  # the first step includes one-off setup
        t = compute_clock()
        train(probe, ids, None, dataclasses.replace(short, steps=probe_steps))
        return (compute_clock() - t) / probe_steps


    def bits_per_byte(model, ids, token_bytes, block_size):
        """Total loss in bits over consecutive windows of ids, per byte of the predicted tokens."""
        n = (len(ids) - 1) // block_size * block_size
        x = ids[:n].view(-1, block_size).to(rt.device)
        y = ids[1:n + 1].view(-1, block_size).to(rt.device)
        model.eval()
        nats = 0.0
        with torch.no_grad():
            for i in range(0, len(x), 64):
                logits = model(x[i:i + 64])[0]
                nats += F.cross_entropy(logits.float().flatten(0, 1), y[i:i + 64].flatten(), reduction="sum").item()
        n_bytes = sum(token_bytes[i] for i in ids[1:n + 1].tolist())
        return nats / math.log(2) / n_bytes


    def train_for(tokenizer, token_bytes, budget_s, eval_text):
        """05's GPT trained on tokenizer's ids of the training plays for about budget_s seconds of compute."""
        train_ids = encode_text(train_text, tokenizer)
        torch.manual_seed(rt.seed)
        model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=P.block_size, n_layer=P.n_layer,
                              n_head=P.n_head, n_embd=P.n_embd)).to(rt.device)
        cfg = TrainConfig.from_profile(P, lr=1e-3 if P.name == "gpu" else 5e-3, weight_decay=0.1, seed=rt.seed,
                                       quiet=True)
        steps = max(2, int(budget_s / step_seconds(model, train_ids, cfg)))
        cfg = dataclasses.replace(cfg, steps=steps, warmup_steps=max(1, steps // 20))
        t = compute_clock()
        train(model, train_ids, None, cfg)  # no validation during the run: the budget goes to training steps
        seconds = compute_clock() - t
        bpb = bits_per_byte(model, encode_text(eval_text, tokenizer), token_bytes, P.block_size)
        return dict(steps=steps, seconds=seconds, bits_per_byte=bpb,
                    bytes_seen=steps * P.batch_size * P.block_size * len(train_text.encode()) / len(train_ids))


    eval_text = val_text[:P.eval_batches * P.batch_size * P.block_size + 1]  # 05's ladder text
    chars = CharTokenizer.from_text(corpus.text("train"))
    bpe_tok = course_bpe.BPETokenizer(big_merges[:SIZES["gpt_vocab"] - 256])
    runs = {
        "GPT, characters": train_for(chars, {i: len(chars.decode([i]).encode()) for i in range(chars.vocab_size)},
                                     SIZES["budget_s"], eval_text),
        f"GPT, BPE {bpe_tok.vocab_size}": train_for(bpe_tok, {i: len(b) for i, b in bpe_tok.vocab.items()},
                                                    SIZES["budget_s"], eval_text),
    }
    for name, r in runs.items():
        print(f"{name:<18} {r['steps']:>5} steps in {r['seconds']:5.1f} s of compute, "
              f"{r['bytes_seen'] / 1e6:5.2f} MB of text seen, {r['bits_per_byte']:.3f} bits per byte "
              f"on {len(eval_text):,} validation bytes")

# %% [markdown]
# Notebook 05's ladder, in bits per byte, with the two runs above as its last rungs (the first four
# figures are 05's, measured in its `cpu` profile on the same validation text; yours depend on the
# profile you ran):

# %%
if course_bpe:
    ladder = {"5-gram, Kneser-Ney (05, cpu)": 2.17, "RNN (05, cpu)": 2.57, "LSTM (05, cpu)": 2.51,
              "GPT (05, cpu)": 2.47}
    ladder.update({f"{name} (here, {P.name})": r["bits_per_byte"] for name, r in runs.items()})
    for name, v in ladder.items():
        print(f"  {name:<34} {v:.3f}")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.barh(list(ladder)[::-1], list(ladder.values())[::-1], color=["tab:orange"] * 2 + ["tab:blue"] * 4)
    ax.set_xlabel("validation bits per byte (lower is better)")
    ax.set_title("The ladder, in bits per byte")
    plt.show()

# %% [markdown]
# What the run shows. Measured once at the `cpu` profile, a minute of CPU time each on a 2-core machine
# busy with other jobs (the budget counts CPU time, so the load stretched the clock, not the steps):
# characters 367 steps, 2.94 bits per byte; BPE with 1,024 ids 307 steps (a step costs more: the output
# layer scores 1,024 ids instead of 85), 2.87 bits per byte, having seen twice the text (1.48 MB against
# 0.75 MB). Both are above notebook 05's GPT (2.47), which trained for 1,500 steps, four times this
# budget. BPE is ahead, by a little: per step it reads twice the text, and its frequent tokens are
# already whole words (`␣the`, `␣and`); but its 1,024 output classes are each seen less often, and a
# minute is not enough for the rare ones. Whether the gap grows with more steps is what a longer run
# tells you (raise `SIZES["budget_s"]` for your profile).
#
# In general, a subword vocabulary lets a fixed context and a fixed number of steps cover more
# text, which is why every large model uses one; the price is a larger embedding and output layer
# and many rare tokens each seen few times, which a small model trained briefly pays for. Which way
# the balance tips depends on the budget: that is why the comparison is made in bits per byte, on
# the same text, for the same compute time.

# %% [markdown]
# ## 9. Questions
#
# Answer each multiple-choice question by setting the variable to one letter, e.g.
# `answer_q1 = "A"`.
#
# **Q1.** Why does a byte-level BPE tokenizer never need an `<unk>` token?
#
# * A. Because its training text contained every word of the language.
# * B. Because every string is a sequence of UTF-8 bytes, and all 256 bytes are in the vocabulary
#   from the start, so any text can at least be written byte by byte.
# * C. Because unknown words are replaced by the most similar known token.
# * D. Because the pre-tokenizer removes the characters it does not know.

# %% solution="q1"
# Your answer, one letter: answer_q1 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q1 = "B"
### END SOLUTION

# %% tests="q1_tests" points=1
tests.check("q1")
### BEGIN HIDDEN TESTS
tests.grade("q1")
### END HIDDEN TESTS

# %% [markdown]
# **Q2.** With merges `[(a, b), (b, c)]` (so `ab` is id 256, `bc` id 257), what does the
# pre-token `"abc"` encode to?
#
# * A. `[97, 257]`: the pair that comes last in the text is merged first.
# * B. `[97, 98, 99]`: a pre-token of three bytes is never merged.
# * C. `[256, 257]`: both merges apply.
# * D. `[256, 99]`: `(a, b)` has the lower rank, so it is merged first, and then no pair has a merge.

# %% solution="q2"
# Your answer, one letter: answer_q2 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q2 = "D"
### END SOLUTION

# %% tests="q2_tests" points=1
tests.check("q2")
### BEGIN HIDDEN TESTS
tests.grade("q2")
### END HIDDEN TESTS

# %% [markdown]
# **Q3 (free text, graded by hand).** In three to five sentences: the vocabulary size of a BPE
# tokenizer trades the size of the model's embedding and output layers against the length of the
# sequences. Explain both sides with the figures of this notebook (bytes per token against $|V|$,
# and the two GPT runs), and say what you would expect of a much larger vocabulary, say 50,000 ids
# as in GPT-2, for the small model of section 8.

# %% [markdown] answer="q3_free_text" points=2
# ### BEGIN SOLUTION
# Each id costs two rows of $d$ numbers (the embedding $W^{\text{embed}}$ and the output layer, tied
# or not), and the softmax runs over all $|V|$ ids at every position, so a larger vocabulary makes
# the model bigger and each step dearer. In exchange each token carries more text: on the
# validation plays bytes per token rise from 1 at 256 ids to about 2.3 at 1,024 and about 3.2 at
# 8,192, so a window of `block_size` tokens covers more context and each step trains on more text.
# The returns shrink: each doubling of $|V|$ adds less than the one before, while the cost grows
# linearly. At 50,000 ids the small model would spend most of its parameters on the embedding and
# the head, most ids would be rare and seen only a few times in a few minutes of training, so I
# would expect worse bits per byte than at 1,024 for the same time, although a large model trained
# on much more text benefits from it.
# ### END SOLUTION

# %% [markdown]
# ## Wrap-up
#
# You wrote byte-level BPE: pair counts and merges, a trainer with a stated rule and tie-break that
# never merges across pre-tokens or into special tokens, an encoder that applies merges by rank, a
# decoder that survives invalid UTF-8, and an incremental trainer that gives the same merges much
# faster. The course's tests check the reference version of all this against tiktoken and Hugging
# Face `tokenizers` given the same merges. (The `tokenizers` library's own trainer breaks ties
# another way, so its merges agree with these only up to the first tie.)
#
# **Next (notebook 09):** the encoder–decoder transformer with cross-attention, the other
# architecture of the lectures.

# %%
print(f"whole notebook: {time.perf_counter() - _notebook_start:.0f} s in profile {P.name} on {rt.device} "
      f"with {rt.threads} CPU thread(s)")

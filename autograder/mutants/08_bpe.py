"""Typical student bugs for notebook 08 (byte-level BPE), and answers that game the rules. Each
must lose points, and cost only its own test cell."""

from lmcourse.authoring.mutants import Mutant, patch

MUTANTS = [
    # --- pair_counts
    Mutant("overlapping pairs counted once ('aaa' holds (a, a) once)", "pair_counts", patch(
        ('''
for pair in zip(ids, ids[1:]):
    counts[pair] = counts.get(pair, 0) + 1
''', '''
i = 0
while i + 1 < len(ids):
    pair = (ids[i], ids[i + 1])
    counts[pair] = counts.get(pair, 0) + 1
    i += 2 if ids[i] == ids[i + 1] else 1
'''))),
    Mutant("each pair counted once (a set of pairs)", "pair_counts", patch(
        ("for pair in zip(ids, ids[1:]):", "for pair in set(zip(ids, ids[1:])):"))),
    Mutant("the last pair left out (off by one)", "pair_counts", patch(
        ("for pair in zip(ids, ids[1:]):", "for pair in zip(ids, ids[1:-1]):"))),
    Mutant("the first pair left out (off by one)", "pair_counts", patch(
        ("for pair in zip(ids, ids[1:]):", "for pair in zip(ids[1:], ids[2:]):"))),
    Mutant("pairs keyed as strings, not tuples", "pair_counts", patch(
        ("counts[pair] = counts.get(pair, 0) + 1", "counts[str(pair)] = counts.get(str(pair), 0) + 1"))),
    # --- merge
    Mutant("merge lets occurrences overlap ([7, 7, 7] -> [256, 256])", "merge", patch(
        ('''
out.append(new_id)
i += 2
''', '''
out.append(new_id)
i += 1
'''))),
    Mutant("merge replaces only the first occurrence", "merge", patch(
        ("if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:",
         "if new_id not in out and i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:"))),
    Mutant("merge drops the last id when it starts no pair", "merge", patch(
        ("while i < len(ids):", "while i < len(ids) - 1:"))),
    Mutant("merge reads ids[i + 1] past the end (IndexError)", "merge", patch(
        ("if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:",
         "if ids[i] == pair[0] and ids[i + 1] == pair[1]:"))),
    Mutant("merge returns a tuple", "merge", patch(("return out", "return tuple(out)"))),
    # in full: it rewrites most of the cell
    Mutant("merge changes the list in place", "merge", '''
def merge(ids, pair, new_id):
    i = 0
    while i < len(ids) - 1:
        if ids[i] == pair[0] and ids[i + 1] == pair[1]:
            ids[i:i + 2] = [new_id]
        i += 1
    return ids
'''),
    Mutant("merge matches the pair in either order", "merge", patch(
        ("if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:",
         "if i + 1 < len(ids) and {ids[i], ids[i + 1]} == set(pair):"))),
    # --- train_bpe
    Mutant("ties broken the other way (the smallest bytes win)", "train_bpe", patch(
        ("best = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))",
         "best = min(counts, key=lambda p: (-counts[p], vocab[p[0]], vocab[p[1]]))"))),
    Mutant("ties broken by the first pair seen", "train_bpe", patch(
        ("best = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))",
         "best = max(counts, key=counts.get)"))),
    Mutant("ties broken by the ids, not the bytes", "train_bpe", patch(
        ("best = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))",
         "best = max(counts, key=lambda p: (counts[p], p))"))),
    Mutant("ties broken by the joined bytes vocab[a] + vocab[b]", "train_bpe", patch(
        ("best = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))",
         "best = max(counts, key=lambda p: (counts[p], vocab[p[0]] + vocab[p[1]]))"))),
    Mutant("training stops when the best pair occurs only once", "train_bpe", patch(
        ("if not counts:", "if not counts or max(counts.values()) < 2:"))),
    Mutant("special tokens at the end of vocab_size, not after the last merge", "train_bpe", patch(
        ('''
for s in special_tokens:
    vocab[len(vocab)] = s.encode("utf-8")
''', '''
for j, s in enumerate(special_tokens):
    vocab[vocab_size - len(special_tokens) + j] = s.encode("utf-8")
'''))),
    Mutant("special tokens numbered longest first, not in the order given", "train_bpe", patch(
        ('''
for s in special_tokens:
    vocab[len(vocab)] = s.encode("utf-8")
''', '''
for s in sorted(special_tokens, key=len, reverse=True):
    vocab[len(vocab)] = s.encode("utf-8")
'''))),
    Mutant("special tokens removed with str.replace (their neighbours joined into one pre-token)", "train_bpe", patch(
        ('''
for piece, is_special in split_specials(text, special_tokens):
    if not is_special:
        words.update(pretokenize(piece))
''', '''
for s in special_tokens:
    text = text.replace(s, "")
words.update(pretokenize(text))
'''))),
    Mutant("merging across pre-tokens (the whole text is one sequence)", "train_bpe", patch(
        ("words.update(pretokenize(piece))", "words.update([piece])"))),
    Mutant("special tokens not cut out (their text is counted)", "train_bpe", patch(
        ('''
for piece, is_special in split_specials(text, special_tokens):
    if not is_special:
        words.update(pretokenize(piece))
''', "words.update(pretokenize(text))"))),
    Mutant("pre-tokens counted once, without their frequencies", "train_bpe", patch(
        ("counts[pair] = counts.get(pair, 0) + c * freq", "counts[pair] = counts.get(pair, 0) + c"))),
    Mutant("vocab_size does not count the special tokens (off by one id per special)", "train_bpe", patch(
        ("for new_id in range(256, vocab_size - len(special_tokens)):", "for new_id in range(256, vocab_size):"))),
    Mutant("off-by-one new ids (merge i makes id 257 + i)", "train_bpe", patch(
        ("for new_id in range(256, vocab_size - len(special_tokens)):",
         "for new_id in range(257, vocab_size - len(special_tokens) + 1):"))),
    Mutant("no early stop: max() of an empty dict", "train_bpe", patch(
        ('''
if not counts:
    break
''', ""))),
    Mutant("vocab entry of a merge with its halves swapped", "train_bpe", patch(
        ("vocab[new_id] = vocab[best[0]] + vocab[best[1]]", "vocab[new_id] = vocab[best[1]] + vocab[best[0]]"))),
    Mutant("special tokens left out of the vocab", "train_bpe", patch(
        ('''
for s in special_tokens:
    vocab[len(vocab)] = s.encode("utf-8")
''', ""))),
    Mutant("pre-tokens as code points, not UTF-8 bytes", "train_bpe", patch(
        ('tokens = [list(w.encode("utf-8")) for w in words]', "tokens = [[ord(ch) % 256 for ch in w] for w in words]")
    )),
    # --- encode
    # in full: it rewrites the loop of the cell
    Mutant("merges applied left to right by first occurrence instead of by rank", "encode", patch(
        ('''
while len(ids) >= 2:
    pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, math.inf))
    if pair not in ranks:
        break
    ids = merge(ids, pair, ranks[pair])
''', '''
while True:
    pair = next((p for p in zip(ids, ids[1:]) if p in ranks), None)
    if pair is None:
        break
    ids = merge(ids, pair, ranks[pair])
'''))),
    Mutant("encode merges the latest-learned pair first", "encode", patch(
        ("pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, math.inf))",
         "pair = max(zip(ids, ids[1:]), key=lambda p: ranks.get(p, -1))"))),
    Mutant("encode merges across pre-tokens", "encode", patch(
        ("for pretoken in pretokenize(piece):", "for pretoken in [piece]:"))),
    Mutant("special tokens split (encoded as ordinary text)", "encode", patch(
        ("for piece, is_special in split_specials(text, special_tokens):",
         "for piece, is_special in split_specials(text, ()):"))),
    Mutant("special token ids off by one", "encode", patch(
        ("special_ids = {s: 256 + len(merges) + j for j, s in enumerate(special_tokens)}",
         "special_ids = {s: 257 + len(merges) + j for j, s in enumerate(special_tokens)}"))),
    Mutant("encode numbers the special tokens longest first, not in the order given", "encode", patch(
        ("special_ids = {s: 256 + len(merges) + j for j, s in enumerate(special_tokens)}",
         "special_ids = {s: 256 + len(merges) + j\n"
         "               for j, s in enumerate(sorted(special_tokens, key=len, reverse=True))}"))),
    Mutant("encode stops after one merge per pre-token", "encode", patch(
        ("ids = merge(ids, pair, ranks[pair])", '''
ids = merge(ids, pair, ranks[pair])
break
'''))),
    Mutant("encode starts from code points, not UTF-8 bytes", "encode", patch(
        ('ids = list(pretoken.encode("utf-8"))', "ids = [ord(ch) for ch in pretoken]"))),
    Mutant("special token ids counted from 0, not 256 + len(merges)", "encode", patch(
        ("special_ids = {s: 256 + len(merges) + j for j, s in enumerate(special_tokens)}",
         "special_ids = {s: len(merges) + j for j, s in enumerate(special_tokens)}"))),
    Mutant("encode returns a tuple", "encode", patch(("return out", "return tuple(out)"))),
    Mutant("encode with a pre-tokenizer of its own (ASCII letters and digits only)", "encode", patch(
        ("for pretoken in pretokenize(piece):",
         r"""for pretoken in __import__("re").findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+", piece):"""))),
    # in full (08 red team, finding E): tiktoken's Rust core built inside the graded call from the merges
    Mutant("tiktoken's compiled CoreBPE called inside the graded call (gaming)", "encode", '''
import tiktoken._tiktoken as _tk


def encode(text, merges, special_tokens=()):
    vocab = {i: bytes([i]) for i in range(256)}
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = vocab[a] + vocab[b]
    ranks = {v: k for k, v in vocab.items()}
    specials = {s: 256 + len(merges) + j for j, s in enumerate(special_tokens)}
    core = _tk.CoreBPE(ranks, specials, GPT2_PATTERN)
    return list(core.encode(text, set(special_tokens)))
'''),
    # --- decode
    Mutant('decode with errors="strict"', "decode", patch(
        ('return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")',
         'return b"".join(vocab[i] for i in ids).decode("utf-8")'))),
    Mutant('decode with errors="ignore"', "decode", patch(
        ('return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")',
         'return b"".join(vocab[i] for i in ids).decode("utf-8", errors="ignore")'))),
    Mutant("decode each token on its own", "decode", patch(
        ('return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")',
         'return "".join(vocab[i].decode("utf-8", errors="replace") for i in ids)'))),
    Mutant("decode as Latin-1", "decode", patch(
        ('return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")',
         'return b"".join(vocab[i] for i in ids).decode("latin-1")'))),
    Mutant("decode returns the bytes, not a str", "decode", patch(
        ('return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")',
         'return b"".join(vocab[i] for i in ids)'))),
    # --- train_bpe_incremental
    Mutant("incremental: pairs whose count fell to 0 stay (and get chosen)", "train_bpe_incremental", patch(
        ('''
counts[pair] -= c * freqs[w]
if counts[pair] == 0:
    del counts[pair]
''', "counts[pair] -= c * freqs[w]"))),
    Mutant("incremental: new pairs not added to the index", "train_bpe_incremental", patch(
        ('''
for pair, c in pair_counts(new).items():
    counts[pair] = counts.get(pair, 0) + c * freqs[w]
    where.setdefault(pair, set()).add(w)
''', '''
for pair, c in pair_counts(new).items():
    counts[pair] = counts.get(pair, 0) + c * freqs[w]
'''))),
    Mutant("incremental: the new pairs counted without the frequency", "train_bpe_incremental", patch(
        ('''
for pair, c in pair_counts(new).items():
    counts[pair] = counts.get(pair, 0) + c * freqs[w]
''', '''
for pair, c in pair_counts(new).items():
    counts[pair] = counts.get(pair, 0) + c
'''))),
    Mutant("incremental: only the merged pair's count removed, not its neighbours'", "train_bpe_incremental", patch(
        ('''
for pair, c in pair_counts(old).items():
    counts[pair] -= c * freqs[w]
    if counts[pair] == 0:
        del counts[pair]
''', '''
counts.pop(best, None)
'''))),
    Mutant("incremental: ties broken by the first pair seen", "train_bpe_incremental", patch(
        ("best = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))",
         "best = max(counts, key=counts.get)"))),
    Mutant("incremental: no early stop, max() of an empty dict (an empty text has no pair)", "train_bpe_incremental",
           patch(('''
if not counts:
    break
best = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))
''', '''
best = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))
'''))),
    # in full: the shortcut a student may try
    Mutant("incremental trainer that calls train_bpe", "train_bpe_incremental", '''
def train_bpe_incremental(text, vocab_size, special_tokens=()):
    return train_bpe(text, vocab_size, special_tokens)
'''),
    # --- gaming: the reference's work done where the rules might not look
    # in full: the reference on another thread
    Mutant("the reference trainer run on a thread (gaming)", "train_bpe", '''
import threading


def train_bpe(text, vocab_size, special_tokens=()):
    import lmcourse.bpe as _course_bpe   # the graded kernel withholds it: the import fails in the call

    out = []
    t = threading.Thread(target=lambda: out.append(_course_bpe.train_bpe(text, vocab_size, special_tokens)))
    t.start()
    t.join()
    return out[0]
'''),
    # in full: a copy of the reference made from its source, shifted one line
    Mutant("exec(inspect.getsource(lmcourse.bpe)) shifted one line (gaming)", "train_bpe", '''
import inspect


def train_bpe(text, vocab_size, special_tokens=()):
    import lmcourse.bpe as _course_bpe   # the graded kernel withholds it: the import fails in the call

    ns = {}
    exec(compile("\\n" + inspect.getsource(_course_bpe), "<copy>", "exec"), ns)
    return ns["train_bpe"](text, vocab_size, special_tokens)
'''),
    # in full: a test cell's helper (its reference tokenizer) called by name
    Mutant("the test cell's helper _tok called by name (gaming)", "decode", '''
def decode(ids, vocab):
    return _tok.decode(ids)
'''),
    # in full: tiktoken does the work, built from the merges (imported at the top of the cell)
    Mutant("tiktoken inside an answer (gaming)", "encode", '''
import tiktoken


def encode(text, merges, special_tokens=()):
    vocab = {i: bytes([i]) for i in range(256)}
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = vocab[a] + vocab[b]
    enc = tiktoken.Encoding("mine", pat_str=GPT2_PATTERN, mergeable_ranks={b: i for i, b in vocab.items()},
                            special_tokens={s: 256 + len(merges) + j for j, s in enumerate(special_tokens)})
    return enc.encode(text, allowed_special="all")
'''),
    # in full: tiktoken imported and used inside the graded call
    Mutant("tiktoken imported inside the graded call (gaming)", "decode", '''
def decode(ids, vocab):
    import tiktoken

    enc = tiktoken.Encoding("mine", pat_str=GPT2_PATTERN, mergeable_ranks={b: i for i, b in vocab.items()},
                            special_tokens={})
    return enc.decode(list(ids))
'''),
    # in full (08 red team): an empty dict subclass whose metaclass makes every type check succeed, for the checks
    # that used to test `type(x) in (...)` after the call; values are now read by exact type, so it is refused
    Mutant("pair_counts returns a dict subclass whose class compares equal to dict (gaming)", "pair_counts", '''
class _Meta(type):
    def __eq__(cls, other):
        return True

    __hash__ = type.__hash__


class _Counts(dict, metaclass=_Meta):
    def __eq__(self, other):
        return True

    __hash__ = None


def pair_counts(ids):
    return _Counts()
'''),
    # gaming: on the hidden test's largest case, return the expected counts read from the notebook's globals (the
    # test cell used to bind them, as _want, before the graded call; now they are made after it, so this loses points)
    Mutant("returns the hidden test's expected pair counts from globals()", "pair_counts", patch(
        ("counts = {}", """
if len(ids) == 60:
    return dict(globals()["_want"])
counts = {}
"""))),
]

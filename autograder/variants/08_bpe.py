"""Notebook 08 (byte-level BPE): its mutants and its alternatives.

``MUTANTS``: typical student bugs, and answers that game the rules; each must lose points, and cost
only its own test cell.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, patch

# the start of an encode that hands the merging to a tokenizer library: the vocabulary and ranks from the merges
_RANKS_FROM_MERGES = '''def encode(text, merges, special_tokens=()):
    vocab = {i: bytes([i]) for i in range(256)}
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = vocab[a] + vocab[b]
    ranks = {v: k for k, v in vocab.items()}
'''

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


''' + _RANKS_FROM_MERGES + '''    specials = {s: 256 + len(merges) + j for j, s in enumerate(special_tokens)}
    core = _tk.CoreBPE(ranks, specials, GPT2_PATTERN)
    return list(core.encode(text, set(special_tokens)))
'''),
    # in full (twelfth red team): tiktoken's pure-Python teaching BPE (tiktoken._educational) does the merging
    Mutant("tiktoken's pure-Python _educational.bpe_encode does the merging (gaming)", "encode", '''
import tiktoken._educational as _te


''' + _RANKS_FROM_MERGES + '''    ids = []
    for piece, special in split_specials(text, special_tokens):
        if special:
            ids.append(256 + len(merges) + list(special_tokens).index(piece))
            continue
        for pre in pretokenize(piece):
            ids += _te.bpe_encode(ranks, pre.encode("utf-8"), visualise=None)
    return ids
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

ALTERNATIVES = [
    # --- pair_counts
    Alternative("pair_counts with a Counter over zip", "pair_counts", '''
def pair_counts(ids):
    return Counter(zip(ids, ids[1:]))
'''),
    Alternative("pair_counts with an index loop and a defaultdict", "pair_counts", '''
from collections import defaultdict


def pair_counts(ids):
    counts = defaultdict(int)
    for i in range(len(ids) - 1):
        counts[ids[i], ids[i + 1]] += 1
    return dict(counts)
'''),
    # --- merge
    Alternative("merge with a for loop that skips the second half of a merged pair", "merge", '''
def merge(ids, pair, new_id):
    out = []
    skip = False
    for i, x in enumerate(ids):
        if skip:
            skip = False
            continue
        if i + 1 < len(ids) and (x, ids[i + 1]) == pair:
            out.append(new_id)
            skip = True
        else:
            out.append(x)
    return out
'''),
    Alternative("merge on a copy, replacing slices", "merge", '''
def merge(ids, pair, new_id):
    out = list(ids)
    i = 0
    while i < len(out) - 1:
        if out[i] == pair[0] and out[i + 1] == pair[1]:
            out[i:i + 2] = [new_id]
        i += 1
    return out
'''),
    # --- train_bpe
    Alternative("train_bpe over a dict {tuple of ids: frequency}, ties by sorting", "train_bpe", '''
def train_bpe(text, vocab_size, special_tokens=()):
    freq = {}
    for piece, is_special in split_specials(text, special_tokens):
        if is_special:
            continue
        for p in pretokenize(piece):
            key = tuple(p.encode("utf-8"))
            freq[key] = freq.get(key, 0) + 1
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    next_id = 256
    while next_id < vocab_size - len(special_tokens):
        counts = Counter()
        for word, f in freq.items():
            for pair, c in pair_counts(list(word)).items():
                counts[pair] += c * f
        if not counts:
            break
        ranked = sorted(counts.items(), key=lambda kv: (kv[1], vocab[kv[0][0]], vocab[kv[0][1]]), reverse=True)
        best = ranked[0][0]
        new_freq = {}
        for word, f in freq.items():
            key = tuple(merge(list(word), best, next_id))
            new_freq[key] = new_freq.get(key, 0) + f
        freq = new_freq
        vocab[next_id] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
        next_id += 1
    for j, s in enumerate(special_tokens):
        vocab[next_id + j] = s.encode()
    return vocab, merges
'''),
    Alternative("train_bpe over bytes objects with a manual best-pair scan", "train_bpe", '''
def train_bpe(text, vocab_size, special_tokens=()):
    pieces = [p for p, special in split_specials(text, special_tokens) if not special]
    words = Counter(t.encode() for p in pieces for t in pretokenize(p))
    seqs = {w: list(w) for w in words}
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    n_merges = vocab_size - 256 - len(special_tokens)
    for k in range(max(n_merges, 0)):
        counts = {}
        for w, seq in seqs.items():
            for a, b in zip(seq, seq[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + words[w]
        best, best_key = None, None
        for pair, c in counts.items():
            key = (c, vocab[pair[0]], vocab[pair[1]])
            if best_key is None or key > best_key:
                best, best_key = pair, key
        if best is None:
            break
        new_id = 256 + k
        for w in seqs:
            seqs[w] = merge(seqs[w], best, new_id)
        vocab[new_id] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
    start = len(vocab)
    vocab.update({start + j: s.encode("utf-8") for j, s in enumerate(special_tokens)})
    return vocab, merges
'''),
    # --- encode
    Alternative("encode that applies every merge in rank order (the same ids)", "encode", '''
def encode(text, merges, special_tokens=()):
    specials = {s: 256 + len(merges) + j for j, s in enumerate(special_tokens)}
    ids = []
    for piece, is_special in split_specials(text, special_tokens):
        if is_special:
            ids.append(specials[piece])
            continue
        for pretoken in pretokenize(piece):
            seq = list(pretoken.encode("utf-8"))
            for rank, pair in enumerate(merges):
                if len(seq) < 2:
                    break
                seq = merge(seq, pair, 256 + rank)
            ids += seq
    return ids
'''),
    Alternative("encode with a rank scan by index and a cache of pre-tokens", "encode", '''
def encode(text, merges, special_tokens=()):
    rank = {tuple(p): i for i, p in enumerate(merges)}
    cache = {}
    out = []
    for piece, is_special in split_specials(text, list(special_tokens)):
        if is_special:
            out.append(256 + len(merges) + list(special_tokens).index(piece))
            continue
        for pretoken in pretokenize(piece):
            if pretoken not in cache:
                seq = list(pretoken.encode())
                while True:
                    best = None
                    for i in range(len(seq) - 1):
                        r = rank.get((seq[i], seq[i + 1]))
                        if r is not None and (best is None or r < best):
                            best = r
                    if best is None:
                        break
                    seq = merge(seq, merges[best], 256 + best)
                cache[pretoken] = seq
            out.extend(cache[pretoken])
    return out
'''),
    # --- decode
    Alternative("decode with a bytearray", "decode", '''
def decode(ids, vocab):
    buf = bytearray()
    for i in ids:
        buf += vocab[i]
    return bytes(buf).decode("utf-8", "replace")
'''),
    Alternative("decode through str(bytes, ...)", "decode", '''
def decode(ids, vocab):
    return str(b"".join([vocab[int(i)] for i in ids]), encoding="utf-8", errors="replace")
'''),
    # --- train_bpe_incremental
    Alternative("incremental trainer with a heap and lazy deletion", "train_bpe_incremental", '''
import heapq


class _Desc:
    """Orders bytes keys in reverse, so the min-heap pops the greatest bytes first."""

    def __init__(self, key):
        self.key = key

    def __lt__(self, other):
        return self.key > other.key

    def __eq__(self, other):
        return self.key == other.key


def train_bpe_incremental(text, vocab_size, special_tokens=()):
    words = Counter()
    for piece, is_special in split_specials(text, special_tokens):
        if not is_special:
            words.update(p.encode("utf-8") for p in pretokenize(piece))
    seqs = [list(w) for w in words]
    freqs = list(words.values())
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    counts = Counter()
    where = {}
    for k, seq in enumerate(seqs):
        for pair in zip(seq, seq[1:]):
            counts[pair] += freqs[k]
            where.setdefault(pair, set()).add(k)

    def entry(pair):
        return (-counts[pair], _Desc((vocab[pair[0]], vocab[pair[1]])), pair)

    heap = [entry(p) for p in counts]
    heapq.heapify(heap)
    for new_id in range(256, vocab_size - len(special_tokens)):
        best = None
        while heap:
            neg, _, pair = heapq.heappop(heap)
            if counts.get(pair, 0) > 0 and counts[pair] == -neg:
                best = pair
                break
        if best is None:
            break
        vocab[new_id] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
        changed = set()
        for k in where.pop(best, ()):
            old = seqs[k]
            new = merge(old, best, new_id)
            if new == old:
                continue
            for pair in zip(old, old[1:]):
                counts[pair] -= freqs[k]
                changed.add(pair)
            for pair in zip(new, new[1:]):
                counts[pair] += freqs[k]
                changed.add(pair)
                where.setdefault(pair, set()).add(k)
            seqs[k] = new
        for pair in changed:
            if counts[pair] > 0:
                heapq.heappush(heap, entry(pair))
            else:
                counts.pop(pair, None)
    n = len(vocab)
    for j, s in enumerate(special_tokens):
        vocab[n + j] = s.encode("utf-8")
    return vocab, merges
'''),
    Alternative("incremental trainer that scans the words for the best pair (no index)", "train_bpe_incremental", '''
def train_bpe_incremental(text, vocab_size, special_tokens=()):
    words = Counter()
    for piece, is_special in split_specials(text, special_tokens):
        if not is_special:
            words.update(pretokenize(piece))
    seqs = {w: list(w.encode("utf-8")) for w in words}
    counts = Counter()
    for w, seq in seqs.items():
        for pair, c in pair_counts(seq).items():
            counts[pair] += c * words[w]
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    new_id = 256
    while new_id < vocab_size - len(special_tokens):
        live = [p for p, c in counts.items() if c > 0]
        if not live:
            break
        best = max(live, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))
        for w, seq in seqs.items():
            if len(seq) < 2 or best[0] not in seq:
                continue
            new = merge(seq, best, new_id)
            if len(new) != len(seq):
                counts.subtract({p: c * words[w] for p, c in pair_counts(seq).items()})
                counts.update({p: c * words[w] for p, c in pair_counts(new).items()})
                seqs[w] = new
        vocab[new_id] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
        new_id += 1
    for s in special_tokens:
        vocab[new_id] = s.encode("utf-8")
        new_id += 1
    return vocab, merges
'''),
    # --- answers of the 08 red team's strong students (strong_a, strong_b, strong_c)
    Alternative("pair_counts with a Counter over itertools.pairwise (red team strong_a)", "pair_counts", '''
from collections import Counter
from itertools import pairwise


def pair_counts(ids):
    """Counter over itertools.pairwise."""
    return Counter(pairwise(ids))
'''),
    Alternative("pair_counts with an index loop over len(ids) (red team strong_b)", "pair_counts", '''
def pair_counts(ids):
    out = {}
    n = len(ids)
    i = 0
    while i < n - 1:
        key = (ids[i], ids[i + 1])
        out[key] = out.get(key, 0) + 1
        i += 1
    return out
'''),
    Alternative("pair_counts with a defaultdict (red team strong_c)", "pair_counts", '''
from collections import defaultdict


def pair_counts(ids):
    d = defaultdict(int)
    for a, b in zip(ids[:-1], ids[1:]):
        d[(a, b)] += 1
    return d
'''),
    Alternative("merge skipping with next() on a range iterator (red team strong_a)", "merge", '''
def merge(ids, pair, new_id):
    a, b = pair
    out = []
    it = iter(range(len(ids)))
    for i in it:
        if ids[i] == a and i + 1 < len(ids) and ids[i + 1] == b:
            out.append(new_id)
            next(it, None)
        else:
            out.append(ids[i])
    return out
'''),
    Alternative("merge on a copy of ids (red team strong_b)", "merge", '''
def merge(ids, pair, new_id):
    ids = list(ids)
    res = []
    while ids:
        if len(ids) >= 2 and (ids[0], ids[1]) == tuple(pair):
            res.append(new_id)
            del ids[:2]
        else:
            res.append(ids.pop(0))
    return res
'''),
    Alternative("merge over zip(ids, ids[1:] + [None]) with a skip flag (red team strong_c)", "merge", '''
def merge(ids, pair, new_id):
    out, skip = [], False
    for x, y in zip(ids, list(ids[1:]) + [None]):
        if skip:
            skip = False
            continue
        if y is not None and x == pair[0] and y == pair[1]:
            out.append(new_id)
            skip = True
        else:
            out.append(x)
    return out
'''),
    Alternative("train_bpe over a Counter of byte tuples, rebuilt after each merge (red team strong_a)",
                "train_bpe", '''
from collections import Counter


def train_bpe(text, vocab_size, special_tokens=()):
    freq = Counter()
    for piece, special in split_specials(text, special_tokens):
        if not special:
            freq.update(tuple(t.encode("utf-8")) for t in pretokenize(piece))
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    target = vocab_size - len(special_tokens)
    while len(vocab) < target:
        counts = Counter()
        for word, f in freq.items():
            for p, c in pair_counts(list(word)).items():
                counts[p] += c * f
        if not counts:
            break
        top = max(counts.values())
        best = max((p for p, c in counts.items() if c == top), key=lambda p: (vocab[p[0]], vocab[p[1]]))
        new_id = len(vocab)
        new_freq = Counter()
        for word, f in freq.items():
            new_freq[tuple(merge(list(word), best, new_id))] += f
        freq = new_freq
        vocab[new_id] = vocab[best[0]] + vocab[best[1]]
        merges.append(tuple(best))
    base = len(vocab)
    for j, s in enumerate(special_tokens):
        vocab[base + j] = s.encode("utf-8")
    return vocab, merges
'''),
    Alternative("train_bpe over a dict of words (red team strong_b)", "train_bpe", '''
def train_bpe(text, vocab_size, special_tokens=()):
    special_tokens = list(special_tokens)
    words = {}
    for piece, sp in split_specials(text, special_tokens):
        if sp:
            continue
        for w in pretokenize(piece):
            words[w] = words.get(w, 0) + 1
    seqs = {w: list(w.encode("utf-8")) for w in words}
    vocab = {b: bytes([b]) for b in range(256)}
    merges = []
    n_merges = vocab_size - 256 - len(special_tokens)
    for k in range(n_merges):
        counts = {}
        for w, s in seqs.items():
            for p, c in pair_counts(s).items():
                counts[p] = counts.get(p, 0) + c * words[w]
        if not counts:
            break
        best = sorted(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]), reverse=True)[0]
        nid = 256 + k
        seqs = {w: merge(s, best, nid) for w, s in seqs.items()}
        vocab[nid] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
    nxt = 256 + len(merges)
    for s in special_tokens:
        vocab[nxt] = s.encode("utf-8")
        nxt += 1
    return vocab, merges
'''),
    Alternative("train_bpe with its own split of the specials and a vocab list (red team strong_c)", "train_bpe", '''
import re as _re

import regex as _regex

_PAT = _regex.compile(GPT2_PATTERN)


def _pieces(text, special_tokens):
    if not special_tokens:
        return [text]
    alt = "|".join(_re.escape(s) for s in sorted(special_tokens, key=len, reverse=True))
    return [p for p in _re.split(alt, text) if p]


def train_bpe(text, vocab_size, special_tokens=()):
    table = {}
    for piece in _pieces(text, special_tokens):
        for m in _PAT.finditer(piece):
            key = m.group().encode("utf-8")
            table[key] = table.get(key, 0) + 1
    toks = [[list(k), f] for k, f in table.items()]
    vocab = [bytes([i]) for i in range(256)]
    merges = []
    while len(vocab) + len(special_tokens) < vocab_size:
        counts = {}
        for seq, f in toks:
            for p, c in pair_counts(seq).items():
                counts[p] = counts.get(p, 0) + c * f
        best, key = None, None
        for p, c in counts.items():
            k = (c, vocab[p[0]], vocab[p[1]])
            if key is None or k > key:
                best, key = p, k
        if best is None:
            break
        for t in toks:
            t[0] = merge(t[0], best, len(vocab))
        merges.append(best)
        vocab.append(vocab[best[0]] + vocab[best[1]])
    vocab += [s.encode("utf-8") for s in special_tokens]
    return dict(enumerate(vocab)), merges
'''),
    Alternative("encode with a cached per-pre-token encoder (red team strong_a)", "encode", '''
import functools


def encode(text, merges, special_tokens=()):
    rank = {}
    for i, p in enumerate(merges):
        rank.setdefault(tuple(p), i)
    specials = {s: 256 + len(merges) + j for j, s in enumerate(special_tokens)}

    @functools.lru_cache(maxsize=None)
    def one(pretoken):
        seq = list(pretoken.encode("utf-8"))
        while len(seq) > 1:
            ranked = [(rank[p], p) for p in zip(seq, seq[1:]) if p in rank]
            if not ranked:
                break
            r, p = min(ranked)
            seq = merge(seq, p, 256 + r)
        return tuple(seq)

    out = []
    for piece, special in split_specials(text, list(special_tokens)):
        if special:
            out.append(specials[piece])
        else:
            for t in pretokenize(piece):
                out.extend(one(t))
    return out
'''),
    Alternative("encode applying each merge in rank order to all distinct pre-tokens (red team strong_b)", "encode", '''
def encode(text, merges, special_tokens=()):
    # every distinct pre-token, then each merge applied in rank order to all of them at once
    special_tokens = list(special_tokens)
    pieces = split_specials(text, special_tokens)
    pretoks = []
    for piece, sp in pieces:
        if sp:
            pretoks.append((True, piece))
        else:
            pretoks += [(False, t) for t in pretokenize(piece)]
    seqs = {t: list(t.encode("utf-8")) for sp, t in pretoks if not sp}
    live = {t for t, s in seqs.items() if len(s) > 1}
    for r, pair in enumerate(merges):
        if not live:
            break
        done = set()
        for t in live:
            s = seqs[t]
            if pair[0] in s:
                s = merge(s, pair, 256 + r)
                seqs[t] = s
            if len(s) < 2:
                done.add(t)
        live -= done
    out = []
    for sp, t in pretoks:
        if sp:
            out.append(256 + len(merges) + special_tokens.index(t))
        else:
            out += seqs[t]
    return out
'''),
    Alternative("encode with a heap (red team strong_c)", "encode", '''
import heapq


def encode(text, merges, special_tokens=()):
    rank = {p: i for i, p in reversed(list(enumerate(merges)))}
    ids = []
    alternation = "|".join(_re.escape(s) for s in sorted(special_tokens, key=len, reverse=True))
    for piece in _regex.split("(" + alternation + ")", text) if special_tokens else [text]:
        if not piece:
            continue
        if piece in special_tokens:
            ids.append(256 + len(merges) + list(special_tokens).index(piece))
            continue
        for m in _PAT.finditer(piece):
            seq = list(m.group().encode("utf-8"))
            while True:
                heap = [(rank[p], p) for p in zip(seq, seq[1:]) if p in rank]
                if not heap:
                    break
                r, p = heapq.nsmallest(1, heap)[0]
                seq = merge(seq, p, 256 + r)
            ids.extend(seq)
    return ids
'''),
    Alternative("decode through map(vocab.__getitem__) (red team strong_a)", "decode", '''
def decode(ids, vocab):
    return bytes().join(map(vocab.__getitem__, ids)).decode(errors="replace")
'''),
    Alternative("decode with an incremental codecs decoder (red team strong_b)", "decode", '''
import codecs


def decode(ids, vocab):
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    parts = [dec.decode(vocab[i]) for i in ids]
    parts.append(dec.decode(b"", final=True))
    return "".join(parts)
'''),
    Alternative("decode into a growing bytes buffer (red team strong_c)", "decode", '''
def decode(ids, vocab):
    buf = b""
    for i in ids:
        buf = buf + vocab[i]
    return str(buf, "utf-8", "replace")
'''),
    Alternative("incremental trainer with a heap and a defaultdict index (red team strong_a)",
                "train_bpe_incremental", '''
import heapq
from collections import defaultdict


class _Rev:
    __slots__ = ("b",)

    def __init__(self, b):
        self.b = b

    def __lt__(self, o):
        return self.b > o.b

    def __eq__(self, o):
        return self.b == o.b


def train_bpe_incremental(text, vocab_size, special_tokens=()):
    freq = defaultdict(int)
    for piece, special in split_specials(text, special_tokens):
        if not special:
            for t in pretokenize(piece):
                freq[t] += 1
    words = [list(w.encode("utf-8")) for w in freq]
    fs = list(freq.values())
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    counts = defaultdict(int)
    index = defaultdict(set)
    for k, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            counts[a, b] += fs[k]
            index[a, b].add(k)
    heap = [(-c, _Rev(vocab[p[0]]), _Rev(vocab[p[1]]), p) for p, c in counts.items()]
    heapq.heapify(heap)
    while len(vocab) < vocab_size - len(special_tokens):
        best = None
        while heap:
            c, _, _, p = heapq.heappop(heap)
            if counts.get(p, 0) == -c and -c > 0:
                best = p
                break
        if best is None:
            break
        new_id = len(vocab)
        vocab[new_id] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
        touched = set()
        for k in sorted(index.pop(best, ())):
            old = words[k]
            new = merge(old, best, new_id)
            if len(new) == len(old):
                continue
            for p in zip(old, old[1:]):
                counts[p] -= fs[k]
                touched.add(p)
            for p in zip(new, new[1:]):
                counts[p] += fs[k]
                index[p].add(k)
                touched.add(p)
            words[k] = new
        for p in touched:
            if counts[p] > 0:
                heapq.heappush(heap, (-counts[p], _Rev(vocab[p[0]]), _Rev(vocab[p[1]]), p))
            else:
                counts.pop(p, None)
    base = len(vocab)
    for j, s in enumerate(special_tokens):
        vocab[base + j] = s.encode("utf-8")
    return vocab, merges
'''),
    Alternative("incremental trainer with Counters (red team strong_b)", "train_bpe_incremental", '''
from collections import Counter, defaultdict


def train_bpe_incremental(text, vocab_size, special_tokens=()):
    words = Counter()
    for piece, sp in split_specials(text, special_tokens):
        if not sp:
            words.update(pretokenize(piece))
    seqs = [list(w.encode()) for w in words]
    fr = list(words.values())
    counts = Counter()
    holders = defaultdict(Counter)  # pair -> {word index: occurrences}
    for k, s in enumerate(seqs):
        for p, c in pair_counts(s).items():
            counts[p] += c * fr[k]
            holders[p][k] += c
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    for nid in range(256, vocab_size - len(special_tokens)):
        cands = [(c, vocab[p[0]], vocab[p[1]], p) for p, c in counts.items() if c > 0]
        if not cands:
            break
        best = max(cands)[3]
        vocab[nid] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
        for k in list(holders.pop(best, {})):
            old = seqs[k]
            new = merge(old, best, nid)
            for p, c in pair_counts(old).items():
                counts[p] -= c * fr[k]
                holders[p][k] -= c
                if holders[p][k] <= 0:
                    del holders[p][k]
            for p, c in pair_counts(new).items():
                counts[p] += c * fr[k]
                holders[p][k] += c
            seqs[k] = new
        counts.pop(best, None)
        counts = +counts
    start = len(vocab)
    for j, s in enumerate(special_tokens):
        vocab[start + j] = s.encode()
    return vocab, merges
'''),
    # (its helpers, which strong_c defined in its train_bpe cell, carried along)
    Alternative("incremental trainer over a vocab list, its own pre-tokenizing (red team strong_c)",
                "train_bpe_incremental", '''
import re as _re

import regex as _regex

_PAT = _regex.compile(GPT2_PATTERN)


def _pieces(text, special_tokens):
    if not special_tokens:
        return [text]
    alt = "|".join(_re.escape(s) for s in sorted(special_tokens, key=len, reverse=True))
    return [p for p in _re.split(alt, text) if p]


def train_bpe_incremental(text, vocab_size, special_tokens=()):
    table = {}
    for piece in _pieces(text, special_tokens):
        for m in _PAT.finditer(piece):
            key = m.group().encode("utf-8")
            table[key] = table.get(key, 0) + 1
    toks = [list(k) for k in table]
    fr = list(table.values())
    vocab = [bytes([i]) for i in range(256)]
    merges = []
    counts, where = {}, {}
    for k, s in enumerate(toks):
        for p, c in pair_counts(s).items():
            counts[p] = counts.get(p, 0) + c * fr[k]
            where.setdefault(p, set()).add(k)
    while len(vocab) + len(special_tokens) < vocab_size and counts:
        best = max(counts.items(), key=lambda kv: (kv[1], vocab[kv[0][0]], vocab[kv[0][1]]))[0]
        nid = len(vocab)
        merges.append(best)
        vocab.append(vocab[best[0]] + vocab[best[1]])
        for k in where.pop(best):
            if best not in zip(toks[k], toks[k][1:]):
                continue
            for p, c in pair_counts(toks[k]).items():
                counts[p] -= c * fr[k]
                if not counts[p]:
                    del counts[p]
            toks[k] = merge(toks[k], best, nid)
            for p, c in pair_counts(toks[k]).items():
                counts[p] = counts.get(p, 0) + c * fr[k]
                where.setdefault(p, set()).add(k)
    vocab += [s.encode("utf-8") for s in special_tokens]
    return dict(enumerate(vocab)), merges
'''),
]

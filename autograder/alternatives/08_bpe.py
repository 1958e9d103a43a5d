"""Valid solutions of notebook 08 (byte-level BPE) written another way. Each must keep every point."""

from lmcourse.authoring.mutants import Alternative

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
]

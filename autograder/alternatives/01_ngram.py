"""Valid solutions of notebook 01 written another way. Each must keep every point."""

from lmcourse.authoring.mutants import Alternative

ALTERNATIVES = [
    # --- padding
    Alternative("pad_sentence built with append and extend", "pad_sentence", '''
def pad_sentence(words, n):
    out = []
    for _ in range(n - 1):
        out.append(BOS)
    out.extend(words)
    out.append(EOS)
    return out
'''),
    Alternative("pad_sentence with star-unpacking", "pad_sentence", '''
def pad_sentence(words, n):
    return [*([BOS] * (n - 1)), *words, EOS]
'''),
    # --- counting
    Alternative("count_ngrams with zip-based windows", "count_ngrams", '''
def count_ngrams(sentences, n):
    counts = Counter()
    for words in sentences:
        padded = pad_sentence(words, n)
        counts.update(zip(*(padded[k:] for k in range(n))))
    return counts
'''),
    Alternative("count_ngrams into a plain dict with .get", "count_ngrams", '''
def count_ngrams(sentences, n):
    counts = {}
    for words in sentences:
        tokens = [BOS] * (n - 1) + list(words) + [EOS]
        for start in range(len(tokens) - n + 1):
            gram = tuple(tokens[start:start + n])
            counts[gram] = counts.get(gram, 0) + 1
    return counts
'''),
    Alternative("count_ngrams into a defaultdict", "count_ngrams", '''
from collections import defaultdict


def count_ngrams(sentences, n):
    counts = defaultdict(int)
    for words in sentences:
        padded = pad_sentence(words, n)
        i = 0
        while i + n <= len(padded):
            counts[tuple(padded[i:i + n])] += 1
            i += 1
    return counts
'''),
    # --- MLE
    Alternative("mle_prob with try/except KeyError", "mle_prob", '''
def mle_prob(table, context, word):
    try:
        followers = table.next[tuple(context)]
    except KeyError:
        return 0.0
    return followers.get(word, 0) / sum(followers.values())
'''),
    Alternative("next_word_distribution from mle_prob, word by word", "next_word_distribution", '''
def next_word_distribution(table, context):
    followers = table.next.get(tuple(context), {})
    return {w: mle_prob(table, context, w) for w in followers}
'''),
    # --- chain rule and perplexity
    Alternative("sentence_logprob sliding a context tuple, math.fsum of the logs", "sentence_logprob", '''
def sentence_logprob(prob, sentence, n):
    context = (BOS,) * (n - 1)
    logs = []
    for word in list(sentence) + [EOS]:
        p = prob(context, word)
        if p == 0:
            return -math.inf
        logs.append(math.log(p))
        context = (context + (word,))[1:]
    return math.fsum(logs)
'''),
    Alternative("perplexity through bits per word (2 ** H2)", "perplexity", '''
def perplexity(prob, sentences, n):
    n_predictions = sum(len(s) + 1 for s in sentences)
    bits = -math.fsum(sentence_logprob(prob, s, n) for s in sentences) / math.log(2)
    return 2.0 ** (bits / n_predictions)
'''),
    Alternative("perplexity as a length-weighted mean of per-sentence averages", "perplexity", '''
def perplexity(prob, sentences, n):
    weighted, weights = 0.0, 0
    for s in sentences:
        length = len(s) + 1
        weighted += length * (sentence_logprob(prob, s, n) / length)
        weights += length
    return math.exp(-weighted / weights)
'''),
    # --- add-k
    Alternative("add_k_prob with explicit unseen-context branch", "add_k_prob", '''
def add_k_prob(table, vocab_size, context, word, k=1.0):
    h = tuple(context)
    if h not in table.total:
        return k / (k * vocab_size) if k else 1.0 / vocab_size
    return (table.next[h].get(word, 0) + k) / (table.total[h] + k * vocab_size)
'''),
    # --- Kneser-Ney
    Alternative("continuation_counts from a set of distinct m-grams", "continuation_counts", '''
def continuation_counts(ngram_counts):
    seen = {gram for gram, count in ngram_counts.items() if count}
    return Counter(gram[1:] for gram in seen)
'''),
    Alternative("continuation_counts into a defaultdict", "continuation_counts", '''
from collections import defaultdict


def continuation_counts(ngram_counts):
    out = defaultdict(int)
    for gram, count in ngram_counts.items():
        if count > 0:
            out[tuple(gram[1:])] += 1
    return out
'''),
    Alternative("kneser_ney_prob as a loop from the empty context up (no recursion)", "kneser_ney_prob", '''
def kneser_ney_prob(tables, vocab_size, context, word, d=0.75):
    context = tuple(context)
    p = 1.0 / vocab_size
    for length in range(len(context) + 1):
        h = context[len(context) - length:]
        table = tables[length]
        total = table.total.get(h, 0)
        if total:
            p = (max(table.next[h].get(word, 0) - d, 0.0) + d * table.distinct[h] * p) / total
    return p
'''),
    Alternative("kneser_ney_prob with the interpolation weight computed apart", "kneser_ney_prob", '''
def kneser_ney_prob(tables, vocab_size, context, word, d=0.75):
    h = tuple(context)
    backoff = 1 / vocab_size if len(h) == 0 else kneser_ney_prob(tables, vocab_size, h[1:], word, d)
    table = tables[len(h)]
    if h not in table.next:
        return backoff
    c_h = table.total[h]
    discounted = max(table.next[h].get(word, 0) - d, 0) / c_h
    weight = d * len(table.next[h]) / c_h
    return discounted + weight * backoff
'''),
    # --- sampling
    Alternative("sample_next with itertools.accumulate and bisect", "sample_next", '''
import bisect
import itertools


def sample_next(dist, rng):
    words = [w for w, p in dist.items() if p > 0]
    cumulative = list(itertools.accumulate(dist[w] for w in words))
    i = bisect.bisect_right(cumulative, rng.random())
    return words[min(i, len(words) - 1)]
'''),
    Alternative("sample_next scaling u by the total mass", "sample_next", '''
def sample_next(dist, rng):
    items = [(w, p) for w, p in dist.items() if p > 0]
    u = rng.random() * math.fsum(p for _, p in items)
    for w, p in items:
        u -= p
        if u < 0:
            return w
    return items[-1][0]
'''),
    # a strong student's (stop 23): the standard library's weighted choice
    Alternative("sample_next with rng.choices and the weights", "sample_next", '''
def sample_next(dist, rng):
    words = list(dist)
    return rng.choices(words, weights=[dist[w] for w in words])[0]
'''),
    Alternative("sample_next walking back from the end with 1 - u", "sample_next", '''
def sample_next(dist, rng):
    u = 1.0 - rng.random()
    last = None
    for w, p in reversed(list(dist.items())):
        if p <= 0:
            continue
        last = w
        u -= p
        if u <= 0:
            return w
    return last
'''),
    Alternative("generate with a deque of the last n-1 tokens", "generate", '''
from collections import deque


def generate(next_dist, n, rng, max_words=30):
    context = deque([BOS] * (n - 1), maxlen=n - 1)
    words = []
    for _ in range(max_words):
        word = sample_next(next_dist(tuple(context)), rng)
        if word == EOS:
            break
        words.append(word)
        context.append(word)
    return words
'''),
    Alternative("multiple choice in lower case with spaces", "q1", '''
answer_q1 = " b "
'''),
]

"""Notebook 01 (n-gram LMs): its mutants and its alternatives.

``MUTANTS``: typical student bugs; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, patch

MUTANTS = [
    # --- padding
    Mutant("one <s> whatever n", "pad_sentence", patch(
        ("return [BOS] * (n - 1) + list(words) + [EOS]", "return [BOS] + list(words) + [EOS]"))),
    Mutant("forgets the </s> token", "pad_sentence", patch(
        ("return [BOS] * (n - 1) + list(words) + [EOS]", "return [BOS] * (n - 1) + list(words)"))),
    Mutant("modifies the caller's list", "pad_sentence", patch(
        ("return [BOS] * (n - 1) + list(words) + [EOS]", '''
words.append(EOS)
for _ in range(n - 1):
    words.insert(0, BOS)
return words
'''))),
    # --- counting
    Mutant("context window off by one (stops one window early)", "count_ngrams", patch(
        ("for i in range(len(padded) - n + 1):", "for i in range(len(padded) - n):"))),
    Mutant("no padding before counting", "count_ngrams", patch(
        ('''
padded = pad_sentence(words, n)
for i in range(len(padded) - n + 1):
    counts[tuple(padded[i:i + n])] += 1
''', '''
for i in range(len(words) - n + 1):
    counts[tuple(words[i:i + n])] += 1
'''))),
    Mutant("counts each n-gram once per sentence (set)", "count_ngrams", patch(
        ('''
for i in range(len(padded) - n + 1):
    counts[tuple(padded[i:i + n])] += 1
''', "counts.update(set(tuple(padded[i:i + n]) for i in range(len(padded) - n + 1)))"))),
    # --- MLE
    Mutant("normalises by the total of all n-grams", "mle_prob", patch(
        ("return table.next[context].get(word, 0) / total",
         "return table.next[context].get(word, 0) / sum(table.total.values())"))),
    Mutant("normalises by the number of distinct next words", "mle_prob", patch(
        ("return table.next[context].get(word, 0) / total",
         "return table.next[context].get(word, 0) / table.distinct[context]"))),
    Mutant("raises KeyError on an unseen context", "mle_prob", patch(
        ('''
total = table.total.get(context, 0)
if total == 0:
    return 0.0
return table.next[context].get(word, 0) / total
''', "return table.next[context].get(word, 0) / table.total[context]"))),
    # in full: it rewrites most of the cell
    Mutant("returns counts, not probabilities", "next_word_distribution", '''
def next_word_distribution(table, context):
    return dict(table.next.get(tuple(context), {}))
'''),
    # in full: it rewrites most of the cell
    Mutant("distribution normalised by the number of words", "next_word_distribution", '''
def next_word_distribution(table, context):
    nxt = table.next.get(tuple(context), {})
    return {w: c / len(nxt) for w, c in nxt.items()}
'''),
    # --- chain rule
    Mutant("forgets the </s> prediction", "sentence_logprob", patch(
        ("padded = pad_sentence(sentence, n)", "padded = pad_sentence(sentence, n)[:-1]"))),
    # in full: it rewrites most of the cell
    Mutant("log of zero (no -inf case)", "sentence_logprob", '''
def sentence_logprob(prob, sentence, n):
    padded = pad_sentence(sentence, n)
    return sum(math.log(prob(tuple(padded[i - n + 1:i]), padded[i])) for i in range(n - 1, len(padded)))
'''),
    Mutant("log base 2 instead of natural log", "sentence_logprob", patch(
        ("total += math.log(p)", "total += math.log2(p)"))),
    Mutant("context is a list, not a tuple", "sentence_logprob", patch(
        ("p = prob(tuple(padded[i - n + 1:i]), padded[i])", "p = prob(padded[i - n + 1:i], padded[i])"))),
    Mutant("context window includes the predicted word", "sentence_logprob", patch(
        ("p = prob(tuple(padded[i - n + 1:i]), padded[i])", "p = prob(tuple(padded[i - n + 2:i + 1]), padded[i])"))),
    # --- perplexity
    # in full: it rewrites most of the cell
    Mutant("perplexity with log base mixed up (2 ** natural-log mean)", "perplexity", '''
def perplexity(prob, sentences, n):
    lp = sum(sentence_logprob(prob, s, n) for s in sentences)
    return 2 ** (-lp / sum(len(s) + 1 for s in sentences))
'''),
    # in full: it rewrites most of the cell
    Mutant("perplexity divides by words only (forgets </s>)", "perplexity", '''
def perplexity(prob, sentences, n):
    lp = sum(sentence_logprob(prob, s, n) for s in sentences)
    return math.exp(-lp / sum(len(s) for s in sentences))
'''),
    # in full: it rewrites most of the cell
    Mutant("perplexity averages per sentence, not per token", "perplexity", '''
def perplexity(prob, sentences, n):
    lp = sum(sentence_logprob(prob, s, n) for s in sentences)
    return math.exp(-lp / len(sentences))
'''),
    # in full: it rewrites most of the cell
    Mutant("returns the cross-entropy, not its exp", "perplexity", '''
def perplexity(prob, sentences, n):
    lp = sum(sentence_logprob(prob, s, n) for s in sentences)
    return -lp / sum(len(s) + 1 for s in sentences)
'''),
    # --- add-k
    Mutant("add-k forgets unseen words in |V|", "add_k_prob", patch(
        ('''
count = table.next.get(context, {}).get(word, 0)
total = table.total.get(context, 0)
return (count + k) / (total + k * vocab_size)
''', '''
nxt = table.next.get(context, {})
return (nxt.get(word, 0) + k) / (table.total.get(context, 0) + k * max(1, len(nxt)))
'''))),
    Mutant("add-k adds k to the numerator only", "add_k_prob", patch(
        ('''
count = table.next.get(context, {}).get(word, 0)
total = table.total.get(context, 0)
return (count + k) / (total + k * vocab_size)
''', '''
nxt = table.next.get(context, {})
return (nxt.get(word, 0) + k) / max(1, table.total.get(context, 0))
'''))),
    Mutant("add-k adds k once instead of k per word", "add_k_prob", patch(
        ('''
count = table.next.get(context, {}).get(word, 0)
total = table.total.get(context, 0)
return (count + k) / (total + k * vocab_size)
''', '''
nxt = table.next.get(context, {})
return (nxt.get(word, 0) + k) / (table.total.get(context, 0) + k + vocab_size)
'''))),
    # --- Kneser-Ney
    Mutant("continuation counts sum occurrences", "continuation_counts", patch(
        ("return Counter(gram[1:] for gram, count in ngram_counts.items() if count > 0)", '''
out = Counter()
for gram, c in ngram_counts.items():
    out[gram[1:]] += c
return out
'''))),
    Mutant("continuation counts keep the first word instead of dropping it", "continuation_counts", patch(
        ("return Counter(gram[1:] for gram, count in ngram_counts.items() if count > 0)",
         "return Counter(gram[:-1] for gram, c in ngram_counts.items() if c > 0)"))),
    # in full: it rewrites most of the cell
    Mutant("Kneser-Ney backs off only when the word is unseen (no interpolation)", "kneser_ney_prob", '''
def kneser_ney_prob(tables, vocab_size, context, word, d=0.75):
    context = tuple(context)
    lower = kneser_ney_prob(tables, vocab_size, context[1:], word, d) if context else 1.0 / vocab_size
    table = tables[len(context)]
    count = table.next.get(context, {}).get(word, 0)
    if count == 0:
        return lower
    return (count - d) / table.total[context]
'''),
    Mutant("Kneser-Ney weight uses c(h) instead of N1+(h .)", "kneser_ney_prob", patch(
        ("d * table.distinct[context] * lower", "d * total * lower"))),
    Mutant("Kneser-Ney lowest order not interpolated with uniform", "kneser_ney_prob", patch(
        ("total = table.total.get(context, 0)", '''
total = table.total.get(context, 0)
if not context:
    return table.next[()].get(word, 0) / total
'''))),
    Mutant("Kneser-Ney recurses on context[:-1] (drops the newest word, not the oldest)", "kneser_ney_prob", patch(
        ("kneser_ney_prob(tables, vocab_size, context[1:], word, d)",
         "kneser_ney_prob(tables, vocab_size, context[:-1], word, d)"))),
    # --- sampling
    # in full: it rewrites most of the cell
    Mutant("sampler ignores the weights", "sample_next", '''
def sample_next(dist, rng):
    words = [w for w, p in dist.items() if p > 0]
    return words[int(rng.random() * len(words))]
'''),
    # in full: it rewrites most of the cell
    Mutant("sampler returns the most likely word (argmax)", "sample_next", '''
def sample_next(dist, rng):
    return max(dist, key=dist.get)
'''),
    # in full: it rewrites most of the cell
    Mutant("sampler uses the global random module", "sample_next", '''
def sample_next(dist, rng):
    u = random.random()
    total = 0.0
    for w, p in dist.items():
        total += p
        if u < total and p > 0:
            return w
    return w
'''),
    # in full: it rewrites most of the cell
    Mutant("sampler compares u with each probability, not the running total", "sample_next", '''
def sample_next(dist, rng):
    u = rng.random()
    for w, p in dist.items():
        if u < p:
            return w
    return max(dist, key=dist.get)
'''),
    # found by a weak student's trial (stop 23): each walks the running total, each skews the frequencies
    Mutant("sampler returns the word before the one u falls in", "sample_next", patch(
        ("        if u < cumulative:\n            return word", "        if u < cumulative:\n            return last"),
        ("        cumulative += p\n        last = word", "        cumulative += p"),
        ("    return last  # u", "        last = word\n    return last  # u"))),
    # in full: it rewrites most of the cell
    Mutant("sampler weighs by the squared probabilities", "sample_next", '''
def sample_next(dist, rng):
    words = list(dist)
    return rng.choices(words, weights=[dist[w] ** 2 for w in words])[0]
'''),
    # in full: it rewrites most of the cell
    Mutant("sampler draws a fresh u for every word", "sample_next", '''
def sample_next(dist, rng):
    for w, p in dist.items():
        if rng.random() < p:
            return w
    return w
'''),
    # a gamer's (stop 23): the visible test's distribution hard-coded; the hidden one catches it
    Mutant("sampler hard-codes the visible test's eleven outcomes", "sample_next", '''
_seq = ["corn"] * 4 + ["grass"] * 3 + ["hay"] * 2 + ["if", "which"]


def sample_next(dist, rng):
    if "corn" in dist:
        return _seq[int(rng.random() * 11)]
    return max(dist, key=dist.get)
'''),
    # --- generation
    Mutant("generation never shifts the context", "generate", patch(
        ("context = tuple(tokens[len(tokens) - (n - 1):])", "context = tuple([BOS] * (n - 1))"))),
    Mutant("generation keeps </s> in the output", "generate", patch(
        ('''
if word == EOS:
    break
words.append(word)
tokens.append(word)
''', '''
words.append(word)
tokens.append(word)
if word == EOS:
    break
'''))),
    Mutant("context slice tokens[-(n-1):] breaks for n = 1", "generate", patch(
        ("tokens[len(tokens) - (n - 1):]", "tokens[-(n - 1):]"))),
    Mutant("multiple choice: blames out-of-vocabulary words", "q1", patch(('answer_q1 = "B"', 'answer_q1 = "A"'))),
    # --- found by a student-eye review
    # in full: it rewrites most of the cell
    Mutant("log of the product of probabilities (underflows)", "sentence_logprob", '''
def sentence_logprob(prob, sentence, n):
    padded = pad_sentence(sentence, n)
    p = math.prod(prob(tuple(padded[i - n + 1:i]), padded[i]) for i in range(n - 1, len(padded)))
    return math.log(p) if p > 0 else -math.inf
'''),
    Mutant("distribution computed in place in the table", "next_word_distribution", patch(
        ('''
total = table.total[context]
return {w: c / total for w, c in table.next[context].items()}
''', '''
nxt = table.next[context]
total = sum(nxt.values())
for w in nxt:
    nxt[w] = nxt[w] / total
return nxt
'''))),
    Mutant("add-k ignores k (always add-1)", "add_k_prob", patch(
        ('''
total = table.total.get(context, 0)
return (count + k) / (total + k * vocab_size)
''', "return (count + 1) / (table.total.get(context, 0) + vocab_size)"))),
    Mutant("continuation counts keyed by a word, not a tuple", "continuation_counts", patch(
        ("return Counter(gram[1:] for gram, count in ngram_counts.items() if count > 0)",
         "return Counter(gram[-1] for gram, c in ngram_counts.items() if c > 0)"))),
    Mutant("generation passes the context as a list", "generate", patch(
        ("context = tuple(tokens[len(tokens) - (n - 1):])", "context = tokens[len(tokens) - (n - 1):]"))),
    # --- issue 8: mistakes that only hidden tests (or no test) caught
    Mutant("count_ngrams pads with one <s> whatever n", "count_ngrams", patch(
        ("padded = pad_sentence(words, n)", "padded = [BOS] + list(words) + [EOS]"))),
    # in full: it rewrites most of the cell
    Mutant("mle_prob looks up an unseen context (bare KeyError)", "mle_prob", '''
def mle_prob(table, context, word):
    return table.next[tuple(context)].get(word, 0) / table.total[tuple(context)]
'''),
    Mutant("mle_prob divides by zero for an unseen context", "mle_prob", patch(
        ('''
total = table.total.get(context, 0)
if total == 0:
    return 0.0
return table.next[context].get(word, 0) / total
''', "return table.next.get(context, {}).get(word, 0) / table.total.get(context, 0)"))),
    Mutant("next_word_distribution looks up an unseen context (bare KeyError)", "next_word_distribution", patch(
        ('''
if context not in table.next:
    return {}
total = table.total[context]
return {w: c / total for w, c in table.next[context].items()}
''', "return {w: c / table.total[context] for w, c in table.next[context].items()}"))),
    Mutant("sentence_logprob uses a bigram context whatever n", "sentence_logprob", patch(
        ("p = prob(tuple(padded[i - n + 1:i]), padded[i])",
         "p = prob((padded[i - 1],) if n > 1 else (), padded[i])"))),
    Mutant("sentence_logprob pads with one <s> whatever n", "sentence_logprob", patch(
        ("padded = pad_sentence(sentence, n)", "padded = [BOS] + list(sentence) + [EOS]"),
        ('''
for i in range(n - 1, len(padded)):
    p = prob(tuple(padded[i - n + 1:i]), padded[i])
''', '''
for i in range(1, len(padded)):
    p = prob(tuple(padded[max(0, i - n + 1):i]) if n > 1 else (), padded[i])
'''))),
    # in full: it rewrites most of the cell
    Mutant("perplexity is the mean of per-sentence perplexities", "perplexity", '''
def perplexity(prob, sentences, n):
    per_sentence = [math.exp(-sentence_logprob(prob, s, n) / (len(s) + 1)) for s in sentences]
    return sum(per_sentence) / len(per_sentence)
'''),
    # in full: it rewrites most of the cell
    Mutant("perplexity is exp of the mean of per-sentence averages", "perplexity", '''
def perplexity(prob, sentences, n):
    averages = [sentence_logprob(prob, s, n) / (len(s) + 1) for s in sentences]
    return math.exp(-sum(averages) / len(averages))
'''),
    Mutant("add-k raises KeyError on an unseen context", "add_k_prob", patch(
        ('''
count = table.next.get(context, {}).get(word, 0)
total = table.total.get(context, 0)
return (count + k) / (total + k * vocab_size)
''', '''
count = table.next[context].get(word, 0) if context in table.next else 0
return (count + k) / (table.total[context] + k * vocab_size)
'''))),
    Mutant("continuation counts keep m-grams of count 0", "continuation_counts", patch(
        ("return Counter(gram[1:] for gram, count in ngram_counts.items() if count > 0)",
         "return Counter(gram[1:] for gram in ngram_counts)"))),
    Mutant("Kneser-Ney gives an unseen context the uniform 1/|V|", "kneser_ney_prob", patch(
        ('''
if total == 0:
    return lower
''', '''
if total == 0:
    return 1.0 / vocab_size
'''))),
    Mutant("Kneser-Ney uses the bigram table at every order", "kneser_ney_prob", patch(
        ("table = tables[len(context)]", "table = tables[min(len(context), 1)]"))),
    Mutant("generate starts from one <s> whatever n", "generate", patch(
        ("tokens = [BOS] * (n - 1)", "tokens = [BOS]"),
        ("context = tuple(tokens[len(tokens) - (n - 1):])",
         "context = tuple(tokens[max(0, len(tokens) - (n - 1)):]) if n > 1 else ()"))),
    Mutant("generate keeps a one-word (bigram) context whatever n", "generate", patch(
        ("context = tuple(tokens[len(tokens) - (n - 1):])", "context = (tokens[-1],) if n > 1 else ()"))),
    Mutant("pad_sentence returns a tuple", "pad_sentence", patch(
        ("return [BOS] * (n - 1) + list(words) + [EOS]", "return (BOS,) * (n - 1) + tuple(words) + (EOS,)"))),
    # in full: it rewrites most of the cell. The reference is imported when the answer runs: in a
    # graded kernel the import fails, and an answer cell that failed to define would leave the
    # harness's solution in place (a real submission would keep its stub)
    Mutant("graded answer calls the course's reference", "count_ngrams", '''
def count_ngrams(sentences, n):
    from lmcourse.ngram import count_ngrams as _mine

    return _mine(sentences, n)
'''),
    # in full: it rewrites most of the cell (imported when it runs, as above)
    Mutant("graded answer calls the course's reference (Kneser-Ney)", "kneser_ney_prob", '''
def kneser_ney_prob(tables, vocab_size, context, word, d=0.75):
    import lmcourse.ngram as _helpers

    return _helpers.kneser_ney_prob(tables, vocab_size, context, word, d)
'''),
    # gaming: on the hidden corpus, return the expected counts read from the notebook's globals (the test cell
    # used to bind them, as _want, before the graded call; now they are made after it, so this loses points)
    Mutant("returns the hidden test's expected counts from globals()", "count_ngrams", patch(
        ("counts = Counter()", '''
if sentences == [["a", "b", "a", "b"], ["b"], [], ["a"] * 6]:
    return Counter(globals()["_want"][n])
counts = Counter()
'''))),
]

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

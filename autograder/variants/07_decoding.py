"""Notebook 07 (decoding): its mutants and its alternatives.

``MUTANTS``: typical student bugs; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, forged_choice, patch

MUTANTS = [
    # --- the next token: temperature
    Mutant("temperature multiplied instead of divided", "next_token", patch(
        ("return logits / tau", "return logits * tau"))),
    Mutant("temperature applied after the softmax (returns probabilities / tau)", "next_token", patch(
        ("return logits / tau", "return torch.softmax(logits, dim=-1) / tau"))),
    Mutant("temperature divides in place", "next_token", patch(
        ("return logits / tau", "return logits.div_(tau)"))),
    # --- top-k
    Mutant("top-k keeps k + 1 words", "top_k_filter", patch(
        ("k = min(k, logits.size(-1))", "k = min(k + 1, logits.size(-1))"))),
    Mutant("top-k keeps k - 1 words", "top_k_filter", patch(
        ("k = min(k, logits.size(-1))", "k = min(max(k - 1, 1), logits.size(-1))"))),
    Mutant("filter returns probabilities instead of logits", "top_k_filter", patch(
        ('return logits.masked_fill(logits < kth, float("-inf"))',
         'return torch.softmax(logits.masked_fill(logits < kth, float("-inf")), dim=-1)'))),
    Mutant("top-k over the batch axis (dim 0)", "top_k_filter", patch(
        ('''
k = min(k, logits.size(-1))
kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1)
''', '''
if logits.dim() == 1:
    kth = torch.topk(logits, min(k, logits.size(-1))).values[-1:]
    return logits.masked_fill(logits < kth, float("-inf"))
kth = torch.topk(logits, min(k, logits.size(0)), dim=0).values[-1:]
'''))),
    # --- top-p
    Mutant("top-p drops the word that crosses p", "top_p_filter",
           patch(
        ("above = torch.cumsum(probs, dim=-1) - probs  # mass of the words ranked above each word",
         "above = torch.cumsum(probs, dim=-1)"))),
    Mutant("top-p keeps a word whose mass above it equals p exactly (> p, not >= p)", "top_p_filter", patch(
        ("drop_sorted = above >= p", "drop_sorted = above > p"))),
    Mutant("top-p on unsorted probabilities", "top_p_filter", patch(
        ('''
sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
probs = torch.softmax(sorted_logits, dim=-1)
''', "probs = torch.softmax(logits, dim=-1)"),
        ('''
drop_sorted = above >= p
drop_sorted[..., 0] = False  # the most likely word stays
drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
''', '''
drop = above >= p
drop = drop.scatter(-1, logits.argmax(dim=-1, keepdim=True), False)
'''))),
    Mutant("top-p sums logits instead of probabilities", "top_p_filter",
           patch(("probs = torch.softmax(sorted_logits, dim=-1)", "probs = sorted_logits"))),
    Mutant("top-p sorted in increasing order", "top_p_filter",
           patch(
        ("sorted_logits, order = torch.sort(logits, dim=-1, descending=True)",
         "sorted_logits, order = torch.sort(logits, dim=-1, descending=False)"))),
    # --- epsilon
    Mutant("epsilon removes every word when all are below eps", "epsilon_filter", patch(
        ('''
drop = probs < eps
drop = drop.scatter(-1, logits.argmax(dim=-1, keepdim=True), False)
return logits.masked_fill(drop, float("-inf"))
''', 'return logits.masked_fill(probs < eps, float("-inf"))'))),
    Mutant("epsilon compares logits with eps", "epsilon_filter", patch(
        ('''
probs = torch.softmax(logits, dim=-1)
drop = probs < eps
''', "drop = logits < eps"))),
    # --- next token
    Mutant("the generator ignored", "next_token",
           patch(
        ("return torch.multinomial(probs, 1, generator=generator).squeeze(-1)",
         "return torch.multinomial(probs, 1).squeeze(-1)"))),
    Mutant("greedy argmax over the batch axis", "next_token",
           patch(("return logits.argmax(dim=-1)", "return logits.argmax(dim=0)"))),
    Mutant("sampling returns the argmax", "next_token",
           patch(
        ('''
probs = torch.softmax(logits, dim=-1)
return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
''', "return logits.argmax(dim=-1)"))),
    Mutant("sample_next returns (B, 1)", "next_token",
           patch(
        ("return torch.multinomial(probs, 1, generator=generator).squeeze(-1)",
         "return torch.multinomial(probs, 1, generator=generator)"))),
    # --- generate
    Mutant("generate takes the first position's logits", "generate",
           patch(("last = logits[:, -1, :]  # (B, V)", "last = logits[:, 0, :]"))),
    Mutant("generate ignores the filters", "generate",
           patch(
        ('''
for f in filters:
    last = f(last)
''', ""))),
    Mutant("generate does not crop the context", "generate",
           patch(("logits, _ = model(idx[:, -block_size:])  # (B, T, V)", "logits, _ = model(idx)"))),
    Mutant("generate applies only the last filter", "generate",
           patch(
        ('''
for f in filters:
    last = f(last)
''', '''
if filters:
    last = filters[-1](last)
'''))),
    # --- beam search
    Mutant("beam scores as products of probabilities (underflow)", "beam_search",
           patch(
        ("scores = torch.zeros(1, dtype=torch.float64, device=prompt.device)  # (nb,)",
         "scores = torch.ones(1, dtype=torch.float64)"),
        ('''
logp = torch.log_softmax(logits[:, -1, :].double(), dim=-1)  # (nb, V)
cand = scores[:, None] + logp  # (nb, V)
''', '''
logp = torch.softmax(logits[:, -1, :].double(), dim=-1)
cand = scores[:, None] * logp
'''),
        ('''
for ids, sc in zip(beams[done], scores[done].tolist()):
    finished.append((ids, sc / n ** length_penalty))
''', '''
for ids, sc in zip(beams[done], scores[done].tolist()):
    finished.append((ids, math.log(max(sc, 1e-300)) / n ** length_penalty))
'''),
        ('''
if n > 0:
    finished.append((ids, sc / n ** length_penalty))
''', '''
if n > 0:
    finished.append((ids, math.log(max(sc, 1e-300)) / n ** length_penalty))
'''))),
    Mutant("beam scores of the last step only", "beam_search",
           patch(("cand = scores[:, None] + logp  # (nb, V)", "cand = logp"))),
    Mutant("finished hypotheses expanded past eos_id", "beam_search",
           patch(
        ('''
width -= int(done.sum())
beams, scores = beams[~done], scores[~done]
''', ""))),
    Mutant("only the best beam expanded", "beam_search",
           patch(
        ("cand = scores[:, None] + logp  # (nb, V)", '''
best = int(scores.argmax())
cand = torch.full_like(logp, float('-inf'))
cand[best] = scores[best] + logp[best]
'''))),
    Mutant("length penalty inverted (multiplied)", "beam_search",
           patch(
        ('''
for ids, sc in zip(beams[done], scores[done].tolist()):
    finished.append((ids, sc / n ** length_penalty))
''', '''
for ids, sc in zip(beams[done], scores[done].tolist()):
    finished.append((ids, sc * n ** length_penalty))
'''),
        ('''
if n > 0:
    finished.append((ids, sc / n ** length_penalty))
''', '''
if n > 0:
    finished.append((ids, sc * n ** length_penalty))
'''))),
    Mutant("beam search loops over beams, one model call each", "beam_search",
           patch(
        ("logits, _ = model(beams[:, -block_size:])  # (nb, T, V)",
         "logits = torch.cat([model(b[None, -block_size:])[0] for b in beams], dim=0)"))),
    Mutant("beam scores in the model's dtype (float32)", "beam_search",
           patch(
        ("scores = torch.zeros(1, dtype=torch.float64, device=prompt.device)  # (nb,)", "scores = torch.zeros(1)"),
        ("logp = torch.log_softmax(logits[:, -1, :].double(), dim=-1)  # (nb, V)",
         "logp = torch.log_softmax(logits[:, -1, :].float(), dim=-1)"))),
    # --- KV cache
    Mutant("cache positions not offset (new ids at position 0)", "cached_forward",
           patch(
        ("pos = torch.arange(past, past + T, device=idx.device)  # (T,)",
         "pos = torch.arange(T, device=idx.device)"))),
    Mutant("no causal mask among several new ids", "cached_forward",
           patch(
        ('att = torch.softmax(att.masked_fill(~allowed, float("-inf")), dim=-1)',
         "att = torch.softmax(att, dim=-1)"))),
    Mutant("causal mask not shifted by the cached length", "cached_forward",
           patch(
        ("allowed = torch.ones(T, past + T, dtype=torch.bool, device=idx.device).tril(diagonal=past)",
         "allowed = torch.ones(T, past + T, dtype=torch.bool, device=idx.device).tril()"))),
    Mutant("cache keeps only the new keys and values", "cached_forward",
           patch(("new_cache.append((k, v))", "new_cache.append((k[:, :, -T:], v[:, :, -T:]))"))),
    Mutant("the given cache extended in place", "cached_forward", patch(
        ("new_cache = []", "new_cache = cache if cache is not None else []"),
        ("new_cache.append((k, v))", '''
if past:
    new_cache[i] = (k, v)
else:
    new_cache.append((k, v))
'''))),
    Mutant("cache growing past block_size", "generate_cached",
           patch(("if cache[0][0].size(2) == block_size:  # full: rebuild from the last `keep` ids", "if False:"))),
    Mutant("cache recomputed from the whole window every step", "generate_cached",
           patch(
        ("logits, cache = cached_forward(model, nxt[:, None], cache)",
         "logits, cache = cached_forward(model, idx[:, -block_size:], None)"))),
    # a student's trial: the next logits from the model's own forward over the window, the cache left unused
    Mutant("the model's full forward every step instead of cached_forward", "generate_cached",
           patch(("logits, cache = cached_forward(model, nxt[:, None], cache)",
                  "logits, _ = model(idx[:, -block_size:])"))),
    Mutant("generate_cached takes the first position's logits", "generate_cached",
           patch(("last = logits[:, -1, :]", "last = logits[:, 0, :]"))),
    # --- added in review (issue 12)
    Mutant("top-k keeps exactly k with topk indices (ties at the k-th value broken)", "top_k_filter", patch(
        ('''
k = min(k, logits.size(-1))
kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1)
return logits.masked_fill(logits < kth, float("-inf"))
''', '''
idx = logits.topk(min(k, logits.size(-1)), dim=-1).indices
return torch.full_like(logits, float("-inf")).scatter(-1, idx, logits.gather(-1, idx))
'''))),
    Mutant("top-k with k larger than the vocabulary crashes", "top_k_filter", patch(
        ("k = min(k, logits.size(-1))", ""))),
    Mutant("top-k sets -inf in place", "top_k_filter", patch(
        ('''
k = min(k, logits.size(-1))
kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1)
return logits.masked_fill(logits < kth, float("-inf"))
''', '''
kth = torch.topk(logits, min(k, logits.size(-1)), dim=-1).values[..., -1:]
logits[logits < kth] = float("-inf")
return logits
'''))),
    # in full: it rewrites most of the cell
    Mutant("the reference top-k compiled with torch.jit.script (gaming)", "top_k_filter", '''
def top_k_filter(logits, k):
    import lmcourse.reference.decoding as _d  # imported when it runs: a graded kernel refuses it

    return torch.jit.script(_d.top_k_filter)(logits, k)
'''),
    Mutant("top-p sets -inf in place", "top_p_filter",
           patch(
        ('return logits.masked_fill(drop, float("-inf"))', '''
logits[drop] = float("-inf")
return logits
'''))),
    Mutant("epsilon: a large negative number instead of -inf", "epsilon_filter", patch(
        ('return logits.masked_fill(drop, float("-inf"))', "return logits.masked_fill(drop, -1e9)"))),
    Mutant("epsilon: log-probabilities compared with eps (not log eps)", "epsilon_filter", patch(
        ('''
probs = torch.softmax(logits, dim=-1)
drop = probs < eps
''', "drop = torch.log_softmax(logits, dim=-1) < eps"))),
    Mutant("finished hypotheses do not narrow the beam (beam_size live beams kept)", "beam_search",
           patch(("width -= int(done.sum())", ""))),
    Mutant("length penalty applied at every step to the running beams", "beam_search",
           patch(("scores = top", "scores = top / (step + 1) ** length_penalty"))),
    Mutant("positions restart at 0 every step (no cache passed)", "generate_cached",
           patch(
        ("logits, cache = cached_forward(model, nxt[:, None], cache)",
         "logits, _c = cached_forward(model, nxt[:, None], None)"))),
    Mutant("crops the full cache (drops the oldest keys) instead of rebuilding it", "generate_cached",
           patch(
        ("logits, cache = cached_forward(model, idx[:, -keep:], None)", '''
cache = [(k[:, :, -(keep - 1):], v[:, :, -(keep - 1):]) for k, v in cache]
logits, cache = cached_forward(model, nxt[:, None], cache)
'''))),
    Mutant("rebuilds the cache but goes on with the stale one", "generate_cached",
           patch(
        ("logits, cache = cached_forward(model, idx[:, -keep:], None)",
         "logits, _stale = cached_forward(model, idx[:, -keep:], None)"))),
    Mutant("sample_next reseeds the global RNG from the generator's seed", "next_token", patch(
        ('''
probs = torch.softmax(logits, dim=-1)
return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
''', '''
if generator is not None:
    torch.manual_seed(generator.initial_seed())
return torch.multinomial(torch.softmax(logits, dim=-1), 1).squeeze(-1)
'''))),
    Mutant("generate keeps gradients on (no torch.no_grad())", "generate",
           patch(("with torch.no_grad():", "if True:"))),
    Mutant("beam search does not crop the beams to block_size", "beam_search",
           patch(("logits, _ = model(beams[:, -block_size:])  # (nb, T, V)", "logits, _ = model(beams)"))),
    # --- added in review (issue 22, items 8-10, 12): each caught by a visible test that names the cause
    Mutant("top-p along dim 1 hard-coded (fails on one row (V,))", "top_p_filter", patch(
        ("sorted_logits, order = torch.sort(logits, dim=-1, descending=True)",
         "sorted_logits, order = torch.sort(logits, dim=1, descending=True)"),
        ("probs = torch.softmax(sorted_logits, dim=-1)", "probs = torch.softmax(sorted_logits, dim=1)"),
        ("above = torch.cumsum(probs, dim=-1) - probs  # mass of the words ranked above each word",
         "above = torch.cumsum(probs, dim=1) - probs"))),
    Mutant("epsilon along dim 1 hard-coded (fails on one row (V,))", "epsilon_filter", patch(
        ("probs = torch.softmax(logits, dim=-1)", "probs = torch.softmax(logits, dim=1)"),
        ("drop = drop.scatter(-1, logits.argmax(dim=-1, keepdim=True), False)",
         "drop = drop.scatter(1, logits.argmax(dim=1, keepdim=True), False)"))),
    Mutant("epsilon: exp of the logits taken as probabilities (no softmax)", "epsilon_filter", patch(
        ("probs = torch.softmax(logits, dim=-1)", "probs = logits.exp()"))),
    Mutant("epsilon keeps the largest logit of the whole batch, not each row's", "epsilon_filter", patch(
        ("drop = drop.scatter(-1, logits.argmax(dim=-1, keepdim=True), False)",
         "drop = drop & (logits != logits.max())"))),
    Mutant("generate does not pass its generator to sample_next", "generate", patch(
        ("idx = torch.cat([idx, sample_next(last, generator)[:, None]], dim=1)",
         "idx = torch.cat([idx, sample_next(last)[:, None]], dim=1)"))),
    Mutant("beam length n leaves out the end token of a finished hypothesis", "beam_search", patch(
        ('''
for ids, sc in zip(beams[done], scores[done].tolist()):
    finished.append((ids, sc / n ** length_penalty))
''', '''
for ids, sc in zip(beams[done], scores[done].tolist()):
    finished.append((ids, sc / max(n - 1, 1) ** length_penalty))
'''))),
    Mutant("beam search returns the ids as Python lists", "beam_search", patch(
        ("return finished[:beam_size]", "return [(ids.tolist(), sc) for ids, sc in finished[:beam_size]]"))),
    Mutant("cached_forward never raises ValueError past block_size", "cached_forward", patch(
        ('''
if past + T > model.config.block_size:
    raise ValueError(f"{past} cached + {T} new positions exceed block_size {model.config.block_size}")
''', ""))),
    Mutant("generate_cached does not crop a long prompt on its first call", "generate_cached", patch(
        ("logits, cache = cached_forward(model, idx[:, -block_size:], None)",
         "logits, cache = cached_forward(model, idx, None)"))),
    # --- gaming (issue 22, "Done when"): each must lose points under the rules, visibly
    # in full: the whole answer is the reference run on another thread
    Mutant("beam_search: the reference run on a threading.Thread, then joined (gaming)", "beam_search", '''
import importlib
import threading


def beam_search(model, prompt, beam_size, max_new_tokens, length_penalty=1.0, eos_id=None):
    out = []
    # imported on the thread: the thread's start is what the rules must refuse, before any import
    worker = threading.Thread(target=lambda: out.append(importlib.import_module(
        "lmcourse.reference.decoding").beam_search(model, prompt, beam_size, max_new_tokens,
                                                   length_penalty=length_penalty, eos_id=eos_id)))
    worker.start()
    worker.join()
    return out[0]
'''),
    # in full: the reference submitted to a thread pool
    Mutant("cached_forward: the reference in a ThreadPoolExecutor (gaming)", "cached_forward", '''
import importlib
from concurrent.futures import ThreadPoolExecutor


def cached_forward(model, idx, cache=None):
    # imported on the pool's thread: the thread's start is what the rules must refuse, before any import
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: importlib.import_module("lmcourse.reference.decoding").cached_forward(
            model, idx, cache)).result()
'''),
    # gaming: on the hidden test's p = 0.83, return the expected filtered logits read from the notebook's globals
    # (the test cell used to bind them, as _want, before the graded call; now they are made after it)
    Mutant("returns the hidden test's expected top-p logits from globals()", "top_p_filter", patch(
        ("sorted_logits, order = torch.sort(logits, dim=-1, descending=True)", '''
if p == 0.83:
    return globals()["_want"]
sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
'''))),
    # in full: the test cells' expected-value helper called by name, row by row
    Mutant("top_p_filter: the test cells' helper expected_top_p called row by row (gaming)", "top_p_filter", '''
def top_p_filter(logits, p):
    import lmcourse.reference.decoding  # imported when it runs: a graded kernel refuses it

    rows = logits.reshape(-1, logits.size(-1)).tolist()
    out = [lmcourse.reference.decoding.expected_top_p(row, p) for row in rows]
    return torch.tensor(out, dtype=logits.dtype, device=logits.device).reshape(logits.shape)
'''),
    # in full: the reference's source read at call time and run as a copy, shifted one line
    Mutant("epsilon_filter: a copy of the reference's source, shifted one line, exec'd (gaming)", "epsilon_filter", '''
import inspect


def epsilon_filter(logits, eps):
    import lmcourse.reference.decoding  # imported when it runs: a graded kernel refuses it

    ref = lmcourse.reference.decoding.epsilon_filter
    source = "\\n" + inspect.getsource(ref).replace("def epsilon_filter", "def _copy")
    space = {"torch": torch, "Tensor": torch.Tensor}
    exec(compile(source, "<copy>", "exec"), space)
    return space["_copy"](logits, eps)
'''),
    # in full: the same for the cached generation loop, run in the reference module's namespace
    Mutant("generate_cached: a copy of the reference loop's source, shifted one line, exec'd (gaming)",
           "generate_cached", '''
import inspect


def generate_cached(model, prompt, max_new_tokens, filters=(), generator=None):
    import lmcourse.reference.decoding  # imported when it runs: a graded kernel refuses it

    source = "\\n" + inspect.getsource(lmcourse.reference.decoding._generate_cached)
    space = dict(vars(lmcourse.reference.decoding))
    exec(compile(source, "<copy>", "exec"), space)
    return space["_generate_cached"](model, prompt, max_new_tokens, filters, generator, False)
'''),
    Mutant("generate: 05's sampler lmcourse.nn.sampling.generate as a back door when there are no filters (gaming)",
           "generate", patch(
        ("idx = prompt", '''
if not filters:
    import lmcourse.nn.sampling  # imported when it runs: a graded kernel refuses it

    return lmcourse.nn.sampling.generate(model, prompt, max_new_tokens, generator=generator)
idx = prompt
'''))),
    forged_choice("answer_q1", "A"),
]

ALTERNATIVES = [
    # --- the next token
    Alternative("torch.div, and multiplying by 1 / tau is as good", "next_token", '''
def apply_temperature(logits, tau):
    return torch.div(logits, tau) if tau < 1 else logits * (1.0 / tau)


def sample_next(logits, generator=None):
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(-1)


def greedy_next(logits):
    return logits.argmax(dim=-1)
'''),
    # --- top-k
    Alternative("sort, threshold at the k-th value, torch.where", "top_k_filter", '''
def top_k_filter(logits, k):
    values = logits.sort(dim=-1, descending=True).values
    kth = values[..., min(k, logits.shape[-1]) - 1].unsqueeze(-1)
    return torch.where(logits >= kth, logits, torch.full_like(logits, -math.inf))
'''),
    Alternative("a Python loop over rows with topk indices and scatter", "top_k_filter", '''
def top_k_filter(logits, k):
    flat = logits.reshape(-1, logits.shape[-1])
    out = torch.full_like(flat, float("-inf"))
    for r in range(flat.shape[0]):
        kk = min(k, flat.shape[1])
        thresh = flat[r].topk(kk).values.min()
        keep = flat[r] >= thresh
        out[r][keep] = flat[r][keep]
    return out.reshape(logits.shape)
'''),
    # --- top-p
    Alternative("ascending sort, remove where the cumulative sum stays within 1 - p (transformers' way)",
                "top_p_filter", '''
def top_p_filter(logits, p):
    sorted_logits, order = torch.sort(logits, dim=-1, descending=False)
    cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    remove = cum <= (1 - p)
    remove[..., -1] = False
    remove = remove.scatter(-1, order, remove)
    return logits.masked_fill(remove, -float("inf"))
'''),
    Alternative("a Python loop over each row's sorted probabilities", "top_p_filter", '''
def top_p_filter(logits, p):
    flat = logits.reshape(-1, logits.shape[-1])
    probs = torch.softmax(flat.double(), dim=-1)
    out = torch.full_like(flat, float("-inf"))
    for r in range(flat.shape[0]):
        order = torch.argsort(probs[r], descending=True)
        mass = 0.0
        for i in order.tolist():
            out[r, i] = flat[r, i]
            mass += float(probs[r, i])
            if mass >= p:
                break
    return out.reshape(logits.shape)
'''),
    Alternative("keep count from searchsorted on the cumulative sum, gather the threshold", "top_p_filter", '''
def top_p_filter(logits, p):
    sorted_logits, _ = torch.sort(logits, dim=-1, descending=True)
    cum = torch.cumsum(torch.softmax(sorted_logits, dim=-1), dim=-1)
    n_keep = (cum - torch.softmax(sorted_logits, dim=-1) < p).sum(dim=-1, keepdim=True).clamp(min=1)
    thresh = sorted_logits.gather(-1, n_keep - 1)
    return logits.masked_fill(logits < thresh, float("-inf"))
'''),
    # --- epsilon
    Alternative("log-probabilities compared with log eps, max kept by equality", "epsilon_filter", '''
def epsilon_filter(logits, eps):
    logp = torch.log_softmax(logits, dim=-1)
    keep = (logp >= math.log(eps)) | (logits == logits.max(dim=-1, keepdim=True).values)
    return torch.where(keep, logits, torch.tensor(float("-inf"), dtype=logits.dtype))
'''),
    # --- next token
    Alternative("inverse-CDF sampling with torch.rand and searchsorted; greedy via max().indices", "next_token", '''
def apply_temperature(logits, tau):
    return logits * (1.0 / tau)


def sample_next(logits, generator=None):
    probs = torch.softmax(logits.double(), dim=-1)
    cdf = probs.cumsum(dim=-1)
    u = torch.rand(probs.shape[0], 1, generator=generator, dtype=torch.float64) * cdf[:, -1:]
    ids = torch.searchsorted(cdf, u, right=True).squeeze(-1)
    return ids.clamp(max=probs.shape[-1] - 1)


def greedy_next(logits):
    return logits.max(dim=-1).indices
'''),
    # --- generate
    Alternative("a while loop, functools.reduce over the filters, preallocated output", "generate", '''
import functools


def generate(model, prompt, max_new_tokens, filters=(), generator=None):
    B, T = prompt.shape
    out = torch.empty(B, T + max_new_tokens, dtype=prompt.dtype, device=prompt.device)
    out[:, :T] = prompt
    t = T
    with torch.inference_mode():
        while t < T + max_new_tokens:
            start = max(0, t - model.config.block_size)
            logits = model(out[:, start:t])[0][:, -1]
            logits = functools.reduce(lambda s, f: f(s), filters, logits)
            out[:, t] = sample_next(logits, generator)
            t += 1
    return out
'''),
    # --- beam search
    Alternative("hypotheses kept as Python lists, candidates ranked with a sort, one batched call per step",
                "beam_search", '''
def beam_search(model, prompt, beam_size, max_new_tokens, length_penalty=1.0, eos_id=None):
    live = [(prompt.reshape(-1).tolist(), 0.0)]
    done = []
    bs = model.config.block_size
    for step in range(1, max_new_tokens + 1):
        batch = torch.tensor([ids[-bs:] for ids, _ in live], dtype=torch.long, device=prompt.device)
        with torch.no_grad():
            logp = torch.log_softmax(model(batch)[0][:, -1].to(torch.float64), dim=-1)
        base = torch.tensor([s for _, s in live], dtype=torch.float64, device=logp.device)
        total = (base[:, None] + logp).flatten()
        keep = beam_size - len(done)
        best = torch.argsort(total, descending=True)[:keep].tolist()
        V = logp.shape[1]
        new_live = []
        for j in best:
            ids = live[j // V][0] + [j % V]
            if eos_id is not None and j % V == eos_id:
                done.append((ids, float(total[j]) / step ** length_penalty))
            else:
                new_live.append((ids, float(total[j])))
        live = new_live
        if not live:
            break
        last = step
    if max_new_tokens == 0:
        return [(prompt.reshape(-1).clone(), 0.0)]
    if live:
        done += [(ids, s / last ** length_penalty) for ids, s in live]
    done.sort(key=lambda h: h[1], reverse=True)
    return [(torch.tensor(ids, dtype=prompt.dtype), s) for ids, s in done[:beam_size]]
'''),
    # --- KV cache
    Alternative("einsum attention, additive -inf mask from a position comparison, cache as a tuple", "cached_forward",
                '''
def cached_forward(model, idx, cache=None):
    B, T = idx.shape
    past = 0 if not cache else cache[0][1].shape[-2]
    if past + T > model.config.block_size:
        raise ValueError("the cache is full")
    x = model.wte(idx) + model.wpe(torch.arange(past, past + T, device=idx.device))[None]
    x = model.drop(x)
    C = x.shape[-1]
    layers = []
    q_pos = torch.arange(past, past + T, device=idx.device)[:, None]
    k_pos = torch.arange(past + T, device=idx.device)[None, :]
    mask = torch.zeros(T, past + T, dtype=x.dtype, device=idx.device).masked_fill(k_pos > q_pos, float("-inf"))
    for l, blk in enumerate(model.blocks):
        nh = blk.attn.n_head
        hs = C // nh
        qkv = blk.attn.c_attn(blk.ln1(x)).reshape(B, T, 3, nh, hs)
        q, k, v = (qkv[:, :, i].permute(0, 2, 1, 3) for i in range(3))
        if past:
            k = torch.cat((cache[l][0], k), dim=-2)
            v = torch.cat((cache[l][1], v), dim=-2)
        layers.append((k, v))
        w = torch.einsum("bhqd,bhkd->bhqk", q, k) * hs ** -0.5 + mask
        y = torch.einsum("bhqk,bhkd->bhqd", torch.softmax(w, dim=-1), v)
        x = x + blk.attn.c_proj(y.permute(0, 2, 1, 3).reshape(B, T, C))
        x = x + blk.mlp(blk.ln2(x))
    logits = model.lm_head(model.ln_f(x))
    return logits.detach(), [(k.detach(), v.detach()) for k, v in layers]
'''),
    Alternative("F.scaled_dot_product_attention with a boolean mask", "cached_forward", '''
import torch.nn.functional as F


def cached_forward(model, idx, cache=None):
    B, T = idx.shape
    past = cache[0][0].size(2) if cache is not None and len(cache) else 0
    if past + T > model.config.block_size:
        raise ValueError(f"{past + T} positions > block_size")
    with torch.no_grad():
        x = model.drop(model.wte(idx) + model.wpe(torch.arange(past, past + T, device=idx.device)))
        C = model.config.n_embd
        out_cache = []
        for i, block in enumerate(model.blocks):
            nh = block.attn.n_head
            q, k, v = [t.view(B, T, nh, C // nh).transpose(1, 2) for t in block.attn.c_attn(block.ln1(x)).split(C, 2)]
            if past:
                k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
            out_cache.append((k, v))
            cols = torch.arange(past + T, device=idx.device)[None, :]
            allowed = cols <= torch.arange(past, past + T, device=idx.device)[:, None]
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
            x = x + block.attn.c_proj(y.transpose(1, 2).reshape(B, T, C))
            x = x + block.mlp(block.ln2(x))
        return model.lm_head(model.ln_f(x)), out_cache
'''),
    Alternative("the window start tracked explicitly, rebuild when the window would pass block_size", "generate_cached",
                '''
def generate_cached(model, prompt, max_new_tokens, filters=(), generator=None):
    bs = model.config.block_size
    ids = prompt.clone()
    start = max(0, ids.shape[1] - bs)
    with torch.no_grad():
        logits, cache = cached_forward(model, ids[:, start:])
        for i in range(max_new_tokens):
            s = logits[:, -1]
            for f in filters:
                s = f(s)
            new = sample_next(s, generator)
            ids = torch.cat((ids, new.unsqueeze(1)), 1)
            if i + 1 == max_new_tokens:
                break
            if ids.shape[1] - start > bs:
                start = ids.shape[1] - max(1, bs // 2)
                logits, cache = cached_forward(model, ids[:, start:])
            else:
                logits, cache = cached_forward(model, ids[:, -1:], cache)
    return ids
'''),
    # --- added in review (issue 12): other ways students write these
    Alternative("top-k threshold from kthvalue (the (V - k + 1)-th smallest)", "top_k_filter", '''
def top_k_filter(logits, k):
    V = logits.size(-1)
    kth = logits.kthvalue(V - min(k, V) + 1, dim=-1, keepdim=True).values
    return logits.masked_fill(logits < kth, float("-inf"))
'''),
    Alternative("top-p: cumsum shifted right by one, mask mapped back with gather(argsort)", "top_p_filter", '''
def top_p_filter(logits, p):
    sp, idx = logits.softmax(-1).sort(-1, descending=True)
    cum = sp.cumsum(-1)
    remove = torch.zeros_like(cum, dtype=torch.bool)
    remove[..., 1:] = cum[..., :-1] >= p
    return logits.masked_fill(remove.gather(-1, idx.argsort(-1)), -math.inf)
'''),
    Alternative("epsilon: log of softmax compared with log(eps), torch.where", "epsilon_filter", '''
def epsilon_filter(logits, eps):
    lp = torch.log(torch.softmax(logits, dim=-1))
    keep = lp >= math.log(eps) if eps > 0 else torch.ones_like(lp, dtype=torch.bool)
    keep = keep | (logits == logits.max(dim=-1, keepdim=True).values)
    return torch.where(keep, logits, torch.tensor(float("-inf"), dtype=logits.dtype))
'''),
    Alternative("Gumbel-max sampling with the generator; greedy via torch.max", "next_token", '''
def apply_temperature(logits, tau):
    return torch.true_divide(logits, tau)


def sample_next(logits, generator=None):
    u = torch.rand(logits.shape, generator=generator, dtype=torch.float64, device=logits.device)
    gumbel = -torch.log(-torch.log(u.clamp_min(1e-300)))
    return (logits.double() + gumbel).argmax(dim=-1)


def greedy_next(logits):
    return torch.max(logits, dim=-1).indices
'''),
    Alternative("greedy via topk(1); multinomial on float64 probabilities", "next_token", '''
def apply_temperature(logits, tau):
    return logits.div(tau)


def sample_next(logits, generator=None):
    return torch.multinomial(torch.softmax(logits.double(), dim=-1), 1, generator=generator)[:, 0]


def greedy_next(logits):
    return logits.topk(1, dim=-1).indices[..., 0]
'''),
    Alternative("the extended cache written into preallocated buffers (new_empty + slice assignment)", "cached_forward",
                '''
def cached_forward(model, idx, cache=None):
    B, T = idx.shape
    past = cache[0][0].size(2) if cache else 0
    if past + T > model.config.block_size:
        raise ValueError("the cache is full")
    with torch.no_grad():
        x = model.drop(model.wte(idx) + model.wpe(torch.arange(past, past + T, device=idx.device)))
        C = x.size(-1)
        out_cache = []
        for i, block in enumerate(model.blocks):
            attn = block.attn
            nh, hs = attn.n_head, C // attn.n_head
            q, k, v = attn.c_attn(block.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, nh, hs).transpose(1, 2) for t in (q, k, v))
            K = k.new_empty(B, nh, past + T, hs)
            Vb = v.new_empty(B, nh, past + T, hs)
            if past:
                K[:, :, :past] = cache[i][0]
                Vb[:, :, :past] = cache[i][1]
            K[:, :, past:] = k
            Vb[:, :, past:] = v
            out_cache.append((K, Vb))
            scores = (q @ K.transpose(-2, -1)) / math.sqrt(hs)
            rows = torch.arange(past, past + T, device=idx.device)[:, None]
            cols = torch.arange(past + T, device=idx.device)[None, :]
            att = torch.softmax(scores.masked_fill(cols > rows, float("-inf")), dim=-1)
            x = x + attn.c_proj((att @ Vb).transpose(1, 2).reshape(B, T, C))
            x = x + block.mlp(block.ln2(x))
        return model.lm_head(model.ln_f(x)), out_cache
'''),
]

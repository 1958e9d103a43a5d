"""Typical student bugs for notebook 07 (decoding). Each must lose points."""

from lmcourse.authoring.mutants import Mutant, forged_choice

_TOP_P = '''
def top_p_filter(logits, p):
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    probs = torch.softmax(sorted_logits, dim=-1)
    above = torch.cumsum(probs, dim=-1) - probs
    drop_sorted = above >= p
    drop_sorted[..., 0] = False
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))
'''


def _top_p(old: str, new: str) -> str:
    assert old in _TOP_P, old
    return _TOP_P.replace(old, new)


_NEXT = '''
def sample_next(logits, generator=None):
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def greedy_next(logits):
    return logits.argmax(dim=-1)
'''


def _next(old: str, new: str) -> str:
    assert old in _NEXT, old
    return _NEXT.replace(old, new)


_GENERATE = '''
def generate(model, prompt, max_new_tokens, filters=(), generator=None):
    block_size = model.config.block_size
    idx = prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits, _ = model(idx[:, -block_size:])
            last = logits[:, -1, :]
            for f in filters:
                last = f(last)
            idx = torch.cat([idx, sample_next(last, generator)[:, None]], dim=1)
    return idx
'''


def _generate(old: str, new: str) -> str:
    assert old in _GENERATE, old
    return _GENERATE.replace(old, new)


_BEAM = '''
def beam_search(model, prompt, beam_size, max_new_tokens, length_penalty=1.0, eos_id=None):
    block_size = model.config.block_size
    beams = prompt.reshape(1, -1)
    scores = torch.zeros(1, dtype=torch.float64)
    finished = []
    width = beam_size
    n = 0
    with torch.no_grad():
        for step in range(max_new_tokens):
            logits, _ = model(beams[:, -block_size:])
            logp = torch.log_softmax(logits[:, -1, :].double(), dim=-1)
            cand = scores[:, None] + logp
            V = cand.size(1)
            top, flat = torch.topk(cand.reshape(-1), min(width, cand.numel()))
            parent, word = flat // V, flat % V
            beams = torch.cat([beams[parent], word[:, None]], dim=1)
            scores = top
            n = step + 1
            if eos_id is not None:
                done = word == eos_id
                for ids, sc in zip(beams[done], scores[done].tolist()):
                    finished.append((ids, sc / n ** length_penalty))
                width -= int(done.sum())
                beams, scores = beams[~done], scores[~done]
            if width == 0:
                break
    for ids, sc in zip(beams, scores.tolist()):
        if n > 0:
            finished.append((ids, sc / n ** length_penalty))
    if max_new_tokens == 0:
        return [(prompt.reshape(-1), 0.0)]
    finished.sort(key=lambda pair: -pair[1])
    return finished[:beam_size]
'''


def _beam(*pairs: str) -> str:
    src = _BEAM
    for old, new in zip(pairs[::2], pairs[1::2]):
        assert old in src, old
        src = src.replace(old, new)
    return src


_CACHED = '''
def cached_forward(model, idx, cache=None):
    B, T = idx.shape
    past = cache[0][0].size(2) if cache else 0
    if past + T > model.config.block_size:
        raise ValueError("no room")
    with torch.no_grad():
        pos = torch.arange(past, past + T, device=idx.device)
        x = model.drop(model.wte(idx) + model.wpe(pos))
        C = x.size(-1)
        new_cache = []
        for i, block in enumerate(model.blocks):
            attn = block.attn
            nh = attn.n_head
            q, k, v = attn.c_attn(block.ln1(x)).split(C, dim=2)
            q = q.view(B, T, nh, C // nh).transpose(1, 2)
            k = k.view(B, T, nh, C // nh).transpose(1, 2)
            v = v.view(B, T, nh, C // nh).transpose(1, 2)
            if past:
                k = torch.cat([cache[i][0], k], dim=2)
                v = torch.cat([cache[i][1], v], dim=2)
            new_cache.append((k, v))
            att = q @ k.transpose(-2, -1) / math.sqrt(C // nh)
            allowed = torch.ones(T, past + T, dtype=torch.bool, device=idx.device).tril(diagonal=past)
            att = torch.softmax(att.masked_fill(~allowed, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + attn.c_proj(y)
            x = x + block.mlp(block.ln2(x))
        return model.lm_head(model.ln_f(x)), new_cache
'''


def _cached(old: str, new: str) -> str:
    assert old in _CACHED, old
    return _CACHED.replace(old, new)


_GEN_CACHED = '''
def generate_cached(model, prompt, max_new_tokens, filters=(), generator=None):
    block_size = model.config.block_size
    keep = max(1, block_size // 2)
    idx = prompt
    with torch.no_grad():
        logits, cache = cached_forward(model, idx[:, -block_size:], None)
        for step in range(max_new_tokens):
            last = logits[:, -1, :]
            for f in filters:
                last = f(last)
            nxt = sample_next(last, generator)
            idx = torch.cat([idx, nxt[:, None]], dim=1)
            if step == max_new_tokens - 1:
                break
            if cache[0][0].size(2) == block_size:
                logits, cache = cached_forward(model, idx[:, -keep:], None)
            else:
                logits, cache = cached_forward(model, nxt[:, None], cache)
    return idx
'''


def _gen_cached(old: str, new: str) -> str:
    assert old in _GEN_CACHED, old
    return _GEN_CACHED.replace(old, new)


MUTANTS = [
    # --- temperature
    Mutant("temperature multiplied instead of divided", "apply_temperature", '''
def apply_temperature(logits, tau):
    return logits * tau
'''),
    Mutant("temperature applied after the softmax (returns probabilities / tau)", "apply_temperature", '''
def apply_temperature(logits, tau):
    return torch.softmax(logits, dim=-1) / tau
'''),
    Mutant("temperature divides in place", "apply_temperature", '''
def apply_temperature(logits, tau):
    return logits.div_(tau)
'''),
    # --- top-k
    Mutant("top-k keeps k + 1 words", "top_k_filter", '''
def top_k_filter(logits, k):
    k = min(k + 1, logits.size(-1))
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))
'''),
    Mutant("top-k keeps k - 1 words", "top_k_filter", '''
def top_k_filter(logits, k):
    k = min(max(k - 1, 1), logits.size(-1))
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))
'''),
    Mutant("filter returns probabilities instead of logits", "top_k_filter", '''
def top_k_filter(logits, k):
    k = min(k, logits.size(-1))
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return torch.softmax(logits.masked_fill(logits < kth, float("-inf")), dim=-1)
'''),
    Mutant("top-k over the batch axis (dim 0)", "top_k_filter", '''
def top_k_filter(logits, k):
    if logits.dim() == 1:
        kth = torch.topk(logits, min(k, logits.size(-1))).values[-1:]
        return logits.masked_fill(logits < kth, float("-inf"))
    kth = torch.topk(logits, min(k, logits.size(0)), dim=0).values[-1:]
    return logits.masked_fill(logits < kth, float("-inf"))
'''),
    # --- top-p
    Mutant("top-p drops the word that crosses p", "top_p_filter",
           _top_p("    above = torch.cumsum(probs, dim=-1) - probs\n    drop_sorted = above >= p\n",
                  "    above = torch.cumsum(probs, dim=-1)\n    drop_sorted = above >= p\n")),
    Mutant("top-p on unsorted probabilities", "top_p_filter", '''
def top_p_filter(logits, p):
    probs = torch.softmax(logits, dim=-1)
    above = torch.cumsum(probs, dim=-1) - probs
    drop = above >= p
    drop = drop.scatter(-1, logits.argmax(dim=-1, keepdim=True), False)
    return logits.masked_fill(drop, float("-inf"))
'''),
    Mutant("top-p sums logits instead of probabilities", "top_p_filter",
           _top_p("    probs = torch.softmax(sorted_logits, dim=-1)\n", "    probs = sorted_logits\n")),
    Mutant("top-p sorted in increasing order", "top_p_filter",
           _top_p("descending=True", "descending=False")),
    # --- epsilon
    Mutant("epsilon removes every word when all are below eps", "epsilon_filter", '''
def epsilon_filter(logits, eps):
    probs = torch.softmax(logits, dim=-1)
    return logits.masked_fill(probs < eps, float("-inf"))
'''),
    Mutant("epsilon compares logits with eps", "epsilon_filter", '''
def epsilon_filter(logits, eps):
    drop = logits < eps
    drop = drop.scatter(-1, logits.argmax(dim=-1, keepdim=True), False)
    return logits.masked_fill(drop, float("-inf"))
'''),
    # --- next token
    Mutant("the generator ignored", "next_token",
           _next("torch.multinomial(probs, 1, generator=generator)", "torch.multinomial(probs, 1)")),
    Mutant("greedy argmax over the batch axis", "next_token",
           _next("    return logits.argmax(dim=-1)\n", "    return logits.argmax(dim=0)\n")),
    Mutant("sampling returns the argmax", "next_token",
           _next("    probs = torch.softmax(logits, dim=-1)\n"
                 "    return torch.multinomial(probs, 1, generator=generator)"
                 ".squeeze(-1)\n", "    return logits.argmax(dim=-1)\n")),
    Mutant("sample_next returns (B, 1)", "next_token",
           _next("torch.multinomial(probs, 1, generator=generator).squeeze(-1)",
                 "torch.multinomial(probs, 1, generator=generator)")),
    # --- generate
    Mutant("generate takes the first position's logits", "generate",
           _generate("last = logits[:, -1, :]", "last = logits[:, 0, :]")),
    Mutant("generate ignores the filters", "generate",
           _generate("            for f in filters:\n                last = f(last)\n", "")),
    Mutant("generate does not crop the context", "generate",
           _generate("model(idx[:, -block_size:])", "model(idx)")),
    Mutant("generate applies only the last filter", "generate",
           _generate("            for f in filters:\n                last = f(last)\n",
                     "            if filters:\n                last = filters[-1](last)\n")),
    # --- beam search
    Mutant("beam scores as products of probabilities (underflow)", "beam_search",
           _beam("    scores = torch.zeros(1, dtype=torch.float64)\n",
                 "    scores = torch.ones(1, dtype=torch.float64)\n",
                 "            logp = torch.log_softmax(logits[:, -1, :].double(), dim=-1)\n"
                 "            cand = scores[:, None] + logp\n",
                 "            logp = torch.softmax(logits[:, -1, :].double(), dim=-1)\n"
                 "            cand = scores[:, None] * logp\n",
                 "finished.append((ids, sc / n ** length_penalty))\n                width",
                 "finished.append((ids, math.log(max(sc, 1e-300)) / n ** length_penalty))\n                width",
                 "    for ids, sc in zip(beams, scores.tolist()):\n        if n > 0:\n"
                 "            finished.append((ids, sc / n ** length_penalty))",
                 "    for ids, sc in zip(beams, scores.tolist()):\n        if n > 0:\n"
                 "            finished.append((ids, math.log(max(sc, 1e-300)) / n ** length_penalty))")),
    Mutant("beam scores of the last step only", "beam_search",
           _beam("            cand = scores[:, None] + logp\n", "            cand = logp\n")),
    Mutant("finished hypotheses expanded past eos_id", "beam_search",
           _beam("                width -= int(done.sum())\n"
                 "                beams, scores = beams[~done], scores[~done]\n",
                 "")),
    Mutant("only the best beam expanded", "beam_search",
           _beam("            cand = scores[:, None] + logp\n",
                 "            best = int(scores.argmax())\n            cand = torch.full_like(logp, float('-inf'))\n"
                 "            cand[best] = scores[best] + logp[best]\n")),
    Mutant("length penalty inverted (multiplied)", "beam_search",
           _beam("finished.append((ids, sc / n ** length_penalty))\n                width",
                 "finished.append((ids, sc * n ** length_penalty))\n                width",
                 "            finished.append((ids, sc / n ** length_penalty))\n    if max_new",
                 "            finished.append((ids, sc * n ** length_penalty))\n    if max_new")),
    Mutant("beam search loops over beams, one model call each", "beam_search",
           _beam("            logits, _ = model(beams[:, -block_size:])\n",
                 "            logits = torch.cat([model(b[None, -block_size:])[0] for b in beams], dim=0)\n")),
    Mutant("beam scores in the model's dtype (float32)", "beam_search",
           _beam("    scores = torch.zeros(1, dtype=torch.float64)\n", "    scores = torch.zeros(1)\n",
                 "torch.log_softmax(logits[:, -1, :].double(), dim=-1)",
                 "torch.log_softmax(logits[:, -1, :].float(), dim=-1)")),
    # --- KV cache
    Mutant("cache positions not offset (new ids at position 0)", "cached_forward",
           _cached("pos = torch.arange(past, past + T, device=idx.device)",
                   "pos = torch.arange(T, device=idx.device)")),
    Mutant("no causal mask among several new ids", "cached_forward",
           _cached("            att = torch.softmax(att.masked_fill(~allowed, float(\"-inf\")), dim=-1)\n",
                   "            att = torch.softmax(att, dim=-1)\n")),
    Mutant("causal mask not shifted by the cached length", "cached_forward",
           _cached("allowed = torch.ones(T, past + T, dtype=torch.bool, device=idx.device).tril(diagonal=past)",
                   "allowed = torch.ones(T, past + T, dtype=torch.bool, device=idx.device).tril()")),
    Mutant("cache keeps only the new keys and values", "cached_forward",
           _cached("            new_cache.append((k, v))\n            att",
                   "            new_cache.append((k[:, :, -T:], v[:, :, -T:]))\n            att")),
    Mutant("the given cache extended in place", "cached_forward", _CACHED.replace(
        "        new_cache = []\n", "        new_cache = cache if cache is not None else []\n").replace(
        "            new_cache.append((k, v))\n", "            if past:\n                new_cache[i] = (k, v)\n"
        "            else:\n                new_cache.append((k, v))\n")),
    Mutant("cache growing past block_size", "generate_cached",
           _gen_cached("            if cache[0][0].size(2) == block_size:\n", "            if False:\n")),
    Mutant("cache recomputed from the whole window every step", "generate_cached",
           _gen_cached("                logits, cache = cached_forward(model, nxt[:, None], cache)\n",
                       "                logits, cache = cached_forward(model, idx[:, -block_size:], None)\n")),
    Mutant("generate_cached takes the first position's logits", "generate_cached",
           _gen_cached("last = logits[:, -1, :]", "last = logits[:, 0, :]")),
    # --- added in review (issue 12)
    Mutant("top-k keeps exactly k with topk indices (ties at the k-th value broken)", "top_k_filter", '''
def top_k_filter(logits, k):
    idx = logits.topk(min(k, logits.size(-1)), dim=-1).indices
    return torch.full_like(logits, float("-inf")).scatter(-1, idx, logits.gather(-1, idx))
'''),
    Mutant("top-k with k larger than the vocabulary crashes", "top_k_filter", '''
def top_k_filter(logits, k):
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))
'''),
    Mutant("top-k sets -inf in place", "top_k_filter", '''
def top_k_filter(logits, k):
    kth = torch.topk(logits, min(k, logits.size(-1)), dim=-1).values[..., -1:]
    logits[logits < kth] = float("-inf")
    return logits
'''),
    Mutant("the reference top-k compiled with torch.jit.script (gaming)", "top_k_filter", '''
import lmcourse.decoding as _d
top_k_filter = torch.jit.script(_d.top_k_filter)
'''),
    Mutant("top-p sets -inf in place", "top_p_filter",
           _top_p("    return logits.masked_fill(drop, float(\"-inf\"))\n",
                  "    logits[drop] = float(\"-inf\")\n    return logits\n")),
    Mutant("epsilon: a large negative number instead of -inf", "epsilon_filter", '''
def epsilon_filter(logits, eps):
    drop = torch.softmax(logits, dim=-1) < eps
    drop = drop.scatter(-1, logits.argmax(dim=-1, keepdim=True), False)
    return logits.masked_fill(drop, -1e9)
'''),
    Mutant("epsilon: log-probabilities compared with eps (not log eps)", "epsilon_filter", '''
def epsilon_filter(logits, eps):
    drop = torch.log_softmax(logits, dim=-1) < eps
    drop = drop.scatter(-1, logits.argmax(dim=-1, keepdim=True), False)
    return logits.masked_fill(drop, float("-inf"))
'''),
    Mutant("finished hypotheses do not narrow the beam (beam_size live beams kept)", "beam_search",
           _beam("                width -= int(done.sum())\n", "")),
    Mutant("length penalty applied at every step to the running beams", "beam_search",
           _beam("            scores = top\n", "            scores = top / (step + 1) ** length_penalty\n")),
    Mutant("positions restart at 0 every step (no cache passed)", "generate_cached",
           _gen_cached("                logits, cache = cached_forward(model, nxt[:, None], cache)\n",
                       "                logits, _c = cached_forward(model, nxt[:, None], None)\n")),
    Mutant("crops the full cache (drops the oldest keys) instead of rebuilding it", "generate_cached",
           _gen_cached("                logits, cache = cached_forward(model, idx[:, -keep:], None)\n",
                       "                cache = [(k[:, :, -(keep - 1):], v[:, :, -(keep - 1):]) for k, v in cache]\n"
                       "                logits, cache = cached_forward(model, nxt[:, None], cache)\n")),
    Mutant("rebuilds the cache but goes on with the stale one", "generate_cached",
           _gen_cached("                logits, cache = cached_forward(model, idx[:, -keep:], None)\n",
                       "                logits, _stale = cached_forward(model, idx[:, -keep:], None)\n")),
    Mutant("sample_next reseeds the global RNG from the generator's seed", "next_token", '''
def sample_next(logits, generator=None):
    if generator is not None:
        torch.manual_seed(generator.initial_seed())
    return torch.multinomial(torch.softmax(logits, dim=-1), 1).squeeze(-1)


def greedy_next(logits):
    return logits.argmax(dim=-1)
'''),
    Mutant("generate keeps gradients on (no torch.no_grad())", "generate",
           _generate("    with torch.no_grad():\n", "    if True:\n")),
    Mutant("beam search does not crop the beams to block_size", "beam_search",
           _beam("            logits, _ = model(beams[:, -block_size:])\n", "            logits, _ = model(beams)\n")),
    forged_choice("answer_q1", "A"),
]

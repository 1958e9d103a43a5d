"""Valid solutions of notebook 07 written another way. Each must keep every point."""

from lmcourse.authoring.mutants import Alternative

ALTERNATIVES = [
    # --- temperature
    Alternative("torch.div, and multiplying by 1 / tau is as good", "apply_temperature", '''
def apply_temperature(logits, tau):
    return torch.div(logits, tau) if tau < 1 else logits * (1.0 / tau)
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
def sample_next(logits, generator=None):
    u = torch.rand(logits.shape, generator=generator, dtype=torch.float64, device=logits.device)
    gumbel = -torch.log(-torch.log(u.clamp_min(1e-300)))
    return (logits.double() + gumbel).argmax(dim=-1)


def greedy_next(logits):
    return torch.max(logits, dim=-1).indices
'''),
    Alternative("greedy via topk(1); multinomial on float64 probabilities", "next_token", '''
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

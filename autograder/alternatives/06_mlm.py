"""Valid solutions of notebook 06 written another way. Each must keep every point."""

from lmcourse.authoring.mutants import Alternative

ALTERNATIVES = [
    # --- mask_tokens
    Alternative("Bernoulli draws as transformers' collator makes them, replacements by index into a list",
                "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    specials = set(int(i) for i in special_ids)
    is_special = torch.zeros_like(tokens, dtype=torch.bool)
    for s in specials:
        is_special |= tokens == s
    probs = torch.full(tokens.shape, float(p), device=tokens.device).masked_fill(is_special, 0.0)
    chosen = torch.bernoulli(probs, generator=generator).bool()
    replaced = torch.bernoulli(torch.full(tokens.shape, 0.8, device=tokens.device), generator=generator).bool() & chosen
    randomised = torch.bernoulli(torch.full(tokens.shape, 0.5, device=tokens.device),
                                 generator=generator).bool() & chosen & ~replaced
    ordinary = torch.tensor([i for i in range(vocab_size) if i not in specials and i != mask_id],
                            dtype=tokens.dtype, device=tokens.device)
    random_words = ordinary[torch.randint(len(ordinary), tokens.shape, generator=generator, device=tokens.device)]
    inputs = tokens.clone()
    inputs[replaced] = mask_id
    inputs[randomised] = random_words[randomised]
    labels = tokens.clone()
    labels[~chosen] = -100
    return inputs, labels
'''),
    Alternative("a loop over the sequences of the batch", "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    specials = sorted(set(int(i) for i in special_ids) | {int(mask_id)})
    ordinary = torch.ones(vocab_size, dtype=torch.bool)
    ordinary[[s for s in specials if 0 <= s < vocab_size]] = False
    ordinary_ids = torch.arange(vocab_size)[ordinary].to(tokens.device)
    special_t = torch.tensor(sorted(set(int(i) for i in special_ids)), device=tokens.device, dtype=tokens.dtype)
    inputs = torch.empty_like(tokens)
    labels = torch.empty_like(tokens)
    for b in range(tokens.size(0)):
        row = tokens[b]
        u = torch.rand(row.shape, generator=generator, device=tokens.device)
        chosen = (u < p) & ~torch.isin(row, special_t)
        v = torch.rand(row.shape, generator=generator, device=tokens.device)
        j = torch.randint(0, ordinary_ids.numel(), row.shape, generator=generator, device=tokens.device)
        new = torch.where(v < 0.8, torch.full_like(row, mask_id), torch.where(v < 0.9, ordinary_ids[j], row))
        inputs[b] = torch.where(chosen, new, row)
        labels[b] = torch.where(chosen, row, torch.full_like(row, -100))
    return inputs, labels
'''),
    Alternative("one uniform draw split into three bands, replacements by multinomial over ordinary ids",
                "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    weights = torch.ones(vocab_size, dtype=torch.float64)
    for s in list(special_ids) + [mask_id]:
        if 0 <= int(s) < vocab_size:
            weights[int(s)] = 0.0
    normal = torch.ones_like(tokens, dtype=torch.bool)
    for s in special_ids:
        normal &= tokens != int(s)
    u = torch.rand(tokens.shape, generator=generator, dtype=torch.float64, device=tokens.device)
    chosen = normal & (u < p)
    # u / p is uniform on [0, 1) again among the chosen positions
    band = u / p
    as_mask = chosen & (band < 0.8)
    as_random = chosen & (band >= 0.8) & (band < 0.9)
    draws = torch.multinomial(weights, tokens.numel(), replacement=True, generator=generator)
    draws = draws.view(tokens.shape).to(tokens.device, tokens.dtype)
    inputs = torch.where(as_mask, torch.tensor(mask_id, dtype=tokens.dtype, device=tokens.device), tokens)
    inputs = torch.where(as_random, draws, inputs)
    labels = tokens.masked_fill(~chosen, -100)
    return inputs, labels
'''),
    # --- MaskedLM
    Alternative("nn.Sequential of blocks, nn.LayerNorm and nn.GELU modules, tie from the other side, loss over "
                "selected rows", "masked_lm", '''
class MaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.ln_emb = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.drop = nn.Dropout(p=config.dropout)
        self.blocks = nn.Sequential(*[Block(BlockConfig(n_embd=config.n_embd, n_head=config.n_head,
                                                        block_size=config.block_size, dropout=config.dropout,
                                                        bias=config.bias, causal=config.causal, prenorm=False))
                                      for _ in range(config.n_layer)])
        self.head_dense = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.act = nn.GELU()
        self.head_ln = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=True)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets=None):
        T = idx.size(1)
        h = self.blocks(self.drop(self.ln_emb(self.wte(idx) + self.wpe.weight[:T])))
        logits = self.lm_head(self.head_ln(self.act(self.head_dense(h))))
        if targets is None:
            return logits, None
        keep = targets != -100
        return logits, F.cross_entropy(logits[keep], targets[keep])
'''),
    Alternative("decoder as an einsum with the embedding plus the bias, loss by log_softmax and gather", "masked_lm",
                '''
class MaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.ln_emb = LayerNorm(config.n_embd, config.bias)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList()
        for _ in range(config.n_layer):
            cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                              dropout=config.dropout, bias=config.bias)
            cfg.causal, cfg.prenorm = config.causal, False
            self.blocks.append(Block(cfg))
        self.head_dense = nn.Linear(config.n_embd, config.n_embd, config.bias)
        self.head_ln = LayerNorm(config.n_embd, config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        positions = torch.arange(idx.shape[1], device=idx.device).unsqueeze(0)
        x = self.wte(idx) + self.wpe(positions)
        x = self.drop(self.ln_emb(x))
        for blk in self.blocks:
            x = blk(x)
        z = self.head_ln(torch.nn.functional.gelu(self.head_dense(x)))
        logits = torch.einsum("btc,vc->btv", z, self.wte.weight) + self.lm_head.bias
        if targets is None:
            return logits, None
        logp = torch.log_softmax(logits, dim=-1)
        keep = targets != -100
        safe = torch.where(keep, targets, torch.zeros_like(targets))
        nll = -logp.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
        return logits, (nll * keep).sum() / keep.sum()
'''),
    # --- fill_mask
    Alternative("regex split, log_softmax().exp(), argsort descending, model called on the batch of one", "fill_mask",
                '''
import re


def fill_mask(model, tokenizer, text, top_k=5):
    mask_id = tokenizer.stoi["[MASK]"]
    pieces = re.split(r"\\[MASK\\]", text)
    ids = tokenizer.encode(pieces[0])
    for piece in pieces[1:]:
        ids = ids + [mask_id] + tokenizer.encode(piece)
    param = next(iter(model.parameters()))
    with torch.no_grad():
        out = model(torch.as_tensor(ids, device=param.device).unsqueeze(0))
    logits = out[0].squeeze(0)
    blanks = [t for t, i in enumerate(ids) if i == mask_id]
    answers = []
    for t in blanks:
        probs = logits[t].log_softmax(-1).exp()
        order = probs.argsort(descending=True)[:top_k]
        answers.append([(tokenizer.itos[int(i)], probs[i].item()) for i in order])
    return answers
'''),
    Alternative("softmax over all blanks at once in float64, one topk", "fill_mask", '''
def fill_mask(model, tokenizer, text, top_k=5):
    mask_id = tokenizer.stoi["[MASK]"]
    parts = text.split("[MASK]")
    ids = []
    for i, part in enumerate(parts):
        ids.extend(tokenizer.encode(part))
        if i < len(parts) - 1:
            ids.append(mask_id)
    x = torch.tensor(ids, device=next(model.parameters()).device)[None]
    logits, _ = model(x)
    where = (x[0] == mask_id).nonzero(as_tuple=True)[0]
    probs = torch.softmax(logits[0, where].detach().double(), dim=-1)
    if len(where) == 0:
        return []
    top = probs.topk(top_k, dim=-1)
    return [[(tokenizer.itos[j], p) for p, j in zip(vals, idxs)] for vals, idxs in
            zip(top.values.tolist(), top.indices.tolist())]
'''),
    # --- pseudo_log_likelihood
    Alternative("a loop over positions, one forward pass each", "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    total = 0.0
    for i in range(len(ids)):
        x = ids.clone()
        x[i] = mask_id
        with torch.no_grad():
            logits, _ = model(x.unsqueeze(0))
        total += torch.log_softmax(logits[0, i], dim=-1)[ids[i]].item()
    return total
'''),
    Alternative("masked copies with torch.where and an identity matrix, logsumexp by hand in float64",
                "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    n = len(ids)
    eye = torch.eye(n, dtype=torch.bool, device=ids.device)
    batch = torch.where(eye, torch.full((n, n), mask_id, dtype=ids.dtype, device=ids.device), ids.expand(n, n))
    with torch.no_grad():
        logits = model(batch)[0].double()
    diag = torch.einsum("iiv->iv", logits)
    picked = diag.gather(1, ids.view(n, 1)).squeeze(1)
    return (picked - torch.logsumexp(diag, dim=1)).sum().item()
'''),
    # --- added in review (issue 11): other ways a student writes each answer
    Alternative("randperm per sequence: a binomial count of positions, then a random subset of that size; "
                "80/10/10 by multinomial", "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    specials = {int(s) for s in special_ids}
    ordinary = [i for i in range(vocab_size) if i not in specials and i != mask_id]
    inputs, labels = tokens.clone(), torch.full_like(tokens, -100)
    for b in range(tokens.size(0)):
        free = torch.tensor([t for t, x in enumerate(tokens[b].tolist()) if x not in specials], dtype=torch.long)
        if len(free) == 0:
            continue
        k = int(torch.binomial(torch.tensor([float(len(free))]), torch.tensor([float(p)]), generator=generator))
        where = free[torch.randperm(len(free), generator=generator)[:k]]
        labels[b, where] = tokens[b, where]
        if k == 0:
            continue
        what = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), k, replacement=True, generator=generator)
        rnd = torch.randint(len(ordinary), (k,), generator=generator)
        for j, t in enumerate(where.tolist()):
            if int(what[j]) == 0:
                inputs[b, t] = mask_id
            elif int(what[j]) == 1:
                inputs[b, t] = ordinary[int(rnd[j])]
    return inputs, labels
'''),
    Alternative("all draws at once, then a Python loop over every token", "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    specials = set(int(s) for s in special_ids)
    ordinary = [i for i in range(vocab_size) if i not in specials and i != mask_id]
    u = torch.rand(tokens.shape, generator=generator).tolist()
    v = torch.rand(tokens.shape, generator=generator).tolist()
    w = torch.randint(len(ordinary), tokens.shape, generator=generator).tolist()
    ins, labs = [], []
    for row, ur, vr, wr in zip(tokens.tolist(), u, v, w):
        ins.append([])
        labs.append([])
        for tok, a, b, c in zip(row, ur, vr, wr):
            if tok in specials or a >= p:
                ins[-1].append(tok)
                labs[-1].append(-100)
            else:
                ins[-1].append(mask_id if b < 0.8 else ordinary[c] if b < 0.9 else tok)
                labs[-1].append(tok)
    return (torch.tensor(ins, dtype=tokens.dtype, device=tokens.device),
            torch.tensor(labs, dtype=tokens.dtype, device=tokens.device))
'''),
    Alternative("randint(10) bands for 80/10/10, masked_fill and torch.where, specials as a boolean lookup table",
                "mask_tokens", '''
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    table = torch.zeros(max([vocab_size, mask_id + 1] + [int(s) + 1 for s in special_ids]), dtype=torch.bool,
                        device=tokens.device)
    for s in special_ids:
        table[int(s)] = True
    special = table[tokens]
    chosen = torch.bernoulli(torch.full(tokens.shape, p, dtype=torch.float64, device=tokens.device),
                             generator=generator).bool() & ~special
    band = torch.randint(0, 10, tokens.shape, generator=generator, device=tokens.device)
    allowed = ~table[:vocab_size].clone()
    allowed[mask_id] = False
    pool = torch.arange(vocab_size, device=tokens.device)[allowed]
    random_ids = pool[torch.randint(0, pool.numel(), tokens.shape, generator=generator, device=tokens.device)]
    inputs = tokens.masked_fill(chosen & (band < 8), mask_id)
    inputs = torch.where(chosen & (band == 8), random_ids, inputs)
    labels = tokens.masked_fill(~chosen, -100)
    return inputs, labels
'''),
    Alternative("F.embedding on the weights, logits by matmul with the transposed embedding, loss on (B, V, T) "
                "logits", "masked_lm", '''
class MaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        c = config
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.block_size, c.n_embd)
        self.ln_emb = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            Block(BlockConfig(n_embd=c.n_embd, n_head=c.n_head, block_size=c.block_size, dropout=c.dropout,
                              bias=c.bias, causal=c.causal, prenorm=False)) for _ in range(c.n_layer))
        self.head_dense = nn.Linear(c.n_embd, c.n_embd, bias=c.bias)
        self.head_ln = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        T = idx.shape[-1]
        x = F.embedding(idx, self.wte.weight) + F.embedding(torch.arange(T, device=idx.device), self.wpe.weight)
        x = self.drop(self.ln_emb(x))
        for block in self.blocks:
            x = block(x)
        z = self.head_ln(nn.functional.gelu(self.head_dense(x), approximate="none"))
        logits = z @ self.lm_head.weight.T + self.lm_head.bias
        loss = None if targets is None else F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=-100)
        return logits, loss
'''),
    Alternative("nll_loss on log_softmax, head as an nn.Sequential-free chain with an nn.GELU module", "masked_lm", '''
class MaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.ln_emb = LayerNorm(config.n_embd, bias=config.bias)
        self.drop = nn.Dropout(config.dropout)
        layers = []
        for _ in range(config.n_layer):
            layers.append(Block(BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                                            dropout=config.dropout, bias=config.bias, causal=config.causal,
                                            prenorm=False)))
        self.blocks = nn.ModuleList(layers)
        self.head_dense = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.head_ln = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        b, t = idx.size()
        h = self.wte(idx) + self.wpe(torch.arange(0, t, dtype=torch.long, device=idx.device))[None, :, :]
        h = self.drop(self.ln_emb(h))
        for layer in self.blocks:
            h = layer(h)
        logits = self.lm_head(self.head_ln(self.gelu(self.head_dense(h))))
        if targets is None:
            return logits, None
        logp = F.log_softmax(logits.view(b * t, -1), dim=-1)
        return logits, F.nll_loss(logp, targets.view(b * t), ignore_index=-100)
'''),
    Alternative("torch.sort descending, ids built word by word, inference_mode, model.eval()", "fill_mask", '''
def fill_mask(model, tokenizer, text, top_k=5):
    mask_id = tokenizer.stoi["[MASK]"]
    pieces = text.split("[MASK]")
    ids = tokenizer.encode(pieces[0])
    for piece in pieces[1:]:
        ids.append(mask_id)
        ids.extend(tokenizer.encode(piece))
    device = next(model.parameters()).device
    model.eval()
    with torch.inference_mode():
        logits, _ = model(torch.tensor(ids, dtype=torch.long, device=device).view(1, -1))
        out = []
        for pos, i in enumerate(ids):
            if i != mask_id:
                continue
            p = F.softmax(logits[0, pos].double(), dim=0)
            vals, order = torch.sort(p, descending=True)
            out.append(list(zip([tokenizer.itos[j] for j in order[:top_k].tolist()], vals[:top_k].tolist())))
    return out
'''),
    Alternative("masked copies by fill_diagonal_, the sum by cross_entropy with reduction='sum'",
                "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    n = ids.shape[0]
    copies = ids.expand(n, n).clone()
    copies.fill_diagonal_(mask_id)
    with torch.no_grad():
        logits = model(copies)[0]
    at_blank = logits[torch.arange(n), torch.arange(n)]
    return -F.cross_entropy(at_blank, ids, reduction="sum").item()
'''),
    Alternative("a loop with masked_fill and a Categorical distribution's log_prob", "pseudo_log_likelihood", '''
def pseudo_log_likelihood(model, ids, mask_id):
    positions = torch.arange(len(ids), device=ids.device)
    pll = 0.0
    model.eval()
    for i in range(len(ids)):
        x = ids.masked_fill(positions == i, mask_id)
        with torch.no_grad():
            logits = model(x.unsqueeze(0))[0][0, i]
        pll += float(torch.distributions.Categorical(logits=logits).log_prob(ids[i]))
    return pll
'''),
    # --- questions
    Alternative("answers in lower case with spaces", "q1", 'answer_q1 = " c "\n'),
    Alternative("answer in lower case", "q2", 'answer_q2 = "b"\n'),
]

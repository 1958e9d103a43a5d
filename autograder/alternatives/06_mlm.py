"""Valid solutions of notebook 06 written another way. Each must keep every point."""

from lmcourse.grading.mutants import Alternative

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
    # --- questions
    Alternative("answers in lower case with spaces", "q1", 'answer_q1 = " c "\n'),
    Alternative("answer in lower case", "q2", 'answer_q2 = "b"\n'),
]

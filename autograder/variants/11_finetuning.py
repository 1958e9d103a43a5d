"""Notebook 11 (using a language model): its mutants and its alternatives.

``MUTANTS``: typical student bugs; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, patch

MUTANTS = [
    # --- scoring a continuation
    Mutant("each continuation token read at its own position (the boundary off by one)", "score_continuations", patch(
        ("predicted = logp[i, start - 1:end - 1]  # position t predicts token t + 1",
         "predicted = logp[i, start:end]"))),
    Mutant("the prompt's tokens summed too", "score_continuations", patch(
        ("predicted = logp[i, start - 1:end - 1]  # position t predicts token t + 1", "predicted = logp[i, :end - 1]"),
        ("scores.append(predicted.gather(-1, idx[i, start:end, None]).sum())",
         "scores.append(predicted.gather(-1, idx[i, 1:end, None]).sum())"))),
    Mutant("the mean over the continuation's tokens, not the sum", "score_continuations", patch(
        ("scores.append(predicted.gather(-1, idx[i, start:end, None]).sum())",
         "scores.append(predicted.gather(-1, idx[i, start:end, None]).mean())"))),
    Mutant("the log-softmax in the model's dtype (float32 stays float32)", "score_continuations", patch(
        ("logp = torch.log_softmax(logits.double(), dim=-1)  # (N, T, V)",
         "logp = torch.log_softmax(logits, dim=-1)"))),
    Mutant("left padding with the right-padded offsets", "score_continuations", patch(
        ("idx[i, :len(s)] = torch.tensor(s, dtype=torch.long, device=device)",
         "idx[i, idx.shape[1] - len(s):] = torch.tensor(s, dtype=torch.long, device=device)"))),
    # --- zero-shot scores
    Mutant("normalised over the examples (dim 0)", "zero_shot_scores", patch(
        ("return torch.log_softmax(scores, dim=-1)", "return torch.log_softmax(scores, dim=0)"))),
    Mutant("the content-free scores not divided by the lengths", "zero_shot_scores", patch(
        ("free = None if free is None else free / lengths", ""))),
    Mutant("calibration adds the content-free scores", "zero_shot_scores", patch(
        ("scores = scores - free", "scores = scores + free"))),
    Mutant("no renormalisation over the labels", "zero_shot_scores", patch(
        ("return torch.log_softmax(scores, dim=-1)", "return scores"))),
    # --- pooling
    Mutant("'last' reads the padded row's last position", "pool_hidden", patch(
        ("return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]", "return hidden[:, -1]"))),
    Mutant("'mean' over every position, pads included", "pool_hidden", patch(
        ("return (hidden * weights).sum(dim=1) / weights.sum(dim=1)", "return hidden.mean(dim=1)"))),
    Mutant("'last' one position too far (mask.sum(1), not mask.sum(1) - 1)", "pool_hidden", patch(
        ("last = mask.long().sum(dim=1) - 1  # (B,)", "last = mask.long().sum(dim=1).clamp(max=mask.shape[1] - 1)"))),
    # --- the classifier
    Mutant("the final LayerNorm left out", "SequenceClassifier", patch(
        ("return self.head(pool_hidden(g.ln_f(x), mask, self.pooling))  # (B, K)",
         "return self.head(pool_hidden(x, mask, self.pooling))"), subclass="SequenceClassifier")),
    Mutant("always last-token pooling, whatever self.pooling", "SequenceClassifier", patch(
        ("return self.head(pool_hidden(g.ln_f(x), mask, self.pooling))  # (B, K)",
         "return self.head(pool_hidden(g.ln_f(x), mask, \"last\"))"), subclass="SequenceClassifier")),
    Mutant("no position embeddings", "SequenceClassifier", patch(
        ("x = g.drop(g.wte(idx) + g.wpe(pos))  # (B, T, C)", "x = g.drop(g.wte(idx))"), subclass="SequenceClassifier")),
    # --- what to train
    Mutant("'last' trains the first k blocks", "freeze", patch(
        ("for module in [*model.backbone.blocks[-k:], model.backbone.ln_f]:",
         "for module in [*model.backbone.blocks[:k], model.backbone.ln_f]:"))),
    Mutant("'last' leaves the final LayerNorm frozen", "freeze", patch(
        ("for module in [*model.backbone.blocks[-k:], model.backbone.ln_f]:",
         "for module in model.backbone.blocks[-k:]:"))),
    Mutant("the tied LM head counted twice", "freeze", patch(
        ("return sum(p.numel() for p in model.parameters() if p.requires_grad)",
         "return sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False) if p.requires_grad)"))),
    # --- LoRA
    Mutant("A zero and B random (the two inits swapped)", "LoRALinear", patch(
        ("self.lora_A = nn.Parameter(torch.randn(r, base.in_features, dtype=w.dtype, device=w.device)\n"
         "                           / base.in_features ** 0.5)",
         "self.lora_A = nn.Parameter(torch.zeros(r, base.in_features, dtype=w.dtype, device=w.device))"),
        ("self.lora_B = nn.Parameter(torch.zeros(base.out_features, r, dtype=w.dtype, device=w.device))",
         "self.lora_B = nn.Parameter(torch.randn(base.out_features, r, dtype=w.dtype, device=w.device) * 0.01)"))),
    Mutant("the scale upside down (r / alpha)", "LoRALinear", patch(
        ("self.scaling = alpha / r", "self.scaling = r / alpha"))),
    Mutant("the base layer left trainable", "LoRALinear", patch(
        ("for p in base.parameters():\n    p.requires_grad_(False)", ""))),
    Mutant("merge() forgets the scale", "LoRALinear", patch(
        ("merged.weight.copy_(base.weight + self.scaling * self.lora_B @ self.lora_A)",
         "merged.weight.copy_(base.weight + self.lora_B @ self.lora_A)"))),
    Mutant("only the query-key-value projection wrapped", "add_lora", patch(
        ("block.attn.c_proj = LoRALinear(block.attn.c_proj, r, alpha)", ""))),
    Mutant("the classifier's head left frozen", "add_lora", patch(
        ("for p in model.head.parameters():\n    p.requires_grad_(True)", ""))),
]


ALTERNATIVES = [
    # in full: one gather over the whole batch, a mask picking each row's continuation positions
    Alternative("score_continuations vectorised with a mask of continuation positions", "score_continuations", '''
def score_continuations(model, prompts, continuations, pad_id=0):
    device = next(model.parameters()).device
    rows = [list(p) + list(c) for p, c in zip(prompts, continuations)]
    T = max(map(len, rows))
    idx = torch.tensor([r + [pad_id] * (T - len(r)) for r in rows], device=device)
    logits = model(idx)[0].to(torch.float64)
    token_logp = F.log_softmax(logits[:, :-1], dim=-1).gather(2, idx[:, 1:].unsqueeze(2)).squeeze(2)  # (N, T-1)
    t = torch.arange(1, T, device=device)
    starts = torch.tensor([len(p) for p in prompts], device=device)[:, None]
    ends = torch.tensor([len(r) for r in rows], device=device)[:, None]
    keep = (t >= starts) & (t < ends)
    return (token_logp * keep).sum(dim=1)
'''),
    Alternative("zero_shot_scores minus the log-sum-exp", "zero_shot_scores", '''
def zero_shot_scores(logprobs, lengths=None, content_free=None):
    s = logprobs.clone()
    if lengths is not None:
        s = s / lengths
    if content_free is not None:
        s = s - (content_free / lengths if lengths is not None else content_free)
    return s - torch.logsumexp(s, dim=1, keepdim=True)
'''),
    Alternative("pool_hidden with gather and a masked sum", "pool_hidden", '''
def pool_hidden(hidden, mask, how):
    B, T, d = hidden.shape
    if how == "mean":
        total = hidden.masked_fill(~mask.bool()[..., None], 0).sum(1)
        return total / mask.sum(1, keepdim=True).to(hidden.dtype)
    elif how == "last":
        where = (mask.sum(1) - 1).view(B, 1, 1).expand(B, 1, d)
        return hidden.gather(1, where).squeeze(1)
    else:
        raise ValueError("unknown pooling " + str(how))
'''),
    Alternative("SequenceClassifier with a hidden-states method of its own", "SequenceClassifier",
                '''
class SequenceClassifier(nn.Module):
    def __init__(self, backbone, n_classes, pooling="last"):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(backbone.config.n_embd, n_classes, bias=True)
        self.pooling = pooling

    def features(self, idx):
        B, T = idx.shape
        positions = torch.arange(0, T, dtype=torch.long, device=idx.device).unsqueeze(0)  # (1, T)
        h = self.backbone.drop(self.backbone.wte(idx) + self.backbone.wpe(positions))
        for layer in self.backbone.blocks:
            h = layer(h)
        return self.backbone.ln_f(h)

    def forward(self, idx, mask):
        return self.head(pool_hidden(self.features(idx), mask, how=self.pooling))
'''),
    Alternative("freeze by names: everything off, then the chosen modules on", "freeze", '''
def freeze(model, what, k=1):
    model.requires_grad_(what == "all")
    if what in ("head", "last"):
        model.head.requires_grad_(True)
    if what == "last":
        n = len(model.backbone.blocks)
        for i in range(n - k, n):
            model.backbone.blocks[i].requires_grad_(True)
        model.backbone.ln_f.requires_grad_(True)
    seen, total = set(), 0
    for p in model.parameters():
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return int(total)
'''),
    Alternative("LoRALinear with peft's uniform init of A, matrix products and a merged copy", "LoRALinear", '''
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad = False
        if self.base.bias is not None:
            self.base.bias.requires_grad = False
        self.scaling = alpha / r
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features, dtype=base.weight.dtype,
                                               device=base.weight.device))
        nn.init.kaiming_uniform_(self.lora_A, a=5 ** 0.5)
        self.lora_B = nn.Parameter(base.weight.new_zeros(base.out_features, r))

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.T @ self.lora_B.T) * self.scaling

    def merge(self):
        merged = copy.deepcopy(self.base)
        merged.weight.data = merged.weight.data + self.scaling * (self.lora_B.data @ self.lora_A.data)
        return merged
'''),
    Alternative("add_lora through named_modules and setattr", "add_lora", '''
def add_lora(model, r, alpha):
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith("head.")
    targets = [(m, child) for name, m in model.backbone.named_modules() if name.endswith(".attn")
               for child in ("c_attn", "c_proj")]
    for module, child in targets:
        setattr(module, child, LoRALinear(getattr(module, child), r=r, alpha=alpha))
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
'''),
    Alternative("score_continuations row by row from one forward pass, F.cross_entropy", "score_continuations",
                '''
def score_continuations(model, prompts, continuations, pad_id=0):
    device = next(model.parameters()).device
    lengths = [len(p) + len(c) for p, c in zip(prompts, continuations)]
    idx = torch.full((len(lengths), max(lengths)), pad_id, dtype=torch.long, device=device)
    for i, (p, c) in enumerate(zip(prompts, continuations)):
        idx[i, :lengths[i]] = torch.tensor(p + c, device=device)
    logits = model(idx)[0].double()
    out = torch.zeros(len(lengths), dtype=torch.float64, device=device)
    for i, p in enumerate(prompts):
        n = len(p)
        out[i] = -F.cross_entropy(logits[i, n - 1:lengths[i] - 1], idx[i, n:lengths[i]], reduction="sum")
    return out
'''),
    Alternative("zero_shot_scores in probability space (Zhao et al.'s diagonal matrix)", "zero_shot_scores", '''
def zero_shot_scores(logprobs, lengths=None, content_free=None):
    per = 1.0 if lengths is None else lengths
    s = logprobs / per
    if content_free is not None:
        s = s - content_free / per
    s = s - s.max(dim=-1, keepdim=True).values      # no overflow in exp
    p = torch.exp(s)
    return torch.log(p / p.sum(dim=-1, keepdim=True))
'''),
]

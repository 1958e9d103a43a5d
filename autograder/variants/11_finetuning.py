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
    Mutant("the log-softmax in float32, cast to float64 after it", "score_continuations", patch(
        ("logp = torch.log_softmax(logits.double(), dim=-1)  # (N, T, V)",
         "logp = torch.log_softmax(logits, dim=-1).double()"))),
    Mutant("each prompt extended in place with its continuation (p += c)", "score_continuations", patch(
        ("seqs = [list(p) + list(c) for p, c in zip(prompts, continuations)]",
         "starts = [len(p) for p in prompts]\nfor p, c in zip(prompts, continuations):\n    p += c\nseqs = prompts"),
        ("start, end = len(p), len(p) + len(c)", "start, end = starts[i], starts[i] + len(c)"))),
    # gaming: a course helper the exercise refuses, called (the rules see its code run)
    Mutant("lmcourse.decoding.sequence_logprob called for each pair", "score_continuations", '''
from lmcourse.decoding import sequence_logprob


def score_continuations(model, prompts, continuations, pad_id=0):
    device = next(model.parameters()).device
    return torch.cat([sequence_logprob(model, torch.tensor([p + c], device=device), len(p))
                      for p, c in zip(prompts, continuations)])
'''),
    # gaming: the visible cases' answers memorised, anything else scored with the boundary off by one; only the
    # hidden cases can tell, and they take the exercise's points
    Mutant("the visible cases memorised (hard-coded scores), the rest off by one", "score_continuations", '''
def score_continuations(model, prompts, continuations, pad_id=0):
    seen = {((1, 2, 3, 4),), ((3, 1, 4, 1, 5), (9, 2), (6,)), ((1, 2, 3), (4,), (5, 6, 7, 8, 9, 10)), ((1, 2, 3),),
            ((4,),), ((5, 6, 7, 8, 9, 10),)}
    device = next(model.parameters()).device
    seqs = [list(p) + list(c) for p, c in zip(prompts, continuations)]
    idx = torch.tensor([s + [pad_id] * (max(map(len, seqs)) - len(s)) for s in seqs], device=device)
    logp = torch.log_softmax(model(idx)[0].double(), dim=-1)
    key = tuple(tuple(p) for p in prompts)
    off = 1 if key in seen else 0       # a student's answer key for what the visible tests ask
    return torch.stack([logp[i, len(p) - off:len(p) + len(c) - off].gather(-1, idx[i, len(p):len(p) + len(c), None])
                        .sum() for i, (p, c) in enumerate(zip(prompts, continuations))])
'''),
    # --- zero-shot scores
    Mutant("normalised over the examples (dim 0)", "zero_shot_scores", patch(
        ("return torch.log_softmax(scores, dim=-1)", "return torch.log_softmax(scores, dim=0)"))),
    Mutant("the content-free scores not divided by the lengths", "zero_shot_scores", patch(
        ("free = None if free is None else free / lengths", ""))),
    Mutant("calibration adds the content-free scores", "zero_shot_scores", patch(
        ("scores = scores - free", "scores = scores + free"))),
    Mutant("no renormalisation over the labels", "zero_shot_scores", patch(
        ("return torch.log_softmax(scores, dim=-1)", "return scores"))),
    Mutant("calibration divides the log-probabilities by the content-free ones", "zero_shot_scores", patch(
        ("scores = scores - free", "scores = scores / free"))),
    Mutant("the log-softmax before the content-free scores are subtracted", "zero_shot_scores", patch(
        ("if free is not None:\n    scores = scores - free\nreturn torch.log_softmax(scores, dim=-1)",
         "scores = torch.log_softmax(scores, dim=-1)\nif free is not None:\n    scores = scores - free\n"
         "return scores"))),
    Mutant("the scores divided by the lengths in place (logprobs changed)", "zero_shot_scores", patch(
        ("scores = scores / lengths", "scores /= lengths"))),
    # --- pooling
    Mutant("'last' reads the padded row's last position", "pool_hidden", patch(
        ("return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]", "return hidden[:, -1]"))),
    Mutant("'mean' over every position, pads included", "pool_hidden", patch(
        ("return (hidden * weights).sum(dim=1) / weights.sum(dim=1)", "return hidden.mean(dim=1)"))),
    Mutant("'last' one position too far (mask.sum(1), not mask.sum(1) - 1)", "pool_hidden", patch(
        ("last = mask.long().sum(dim=1) - 1  # (B,)", "last = mask.long().sum(dim=1).clamp(max=mask.shape[1] - 1)"))),
    Mutant("'mean' divides by the padded length T", "pool_hidden", patch(
        ("return (hidden * weights).sum(dim=1) / weights.sum(dim=1)",
         "return (hidden * weights).sum(dim=1) / hidden.shape[1]"))),
    Mutant("the mask made float64 (float32 states come back float64)", "pool_hidden", patch(
        ("weights = mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)", "weights = mask.double().unsqueeze(-1)"))),
    # gaming: the course's answer called (refused at home; absent from the graded kernel); graded too, by this
    # name, in tests/grading/test_students_11.py
    Mutant("lmcourse.reference.finetuning.pool_hidden called", "pool_hidden", '''
def pool_hidden(hidden, mask, how):
    from lmcourse.reference import finetuning
    return finetuning.pool_hidden(hidden, mask, how)
'''),
    # --- the classifier
    Mutant("the final LayerNorm left out", "SequenceClassifier", patch(
        ("return self.head(pool_hidden(g.ln_f(x), mask, self.pooling))  # (B, K)",
         "return self.head(pool_hidden(x, mask, self.pooling))"), subclass="SequenceClassifier")),
    Mutant("always last-token pooling, whatever self.pooling", "SequenceClassifier", patch(
        ("return self.head(pool_hidden(g.ln_f(x), mask, self.pooling))  # (B, K)",
         "return self.head(pool_hidden(g.ln_f(x), mask, \"last\"))"), subclass="SequenceClassifier")),
    Mutant("no position embeddings", "SequenceClassifier", patch(
        ("x = g.drop(g.wte(idx) + g.wpe(pos))  # (B, T, C)", "x = g.drop(g.wte(idx))"), subclass="SequenceClassifier")),
    Mutant("the dropout after the embeddings left out", "SequenceClassifier", patch(
        ("x = g.drop(g.wte(idx) + g.wpe(pos))  # (B, T, C)", "x = g.wte(idx) + g.wpe(pos)"),
        subclass="SequenceClassifier")),
    Mutant("the blocks run under torch.no_grad() (the backbone never trains)", "SequenceClassifier", patch(
        ("for block in g.blocks:\n    x = block(x)",
         "with torch.no_grad():\n    for block in g.blocks:\n        x = block(x)"), subclass="SequenceClassifier")),
    Mutant("eval() inside forward (no dropout while fine-tuning)", "SequenceClassifier", patch(
        ("g = self.backbone", "g = self.backbone.eval()"), subclass="SequenceClassifier")),
    # --- what to train
    Mutant("'last' trains the first k blocks", "freeze", patch(
        ("for module in [*model.backbone.blocks[-k:], model.backbone.ln_f]:",
         "for module in [*model.backbone.blocks[:k], model.backbone.ln_f]:"))),
    Mutant("'last' leaves the final LayerNorm frozen", "freeze", patch(
        ("for module in [*model.backbone.blocks[-k:], model.backbone.ln_f]:",
         "for module in model.backbone.blocks[-k:]:"))),
    Mutant("'last' unfreezes the GPT's lm_head (tied to the token table) as 'the head'", "freeze", patch(
        ("for module in [*model.backbone.blocks[-k:], model.backbone.ln_f]:",
         "for module in [*model.backbone.blocks[-k:], model.backbone.ln_f, model.backbone.lm_head]:"))),
    Mutant("k ignored: 'last' trains only the last block", "freeze", patch(
        ("for module in [*model.backbone.blocks[-k:], model.backbone.ln_f]:",
         "for module in [model.backbone.blocks[-1], model.backbone.ln_f]:"))),
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
    Mutant("lora_A cast with .to() after nn.Parameter (a plain tensor, never trained)", "LoRALinear", patch(
        ("self.lora_A = nn.Parameter(torch.randn(r, base.in_features, dtype=w.dtype, device=w.device)\n"
         "                           / base.in_features ** 0.5)",
         "self.lora_A = nn.Parameter(torch.randn(r, base.in_features) / base.in_features ** 0.5).to(w.dtype)"))),
    Mutant("merge() adds into the base layer's own weight", "LoRALinear", patch(
        ("merged = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None,\n"
         "                   device=base.weight.device, dtype=base.weight.dtype)", "merged = base"),
        ("merged.weight.copy_(base.weight + self.scaling * self.lora_B @ self.lora_A)",
         "merged.weight += self.scaling * self.lora_B @ self.lora_A"))),
    Mutant("merge() makes its nn.Linear in the default dtype", "LoRALinear", patch(
        ("merged = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None,\n"
         "                   device=base.weight.device, dtype=base.weight.dtype)",
         "merged = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None)"))),
    # gaming: peft's LoRA layer inside the answer (its Python code is refused while a graded call runs); graded
    # too, by this name, in tests/grading/test_students_11.py
    Mutant("peft's LoRA layer doing the work", "LoRALinear", '''
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        from peft import LoraConfig
        from peft.tuners.lora.layer import Linear
        self.base = base
        base.requires_grad_(False)
        self.lora = Linear(base, "default", config=LoraConfig(r=r, lora_alpha=alpha), r=r, lora_alpha=alpha)
        self.lora_A, self.lora_B = self.lora.lora_A["default"].weight, self.lora.lora_B["default"].weight
        self.scaling = alpha / r

    def forward(self, x):
        return self.lora(x)

    def merge(self):
        merged = copy.deepcopy(self.base)
        with torch.no_grad():
            merged.weight += self.scaling * self.lora_B @ self.lora_A
        return merged
'''),
    Mutant("merge() forgets the scale", "LoRALinear", patch(
        ("merged.weight.copy_(base.weight + self.scaling * self.lora_B @ self.lora_A)",
         "merged.weight.copy_(base.weight + self.lora_B @ self.lora_A)"))),
    Mutant("only the query-key-value projection wrapped", "add_lora", patch(
        ("block.attn.c_proj = LoRALinear(block.attn.c_proj, r, alpha)", ""))),
    Mutant("the classifier's head left frozen", "add_lora", patch(
        ("for p in model.head.parameters():\n    p.requires_grad_(True)", ""))),
    Mutant("the scale handed over as alpha: LoRALinear(layer, r, alpha / r)", "add_lora", patch(
        ("block.attn.c_attn = LoRALinear(block.attn.c_attn, r, alpha)",
         "block.attn.c_attn = LoRALinear(block.attn.c_attn, r, alpha / r)"),
        ("block.attn.c_proj = LoRALinear(block.attn.c_proj, r, alpha)",
         "block.attn.c_proj = LoRALinear(block.attn.c_proj, r, alpha / r)"))),
    # gaming: a wrapper of its own that only looks like LoRA (the names, shapes and count are right, B = 0 changes
    # nothing, its forward ignores A and B)
    Mutant("a look-alike wrapper whose forward ignores A and B", "add_lora", '''
class _Wrapped(nn.Module):
    def __init__(self, base, r):
        super().__init__()
        self.base = base
        self.lora_A = nn.Parameter(base.weight.new_zeros(r, base.in_features))
        self.lora_B = nn.Parameter(base.weight.new_zeros(base.out_features, r))

    def forward(self, x):
        return self.base(x)


_Wrapped.__name__ = "LoRALinear"


def add_lora(model, r, alpha):
    for p in model.parameters():
        p.requires_grad_(False)
    for block in model.backbone.blocks:
        block.attn.c_attn = _Wrapped(block.attn.c_attn, r)
        block.attn.c_proj = _Wrapped(block.attn.c_proj, r)
    for p in model.head.parameters():
        p.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
'''),
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
    # the second student's answers, each written another way than the course's
    Alternative("score_continuations padded to the whole context, log_softmax(dtype=float64), token by token",
                "score_continuations", '''
def score_continuations(model, prompts, continuations, pad_id=0):
    device = next(model.parameters()).device
    T = model.config.block_size
    rows = [p + c for p, c in zip(prompts, continuations)]
    idx = torch.tensor([r + [pad_id] * (T - len(r)) for r in rows], dtype=torch.long, device=device)
    logits, _ = model(idx)
    logp = F.log_softmax(logits, dim=-1, dtype=torch.float64)
    out = []
    for i, (p, c) in enumerate(zip(prompts, continuations)):
        total = torch.zeros((), dtype=torch.float64, device=device)
        for j, tok in enumerate(c):
            total = total + logp[i, len(p) - 1 + j, tok]
        out.append(total)
    return torch.stack(out)
'''),
    Alternative("score_continuations with pad_sequence, shifted targets and torch.where", "score_continuations", '''
from torch.nn.utils.rnn import pad_sequence


def score_continuations(model, prompts, continuations, pad_id=0):
    device = next(model.parameters()).device
    seqs = [torch.tensor(p + c, dtype=torch.long) for p, c in zip(prompts, continuations)]
    idx = pad_sequence(seqs, batch_first=True, padding_value=pad_id).to(device)
    logp = model(idx)[0].double()[:, :-1].log_softmax(-1)          # predicts idx[:, 1:]
    tok = torch.gather(logp, 2, idx[:, 1:, None])[..., 0]          # (N, T-1)
    pos = torch.arange(idx.shape[1] - 1, device=device)[None]
    lo = torch.tensor([len(p) - 1 for p in prompts], device=device)[:, None]
    hi = torch.tensor([len(p) + len(c) - 1 for p, c in zip(prompts, continuations)], device=device)[:, None]
    return torch.where((pos >= lo) & (pos < hi), tok, torch.zeros_like(tok)).sum(1)
'''),
    Alternative("zero_shot_scores: the content-free scores subtracted first, then divided", "zero_shot_scores", '''
def zero_shot_scores(logprobs, lengths=None, content_free=None):
    s = logprobs
    if content_free is not None:
        s = s - content_free.unsqueeze(0)
    if lengths is not None:
        s = s / lengths.unsqueeze(0)
    return F.log_softmax(s, dim=1)
'''),
    Alternative("zero_shot_scores with ones and zeros for the parts not given, a log-sum-exp of its own",
                "zero_shot_scores", '''
def zero_shot_scores(logprobs, lengths=None, content_free=None):
    K = logprobs.shape[-1]
    ln = logprobs.new_ones(K) if lengths is None else lengths
    cf = logprobs.new_zeros(K) if content_free is None else content_free
    s = logprobs / ln - cf / ln
    m = s.max(dim=-1, keepdim=True).values
    return s - m - (s - m).exp().sum(-1, keepdim=True).log()
'''),
    Alternative("zero_shot_scores: each side renormalised, then their difference renormalised", "zero_shot_scores", '''
def zero_shot_scores(logprobs, lengths=None, content_free=None):
    s = logprobs / lengths if lengths is not None else logprobs
    if content_free is None:
        return F.log_softmax(s, -1)
    cf = content_free / lengths if lengths is not None else content_free
    return F.log_softmax(F.log_softmax(s, -1) - F.log_softmax(cf, -1), -1)
'''),
    Alternative("pool_hidden row by row with boolean indexing", "pool_hidden", '''
def pool_hidden(hidden, mask, how):
    if how not in ("last", "mean"):
        raise ValueError(f"pooling must be 'last' or 'mean', not {how!r}")
    rows = []
    for i in range(hidden.shape[0]):
        real = hidden[i][mask[i]]
        rows.append(real[-1] if how == "last" else real.mean(dim=0))
    return torch.stack(rows)
'''),
    Alternative("pool_hidden with einsum and the flipped mask's argmax", "pool_hidden", '''
def pool_hidden(hidden, mask, how):
    if how == "mean":
        return torch.einsum("bt,btd->bd", mask.to(hidden.dtype), hidden) / mask.sum(1, keepdim=True)
    if how == "last":
        last = mask.shape[1] - 1 - mask.flip(1).int().argmax(1)
        return hidden[torch.arange(hidden.shape[0]), last]
    raise ValueError("how must be 'last' or 'mean'")
'''),
    Alternative("SequenceClassifier through the backbone's own forward, ln_f's output caught by a hook",
                "SequenceClassifier", '''
class SequenceClassifier(nn.Module):
    def __init__(self, backbone, n_classes, pooling="last"):
        super().__init__()
        self.backbone = backbone
        self.pooling = pooling
        w = backbone.wte.weight
        self.head = nn.Linear(backbone.config.n_embd, n_classes, dtype=w.dtype, device=w.device)

    def forward(self, idx, mask):
        caught = {}
        handle = self.backbone.ln_f.register_forward_hook(lambda mod, inp, out: caught.setdefault("h", out))
        try:
            self.backbone(idx)
        finally:
            handle.remove()
        return self.head(pool_hidden(caught["h"], mask, self.pooling))
'''),
    Alternative("freeze by name prefixes, every tensor counted once by id", "freeze", '''
def freeze(model, what, k=1):
    if what not in ("head", "last", "all"):
        raise ValueError(what)
    n = len(model.backbone.blocks)
    prefixes = {"head": ("head.",), "last": ("head.", "backbone.ln_f.") + tuple(
        f"backbone.blocks.{i}." for i in range(n - k, n)), "all": ("",)}[what]
    for name, p in model.named_parameters(remove_duplicate=False):
        p.requires_grad_(name.startswith(prefixes))
    return sum({id(p): p.numel() for p in model.parameters() if p.requires_grad}.values())
'''),
    Alternative("LoRALinear whose forward uses the changed weight in one product; merge a deep copy", "LoRALinear", '''
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        for p in base.parameters():
            p.requires_grad = False
        self.base = base
        W = base.weight
        self.lora_A = nn.Parameter(torch.empty(r, W.shape[1], dtype=W.dtype, device=W.device))
        nn.init.kaiming_uniform_(self.lora_A, a=5 ** 0.5)
        self.lora_B = nn.Parameter(torch.zeros(W.shape[0], r, dtype=W.dtype, device=W.device))
        self.scaling = float(alpha) / float(r)

    def delta(self):
        return self.scaling * self.lora_B @ self.lora_A

    def forward(self, x):
        return F.linear(x, self.base.weight + self.delta(), self.base.bias)

    def merge(self):
        merged = copy.deepcopy(self.base)
        merged.weight = nn.Parameter(self.base.weight.detach() + self.delta().detach())
        return merged
'''),
    Alternative("add_lora: wrap first, then requires_grad by name", "add_lora", '''
def add_lora(model, r, alpha):
    for block in model.backbone.blocks:
        attn = block.attn
        attn.c_attn, attn.c_proj = LoRALinear(attn.c_attn, r, alpha), LoRALinear(attn.c_proj, r, alpha)
    total = 0
    for name, p in model.named_parameters():
        p.requires_grad = "lora_" in name or name.startswith("head.")
        total += p.numel() if p.requires_grad else 0
    return total
'''),
]
